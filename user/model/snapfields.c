// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/snapfields.h"
#include "model/snapshot.h"

#define T(S, m)	 SF(S, m, SF_TIME)
#define I(S, m)	 SF(S, m, SF_INT)
#define U(S, m)	 SF(S, m, SF_UINT)
#define B(S, m)	 SF(S, m, SF_BOOL)
#define S_(S, m) SF(S, m, SF_STR)
#define H(S, m)	 SF(S, m, SF_HEX)

/* the tuple is written apart (addresses as text) */
const struct sf sf_conn[] = {
	U(struct nt_conn, tgid),
	U(struct nt_conn, tid),
	U(struct nt_conn, ino),
	U(struct nt_conn, bytes_sent),
	U(struct nt_conn, bytes_recv),
	U(struct nt_conn, send_calls),
	U(struct nt_conn, recv_calls),
	U(struct nt_conn, send_eagain),
	U(struct nt_conn, recv_eagain),
	U(struct nt_conn, recv_eof),
	U(struct nt_conn, send_err),
	U(struct nt_conn, recv_err),
	T(struct nt_conn, first_ns),
	T(struct nt_conn, state_ns),
	T(struct nt_conn, last_send_ns),
	T(struct nt_conn, last_recv_ns),
	T(struct nt_conn, last_send_try_ns),
	T(struct nt_conn, last_recv_try_ns),
	T(struct nt_conn, last_eagain_ns),
	T(struct nt_conn, eagain_since_ns),
	T(struct nt_conn, figures_ns),
	U(struct nt_conn, state),
	I(struct nt_conn, last_err),
	U(struct nt_conn, retrans),
	U(struct nt_conn, syn_retrans),
	U(struct nt_conn, srtt_us),
	U(struct nt_conn, snd_cwnd),
	U(struct nt_conn, snd_wnd),
	U(struct nt_conn, rcv_wnd),
	U(struct nt_conn, send_q),
	U(struct nt_conn, recv_q),
	U(struct nt_conn, flags),
	U(struct nt_conn, resets),
	U(struct nt_conn, nccl_phase),
};
const int sf_conn_n = SF_N(sf_conn);

const struct sf sf_sconn[] = {
	H(struct snap_conn, id),	I(struct snap_conn, pid),
	I(struct snap_conn, peer_pid),	B(struct snap_conn, closed),
	T(struct snap_conn, closed_ns), I(struct snap_conn, blocked_tid),
	I(struct snap_conn, blocked),	T(struct snap_conn, blocked_since_ns),
	B(struct snap_conn, ras),	U(struct snap_conn, gap_p99_ns),
	U(struct snap_conn, every_ns),
};
const int sf_sconn_n = SF_N(sf_sconn);

const struct sf sf_proc[] = {
	I(struct snap_proc, pid),
	I(struct snap_proc, ppid),
	I(struct snap_proc, rank),
	I(struct snap_proc, local_rank),
	I(struct snap_proc, cpu_numa),
	I(struct snap_proc, gpu_env),
	S_(struct snap_proc, gpu_also),
	S_(struct snap_proc, nic),
	I(struct snap_proc, nic_numa),
	I(struct snap_proc, world_size),
	S_(struct snap_proc, comm),
	SF(struct snap_proc, state, SF_CHAR),
	B(struct snap_proc, exited),
	I(struct snap_proc, exit_status),
	T(struct snap_proc, exit_ns),
	U(struct snap_proc, cpu_ns),
	U(struct snap_proc, cpu_busy_ns),
	U(struct snap_proc, runnable_ns),
	I(struct snap_proc, runnable_tid),
	S_(struct snap_proc, where),
	B(struct snap_proc, nccl),
	S_(struct snap_proc, nccl_phase),
	T(struct snap_proc, nccl_since_ns),
	I(struct snap_proc, nccl_setup),
	T(struct snap_proc, nccl_setup_since_ns),
	T(struct snap_proc, nccl_setup_seen_ns),
	T(struct snap_proc, nccl_init_entered_ns),
	T(struct snap_proc, nccl_transport_entered_ns),
	T(struct snap_proc, attached_ns),
	T(struct snap_proc, stack_at_attach_ns),
	T(struct snap_proc, gpu_wait_at_attach_ns),
	U(struct snap_proc, nccl_retries),
	T(struct snap_proc, nccl_last_retry_ns),
	I(struct snap_proc, nccl_burst_warnings),
	{"ib_hs_probe", offsetof(struct snap_proc, ib_hs.probe), sizeof(int), SF_INT},
	{"ib_hs_inside", offsetof(struct snap_proc, ib_hs.inside), sizeof(bool), SF_BOOL},
	{"ib_hs_since_ns", offsetof(struct snap_proc, ib_hs.since_ns), 8, SF_TIME},
	{"ib_hs_stage", offsetof(struct snap_proc, ib_hs.stage), sizeof(int), SF_INT},
	{"ib_hs_tid", offsetof(struct snap_proc, ib_hs.tid), sizeof(int), SF_INT},
	{"net_poll_probe", offsetof(struct snap_proc, net_poll.probe), sizeof(int), SF_INT},
	{"net_poll_since_ns", offsetof(struct snap_proc, net_poll.since_ns), 8, SF_TIME},
	{"net_poll_calls", offsetof(struct snap_proc, net_poll.calls), 8, SF_UINT},
	{"net_poll_tid", offsetof(struct snap_proc, net_poll.tid), sizeof(int), SF_INT},
	{"net_poll_addr", offsetof(struct snap_proc, net_poll.addr), 48, SF_STR},
};
const int sf_proc_n = SF_N(sf_proc);

