/*
 * rt_serve_limits.h — the hard limits of the request path, one place, each
 * with what it bounds (SQLite's sqliteLimit.h). Input past a limit is refused
 * with a message naming it, never truncated. Limits that are part of a
 * public contract stay in the layer's public header (rt_serve.h).
 */
#ifndef PREDICTD_RT_SERVE_LIMITS_H
#define PREDICTD_RT_SERVE_LIMITS_H

/* outputs one answer renders */
#define RT_JSON_MAX_OUTPUTS 32
/* levels of JSON nesting an error location names ("instances[3].age") */
#define RT_JSON_WHERE_FRAMES 64
/* dimensions of a v2 tensor shape kept (a longer shape is refused naming its rank) */
#define RT_V2_MAX_RANK 8
/* bytes of a body the replay keeps the layout of */
#define RT_V2_PLAN_MAX_BYTES (1u << 20)
/* values of a body the replay keeps the layout of */
#define RT_V2_PLAN_MAX_SLOTS (1u << 17)

#endif /* PREDICTD_RT_SERVE_LIMITS_H */
