// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include "present/stackrec.h"

static json_t *record_python(const struct snap_stack *s, const struct py_thread *t,
			     const struct py_stacks *py)
{
	json_t *o = json_object(), *fr = json_array();

	json_object_set_new(o, "version", py->version[0] ? json_string(py->version) : json_null());
	json_object_set_new(o, "error", py->error[0] ? json_string(py->error) : json_null());
	json_object_set_new(o, "read_ns", json_integer((json_int_t)py->read_ns));
	for (int i = 0; t && i < t->nframes; i++)
		json_array_append_new(fr,
				      json_pack("{s:s,s:i,s:s}", "file", t->frames[i].file, "line",
						t->frames[i].line, "func", t->frames[i].func));
	json_object_set_new(o, "frames", fr);
	json_object_set_new(o, "truncated", json_boolean(t && t->truncated));
	json_object_set_new(o, "merged", json_boolean(s->py_merged));
	json_object_set_new(o, "text", json_string(s->py_text));
	return o;
}

json_t *record_stack(const struct snap_stack *s, const struct py_thread *t,
		     const struct py_stacks *py)
{
	const struct thread_stack *st = &s->st;
	json_t *o = json_object(), *fr = json_array();

	json_object_set_new(o, "type", json_string("stack"));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)st->taken_ns));
	json_object_set_new(o, "pid", json_integer(st->pid));
	json_object_set_new(o, "tid", json_integer(st->tid));
	json_object_set_new(o, "syscall", st->syscall[0] ? json_string(st->syscall) : json_null());
	json_object_set_new(o, "stopped_ns", json_integer((json_int_t)st->stopped_ns));
	json_object_set_new(o, "held_ns", json_integer((json_int_t)st->held_ns));
	json_object_set_new(o, "nccl_call", json_string(s->nccl_call));
	json_object_set_new(o, "nccl_api", json_string(s->nccl_api));
	for (int i = 0; i < st->nframes; i++) {
		const struct stack_frame *f = &st->frames[i];

		json_t *jf = json_pack("{s:s,s:s?,s:I,s:I}", "module", f->module, "symbol",
				       f->symbol[0] ? f->symbol : NULL, "offset",
				       (json_int_t)f->offset, "pc", (json_int_t)f->pc);

		/* inside no symbol: the nearest export below, a landmark in a stripped file */
		if (!f->symbol[0] && f->near[0]) {
			json_object_set_new(jf, "near", json_string(f->near));
			json_object_set_new(jf, "near_offset",
					    json_integer((json_int_t)f->near_offset));
		}
		json_array_append_new(fr, jf);
	}
	json_object_set_new(o, "frames", fr);
	json_object_set_new(o, "error", st->error[0] ? json_string(st->error) : json_null());
	if (py)
		json_object_set_new(o, "python", record_python(s, t, py));
	return o;
}

json_t *stackrec_new(void)
{
	return json_object();
}

/* stacks: {"PID": {"TID": record}} */
void stackrec_note(json_t *stacks, json_t *rec)
{
	json_t *pid = json_object_get(rec, "pid"), *tid = json_object_get(rec, "tid"), *per;
	char p[24], t[24];

	if (!json_is_integer(pid) || !json_is_integer(tid) ||
	    !json_is_array(json_object_get(rec, "frames")))
		return;
	snprintf(p, sizeof(p), "%lld", (long long)json_integer_value(pid));
	snprintf(t, sizeof(t), "%lld", (long long)json_integer_value(tid));
	per = json_object_get(stacks, p);
	if (!per) {
		per = json_object();
		json_object_set_new(stacks, p, per);
	}
	json_object_set(per, t, rec);
}

static void attach_pid(json_t *stacks, json_t *out, json_t *pid, const char *role)
{
	const char *tid;
	json_t *per, *rec;
	char p[24];

	if (!json_is_integer(pid))
		return;
	snprintf(p, sizeof(p), "%lld", (long long)json_integer_value(pid));
	per = json_object_get(stacks, p);
	json_object_foreach(per, tid, rec)
	{
		json_t *c = json_deep_copy(rec);

		json_object_del(c, "type");
		json_object_set_new(c, "role", json_string(role));
		json_array_append_new(out, c);
	}
}

void stackrec_attach(json_t *stacks, json_t *f)
{
	json_t *out = json_array();

	attach_pid(stacks, out, json_object_get(f, "pid"), "culprit");
	attach_pid(stacks, out, json_object_get(f, "peer_pid"), "waiter");
	if (json_array_size(out))
		json_object_set_new(f, "stacks", out);
	else
		json_decref(out);
}

/* a stack record's Python part: the merged text, then each Python frame, innermost first */
static void print_python(json_t *py)
{
	const char *ver = json_string_value(json_object_get(py, "version"));
	const char *err = json_string_value(json_object_get(py, "error"));
	const char *text = json_string_value(json_object_get(py, "text"));
	json_t *fr;
	size_t k;

	if (!py)
		return;
	if (err) {
		printf("      python: %s\n", err);
		return;
	}
	printf("      python (CPython %s, read in %.0f us without stopping it)%s\n",
	       ver ? ver : "?", json_integer_value(json_object_get(py, "read_ns")) / 1e3,
	       json_is_true(json_object_get(py, "merged")) ? ", merged with the native frames:"
							   : ":");
	if (text && text[0])
		printf("      %s\n", text);
	json_array_foreach(json_object_get(py, "frames"), k, fr) printf(
		"      py#%-2zu %s:%lld %s\n", k, json_string_value(json_object_get(fr, "file")),
		(long long)json_integer_value(json_object_get(fr, "line")),
		json_string_value(json_object_get(fr, "func")));
}

void stackrec_print(json_t *f)
{
	json_t *s, *fr;
	size_t i, k;

	json_array_foreach(json_object_get(f, "stacks"), i, s)
	{
		const char *sc = json_string_value(json_object_get(s, "syscall"));
		const char *call = json_string_value(json_object_get(s, "nccl_call"));
		const char *err = json_string_value(json_object_get(s, "error"));

		printf("    stack of the %s, pid %lld thread %lld%s%s (stopped %.0f us to unwind "
		       "it):\n",
		       json_string_value(json_object_get(s, "role")),
		       (long long)json_integer_value(json_object_get(s, "pid")),
		       (long long)json_integer_value(json_object_get(s, "tid")),
		       sc ? ", blocked in " : "", sc ? sc : "",
		       json_integer_value(json_object_get(s, "stopped_ns")) / 1e3);
		if (call && call[0])
			printf("      %s\n", call);
		if (err)
			printf("      %s\n", err);
		json_array_foreach(json_object_get(s, "frames"), k, fr)
		{
			const char *mod = json_string_value(json_object_get(fr, "module")) ?: "";
			const char *sym = json_string_value(json_object_get(fr, "symbol"));
			const char *base = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
			long long off = json_integer_value(json_object_get(fr, "offset"));

			char name[128];

			if (sym)
				printf("      #%-2zu %s+0x%llx (%s)\n", k,
				       stack_short_name(sym, name, sizeof(name)), off, base);
			else if (json_string_value(json_object_get(fr, "near")))
				printf("      #%-2zu %s+0x%llx (not exported; nearest export "
				       "below: "
				       "%s+0x%llx)\n",
				       k, base, off, json_string_value(json_object_get(fr, "near")),
				       (long long)json_integer_value(
					       json_object_get(fr, "near_offset")));
			else
				printf("      #%-2zu %s+0x%llx\n", k, base, off);
		}
		print_python(json_object_get(s, "python"));
	}
}
