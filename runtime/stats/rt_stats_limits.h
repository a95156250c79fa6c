/*
 * rt_stats_limits.h — the hard limits of the statistics layer, one place, each
 * with what it bounds (SQLite's sqliteLimit.h). Input past a limit is refused
 * with a message naming it, never truncated. Limits that are part of a
 * public contract stay in the layer's public header (rt_stats.h).
 */
#ifndef PREDICTD_RT_STATS_LIMITS_H
#define PREDICTD_RT_STATS_LIMITS_H

/* distinct strings one feature's table counts exactly (later ones count as "other") */
#define RT_STATS_STR_TABLE_MAX (1u << 20)

#endif /* PREDICTD_RT_STATS_LIMITS_H */
