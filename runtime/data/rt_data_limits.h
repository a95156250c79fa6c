/*
 * rt_data_limits.h — the hard limits of the data layer, one place, each
 * with what it bounds (SQLite's sqliteLimit.h). Input past a limit is refused
 * with a message naming it, never truncated. Limits that are part of a
 * public contract stay in the layer's public header (rt_data.h).
 */
#ifndef PREDICTD_RT_DATA_LIMITS_H
#define PREDICTD_RT_DATA_LIMITS_H

/* characters of one numeric cell (strtod reads a copy on the stack) */
#define RT_NUMBER_MAX 63
/* bytes of one TFRecord record: a larger length field means a corrupt file */
#define RT_TFRECORD_MAX_RECORD (1u << 30)

#endif /* PREDICTD_RT_DATA_LIMITS_H */
