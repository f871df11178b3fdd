/* SPDX-License-Identifier: MIT */
/*
 * The fields of the snapshot's plain structs, named, for snapjson: one table per struct, so
 * that writing and reading back are one loop each and a field added to a struct is one line.
 */
#ifndef NT_SNAPFIELDS_H
#define NT_SNAPFIELDS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum sf_type {
	SF_INT,	 /* signed, any width */
	SF_UINT, /* unsigned, any width */
	SF_TIME, /* uint64_t CLOCK_MONOTONIC ns: moved to another clock when read, 0 kept */
	SF_HEX,	 /* uint64_t identity (hash, address): "0x..." */
	SF_BOOL,
	SF_CHAR, /* one character, as a one-letter string */
	SF_STR,	 /* a char array */
};

struct sf {
	const char *name;
	size_t off, size;
	enum sf_type type;
};

#define SF(S, m, t)                                                                                \
	{                                                                                          \
#m, offsetof(S, m), sizeof(((S *)0)->m), t                                         \
	}
#define SF_N(tab) ((int)(sizeof(tab) / sizeof((tab)[0])))

/* The fields of base, named by tab, into o: unsigned ones that are 0, false, "" left out. */
void sf_put(json_t *o, const void *base, const struct sf *tab, int n);
/* The fields of o into base (absent ones left as they are); times moved by shift. */
void sf_get(json_t *o, void *base, const struct sf *tab, int n, int64_t shift);

/* Every time field of base, named by tab, that is not 0 moved by by. */
void sf_shift(void *base, const struct sf *tab, int n, int64_t by);

/* Every time field of base, named by tab, that is after now made now (see snapshot_clamp). */
void sf_clamp(void *base, const struct sf *tab, int n, uint64_t now);

/* The tables (snapfields.c). */
extern const struct sf sf_conn[], sf_sconn[], sf_proc[], sf_comm[], sf_ib_err[], sf_gpu[], sf_qp[],
	sf_ib[], sf_stack[], sf_frame[], sf_log[], sf_log_comm[], sf_log_path[], sf_log_gdr[],
	sf_log_env[], sf_log_if[], sf_snap[];
extern const int sf_conn_n, sf_sconn_n, sf_proc_n, sf_comm_n, sf_ib_err_n, sf_gpu_n, sf_qp_n,
	sf_ib_n, sf_stack_n, sf_frame_n, sf_log_n, sf_log_comm_n, sf_log_path_n, sf_log_gdr_n,
	sf_log_env_n, sf_log_if_n, sf_snap_n;

#endif /* NT_SNAPFIELDS_H */
