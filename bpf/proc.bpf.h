/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The process hooks: the traced process tree followed through fork, exec and exit.
 *
 * Part of nccltrace.bpf.c (one BPF object): included there, after the maps and helpers
 * all parts share.
 */

/* --- the traced process tree --- */

static __always_inline void emit_proc(__u16 type, __u32 pid, __u32 ppid, __u32 tid, int code,
				      struct task_struct *task)
{
	struct nt_ev_proc *e = record_reserve(sizeof(*e), type, type == NT_EV_FORK ? ppid : pid,
					      NT_BUDGET_PROC, 0);

	if (!e)
		return;
	e->pid = pid;
	e->ppid = ppid;
	e->tid = tid;
	e->exit_code = code;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	bpf_ringbuf_submit(e, 0);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(nt_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);

	if (ptgid == ctgid || !tgid_traced(ptgid))
		return 0; /* a new thread, or not ours */
	if (bpf_map_update_elem(&traced, &ctgid, &ptgid, BPF_ANY)) {
		stat_inc(NT_STAT_TRACED_FULL);
		return 0;
	}
	emit_proc(NT_EV_FORK, ctgid, ptgid, BPF_CORE_READ(child, pid), 0, child);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(nt_exec, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *ppid = bpf_map_lookup_elem(&traced, &tgid);

	if (!ppid)
		return 0;
	emit_proc(NT_EV_EXEC, tgid, *ppid, BPF_CORE_READ(task, pid), 0, task);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(nt_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *ppid = bpf_map_lookup_elem(&traced, &tgid);
	__u32 parent;
	int code;

	if (!ppid)
		return 0;
	/* signal->live is decremented before the tracepoint: 0 means the last thread is going */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	parent = *ppid;
	code = BPF_CORE_READ(task, exit_code);
	if (BPF_CORE_READ(task, signal, flags) & 0x4 /* SIGNAL_GROUP_EXIT */)
		code = BPF_CORE_READ(task, signal, group_exit_code);
	bpf_map_delete_elem(&traced, &tgid);
	emit_proc(NT_EV_EXIT, tgid, parent, BPF_CORE_READ(task, pid), code, task);
	return 0;
}
