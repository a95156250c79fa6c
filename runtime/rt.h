/*
 * rt.h — the whole runtime in one include, for predict-model and the tests.
 * The other programs include the layer they use (docs/design.md, "The
 * runtime's layers"): rt_core.h (predict-tune), rt_model.h (the exporter and
 * the trainer), rt_serve.h (predictd).
 */
#ifndef PREDICTD_RT_H
#define PREDICTD_RT_H

#include "rt_serve.h"

#endif /* PREDICTD_RT_H */