const struct sf sf_comm[] = {
	I(struct snap_comm, pid),
	H(struct snap_comm, hash),
	I(struct snap_comm, rank),
	I(struct snap_comm, nranks),
	B(struct snap_comm, total_only),
	U(struct snap_comm, total),
	B(struct snap_comm, seq_ok),
	B(struct snap_comm, destroyed),
	T(struct snap_comm, changed_ns),
	I(struct snap_comm, last_coll),
	I(struct snap_comm, last_dtype),
	I(struct snap_comm, last_root),
	U(struct snap_comm, last_count),
	H(struct snap_comm, differ_bits),
	H(struct snap_comm, behind_bits),
	I(struct snap_comm, nsamples),
	T(struct snap_comm, behind_since_ns),
	I(struct snap_comm, seq_src),
	I(struct snap_comm, args_src),
	U(struct snap_comm, mm_ord),
	U(struct snap_comm, mm_from),
	I(struct snap_comm, mm_coll),
	I(struct snap_comm, mm_dtype),
	I(struct snap_comm, mm_root),
	U(struct snap_comm, mm_count),
	U(struct snap_comm, mm_seq),
	T(struct snap_comm, mm_ns),
	B(struct snap_comm, mm_changed),
	U(struct snap_comm, launched),
	U(struct snap_comm, gap_p99_ns),
	U(struct snap_comm, every_ns),
	B(struct snap_comm, scanned),
};
const int sf_comm_n = SF_N(sf_comm);

const struct sf sf_ib_err[] = {
	T(struct snap_ib_error, ts_ns),	 I(struct snap_ib_error, count),
	S_(struct snap_ib_error, text),	 S_(struct snap_ib_error, peer),
	S_(struct snap_ib_error, hca),	 I(struct snap_ib_error, status),
	I(struct snap_ib_error, opcode), U(struct snap_ib_error, vendor_err),
	B(struct snap_ib_error, roce),	 U(struct snap_ib_error, colls_before),
};
const int sf_ib_err_n = SF_N(sf_ib_err);

const struct sf sf_gpu[] = {
	I(struct snap_gpu, index),	   S_(struct snap_gpu, uuid),
	S_(struct snap_gpu, bus),	   S_(struct snap_gpu, name),
	S_(struct snap_gpu, how),	   I(struct snap_gpu, numa),
	I(struct snap_gpu, util),	   I(struct snap_gpu, sm_mhz),
	I(struct snap_gpu, sm_max_mhz),	   H(struct snap_gpu, throttle),
	I(struct snap_gpu, pcie_gen),	   I(struct snap_gpu, pcie_width),
	I(struct snap_gpu, pcie_gen_max),  I(struct snap_gpu, pcie_width_max),
	I(struct snap_gpu, nvlink_up),	   I(struct snap_gpu, nvlink_known),
	U(struct snap_gpu, ecc_new),	   U(struct snap_gpu, nvlink_err_new),
	B(struct snap_gpu, remap_pending), B(struct snap_gpu, remap_failed),
	I(struct snap_gpu, xid),	   T(struct snap_gpu, xid_ns),
	S_(struct snap_gpu, xid_src),	   S_(struct snap_gpu, xid_text),
	S_(struct snap_gpu, host_note),	   T(struct snap_gpu, sampled_ns),
};
const int sf_gpu_n = SF_N(sf_gpu);

