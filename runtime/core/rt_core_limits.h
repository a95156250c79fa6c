/*
 * rt_core_limits.h — the hard limits of the core layer, one place, each
 * with what it bounds (SQLite's sqliteLimit.h). Input past a limit is refused
 * with a message naming it, never truncated. Limits that are part of a
 * public contract stay in the layer's public header (rt_core.h).
 */
#ifndef PREDICTD_RT_CORE_LIMITS_H
#define PREDICTD_RT_CORE_LIMITS_H

/* directory levels rt_file_rmtree_at descends (a deeper tree is refused, never followed further) */
#define RT_RMTREE_MAX_DEPTH 32

#endif /* PREDICTD_RT_CORE_LIMITS_H */
