/*
 * rt_json_params.c — the limits a request body is read under by default
 * (rt_json_default_params): instances per request, nesting depth, instances
 * per :explain. The reader (rt_jr.c) and the body parsers read them from
 * the rt_json_params their caller passes; this file calls nothing.
 */
#include "rt_serve.h"

rt_json_params rt_json_default_params(void)
{
    rt_json_params p = {.max_instances = 100000, .max_depth = 64, .max_explain_instances = 1000};
    return p;
}