const struct sf sf_qp[] = {
	H(struct snap_qp, obj),		U(struct snap_qp, qp_num),
	U(struct snap_qp, dest_qp_num), U(struct snap_qp, state),
	U(struct snap_qp, mtu),		U(struct snap_qp, timeout),
	U(struct snap_qp, retry_cnt),	U(struct snap_qp, rnr_retry),
	U(struct snap_qp, sgid_index),	U(struct snap_qp, port),
	B(struct snap_qp, destroyed),	I(struct snap_qp, err),
	T(struct snap_qp, created_ns),	T(struct snap_qp, changed_ns),
	S_(struct snap_qp, dev),
};
const int sf_qp_n = SF_N(sf_qp);

const struct sf sf_ib[] = {
	S_(struct snap_ib, dev),       I(struct snap_ib, nmr),	      U(struct snap_ib, mr_bytes),
	I(struct snap_ib, nasync),     I(struct snap_ib, async_type), U(struct snap_ib, async_qp),
	I(struct snap_ib, async_port), T(struct snap_ib, async_ns),   S_(struct snap_ib, async_dev),
};
const int sf_ib_n = SF_N(sf_ib);

/* a stack: its thread_stack's fields, and what its frames say about NCCL */
const struct sf sf_stack[] = {
	{"pid", offsetof(struct snap_stack, st.pid), sizeof(int), SF_INT},
	{"tid", offsetof(struct snap_stack, st.tid), sizeof(int), SF_INT},
	{"taken_ns", offsetof(struct snap_stack, st.taken_ns), 8, SF_TIME},
	{"stopped_ns", offsetof(struct snap_stack, st.stopped_ns), 8, SF_UINT},
	{"held_ns", offsetof(struct snap_stack, st.held_ns), 8, SF_UINT},
	{"syscall", offsetof(struct snap_stack, st.syscall), 32, SF_STR},
	{"error", offsetof(struct snap_stack, st.error), 160, SF_STR},
	{"exited", offsetof(struct snap_stack, st.exited), sizeof(bool), SF_BOOL},
	{"wait_status", offsetof(struct snap_stack, st.wait_status), sizeof(int), SF_INT},
	S_(struct snap_stack, nccl_call),
	S_(struct snap_stack, nccl_api),
};
const int sf_stack_n = SF_N(sf_stack);

const struct sf sf_frame[] = {
	H(struct stack_frame, pc),	U(struct stack_frame, offset),
	S_(struct stack_frame, module), S_(struct stack_frame, symbol),
	U(struct stack_frame, size),
};
const int sf_frame_n = SF_N(sf_frame);

const struct sf sf_log[] = {
	S_(struct snap_nccl_log, version), S_(struct snap_nccl_log, network),
	B(struct snap_nccl_log, no_ib),	   S_(struct snap_nccl_log, last_warn),
	I(struct snap_nccl_log, nwarn),	   U(struct snap_nccl_log, lines),
	U(struct snap_nccl_log, facts),	   U(struct snap_nccl_log, dropped),
};
const int sf_log_n = SF_N(sf_log);

const struct sf sf_log_comm[] = {
	H(struct snap_log_comm, ptr),	      H(struct snap_log_comm, id),
	H(struct snap_log_comm, hash),	      H(struct snap_log_comm, parent),
	H(struct snap_log_comm, bus_id),      I(struct snap_log_comm, rank),
	I(struct snap_log_comm, nranks),      I(struct snap_log_comm, cuda_dev),
	I(struct snap_log_comm, nvml_dev),    I(struct snap_log_comm, color),
	I(struct snap_log_comm, key),	      I(struct snap_log_comm, split_count),
	S_(struct snap_log_comm, api),	      B(struct snap_log_comm, complete),
	B(struct snap_log_comm, rings),	      I(struct snap_log_comm, pxn),
	I(struct snap_log_comm, gdr),	      T(struct snap_log_comm, start_ns),
	T(struct snap_log_comm, complete_ns), T(struct snap_log_comm, rings_ns),
};
const int sf_log_comm_n = SF_N(sf_log_comm);

const struct sf sf_log_path[] = {
	I(struct snap_log_path, comm),	     I(struct snap_log_path, from),
	I(struct snap_log_path, to),	     I(struct snap_log_path, from_dev),
	I(struct snap_log_path, to_dev),     I(struct snap_log_path, side),
	I(struct snap_log_path, conn_index), S_(struct snap_log_path, transport),
	B(struct snap_log_path, net),	     B(struct snap_log_path, p2p),
	B(struct snap_log_path, shm),	     B(struct snap_log_path, gdrdma),
	I(struct snap_log_path, proxy_rank), H(struct snap_log_path, channels),
};
const int sf_log_path_n = SF_N(sf_log_path);

const struct sf sf_log_gdr[] = {
	B(struct snap_log_gdr, enabled), S_(struct snap_log_gdr, gpu),
	S_(struct snap_log_gdr, hca),	 I(struct snap_log_gdr, distance),
	I(struct snap_log_gdr, level),	 I(struct snap_log_gdr, read),
};
const int sf_log_gdr_n = SF_N(sf_log_gdr);

const struct sf sf_log_env[] = {S_(struct snap_log_env, name), S_(struct snap_log_env, value)};
const int sf_log_env_n = SF_N(sf_log_env);

const struct sf sf_log_if[] = {
	S_(struct snap_log_if, what),
	I(struct snap_log_if, index),
	S_(struct snap_log_if, name),
	S_(struct snap_log_if, addr),
};
const int sf_log_if_n = SF_N(sf_log_if);

const struct sf sf_snap[] = {
	T(struct snapshot, now_ns),	    B(struct snapshot, tcp_quiet),
	T(struct snapshot, tcp_resumed_ns), B(struct snapshot, job_over),
	U(struct snapshot, records_lost),   U(struct snapshot, records_suppressed),
};
const int sf_snap_n = SF_N(sf_snap);

static int64_t get_int(const void *p, size_t size)
{
	switch (size) {
	case 1:
		return *(const int8_t *)p;
	case 2:
		return *(const int16_t *)p;
	case 4:
		return *(const int32_t *)p;
	default:
		return *(const int64_t *)p;
	}
}

static uint64_t get_uint(const void *p, size_t size)
{
	switch (size) {
	case 1:
		return *(const uint8_t *)p;
	case 2:
		return *(const uint16_t *)p;
	case 4:
		return *(const uint32_t *)p;
	default:
		return *(const uint64_t *)p;
	}
}

static void set_uint(void *p, size_t size, uint64_t v)
{
	switch (size) {
	case 1:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)v;
		break;
	default:
		*(uint64_t *)p = v;
	}
}

void sf_put(json_t *o, const void *base, const struct sf *tab, int n)
{
	for (int i = 0; i < n; i++) {
		const struct sf *f = &tab[i];
		const char *p = (const char *)base + f->off;
		char buf[24];
		json_t *v;

		/*
		 * zeros, false and "" are what a field read back starts as: left out, they cost
		 * nothing (most counters of most connections are 0). Signed ones are always
		 * written: a rank's -1 default is not 0
		 */
		if ((f->type == SF_UINT || f->type == SF_TIME || f->type == SF_HEX) &&
		    !get_uint(p, f->size))
			continue;
		if ((f->type == SF_BOOL && !*(const bool *)p) || (f->type == SF_STR && !*p))
			continue;
		switch (f->type) {
		case SF_INT:
			v = json_integer((json_int_t)get_int(p, f->size));
			break;
		case SF_HEX:
			snprintf(buf, sizeof(buf), "0x%" PRIx64, get_uint(p, f->size));
			v = json_string(buf);
			break;
		case SF_BOOL:
			v = json_boolean(*(const bool *)p);
			break;
		case SF_CHAR:
			buf[0] = *p ? *p : '?';
			buf[1] = '\0';
			v = json_string(buf);
			break;
		case SF_STR:
			/* a full array with no NUL is cut at its size */
			v = json_stringn_nocheck(p, strnlen(p, f->size));
			break;
		default: /* SF_UINT, SF_TIME: within int64 on every real value */
			v = json_integer((json_int_t)get_uint(p, f->size));
		}
		json_object_set_new(o, f->name, v);
	}
}

void sf_clamp(void *base, const struct sf *tab, int n, uint64_t now)
{
	for (int i = 0; i < n; i++) {
		uint64_t *t = (uint64_t *)((char *)base + tab[i].off);

		if (tab[i].type == SF_TIME && *t > now)
			*t = now;
	}
}

/*
 * Each table's names, hashed (built at its first use, under a lock): a member is found in its
 * table in one probe or two, where asking the object for each of the table's names took a
 * lookup each (45 for a connection, most of them absent)
 */
#define SF_INDEX_SLOTS 256 /* a power of two, over twice the largest table */
#define SF_INDEXES     32
static struct sf_index {
	const struct sf *tab;
	int16_t slot[SF_INDEX_SLOTS]; /* field index + 1, 0 empty */
} sf_indexes[SF_INDEXES];
static pthread_mutex_t sf_index_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned sf_hash(const char *k)
{
	unsigned h = 2166136261u;

	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 16777619u;
	return h;
}

static const struct sf_index *sf_index_of(const struct sf *tab, int n)
{
	struct sf_index *x = NULL;

	for (int i = 0; i < SF_INDEXES; i++)
		if (__atomic_load_n(&sf_indexes[i].tab, __ATOMIC_ACQUIRE) == tab)
			return &sf_indexes[i];
	if (n * 2 > SF_INDEX_SLOTS)
		return NULL;
	pthread_mutex_lock(&sf_index_lock);
	for (int i = 0; i < SF_INDEXES && !x; i++)
		if (sf_indexes[i].tab == tab || !sf_indexes[i].tab)
			x = &sf_indexes[i];
	if (x && !x->tab) {
		for (int i = 0; i < n; i++) {
			unsigned h = sf_hash(tab[i].name) & (SF_INDEX_SLOTS - 1);

			while (x->slot[h])
				h = (h + 1) & (SF_INDEX_SLOTS - 1);
			x->slot[h] = (int16_t)(i + 1);
		}
		__atomic_store_n(&x->tab, tab, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sf_index_lock);
	return x;
}

/* tab's field named k, or NULL */
static const struct sf *sf_find(const struct sf_index *x, const struct sf *tab, const char *k)
{
	for (unsigned h = sf_hash(k) & (SF_INDEX_SLOTS - 1); x->slot[h];
	     h = (h + 1) & (SF_INDEX_SLOTS - 1))
		if (!strcmp(tab[x->slot[h] - 1].name, k))
			return &tab[x->slot[h] - 1];
	return NULL;
}

static void sf_get_one(const struct sf *f, json_t *v, void *base, int64_t shift)
{
	char *p = (char *)base + f->off;
	const char *s;
	uint64_t u;

	switch (f->type) {
	case SF_HEX:
		s = json_string_value(v);
		set_uint(p, f->size, s ? strtoull(s, NULL, 16) : 0);
		break;
	case SF_BOOL:
		*(bool *)p = json_is_true(v);
		break;
	case SF_CHAR:
		s = json_string_value(v);
		*p = s && *s ? *s : '?';
		break;
	case SF_STR:
		s = json_string_value(v);
		snprintf(p, f->size, "%s", s ? s : "");
		break;
	case SF_TIME:
		u = (uint64_t)json_integer_value(v);
		*(uint64_t *)p = u ? u + (uint64_t)shift : 0;
		break;
	default: /* signed values are stored two's complement either way */
		set_uint(p, f->size, (uint64_t)json_integer_value(v));
	}
}

void sf_shift(void *base, const struct sf *tab, int n, int64_t by)
{
	for (int i = 0; by && i < n; i++) {
		uint64_t *t = (uint64_t *)((char *)base + tab[i].off);

		if (tab[i].type == SF_TIME && *t)
			*t += (uint64_t)by;
	}
}

void sf_get(json_t *o, void *base, const struct sf *tab, int n, int64_t shift)
{
	const struct sf_index *x = sf_index_of(tab, n);
	const char *k;
	json_t *v;

	if (!x) {
		for (int i = 0; i < n; i++)
			if ((v = json_object_get(o, tab[i].name)))
				sf_get_one(&tab[i], v, base, shift);
		return;
	}
	json_object_foreach(o, k, v)
	{
		const struct sf *f = sf_find(x, tab, k);

		if (f)
			sf_get_one(f, v, base, shift);
	}
}
