// SPDX-License-Identifier: MIT
/*
 * The Python stack reader (trace/pystack.c) on every CPython this machine has: each runs a
 * known program (tests/fixtures/pystackprog.py) that prints its main thread's stack as the
 * interpreter sees it; the reader's stack, read from outside without stopping it, must say the
 * same frames, files, lines and functions, and merge with the native stack (taken with ptrace:
 * the test is the program's parent). A version the reader does not know must say so in one
 * line. Then the pure parts: line tables, names, the merge of made-up stacks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "trace/pystack.h"
#include "trace/pystack_priv.h"
#include "trace/stacks.h"
#include "testutil.h"

#define PROG "tests/fixtures/pystackprog.py"

/* Every CPython 3 binary found where Debian, /usr/local, pyenv and $NT_PYTHONS put them */
static int pythons(char out[][256], int max)
{
	static const char *const pats[] = {
		"/usr/bin/python3.[0-9]*", "/usr/local/bin/python3.[0-9]*",
		"/root/.pyenv/versions/*/bin/python3.[0-9]*", "/opt/conda/bin/python3.[0-9]*"};
	const char *env = getenv("NT_PYTHONS");
	int n = 0;

	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;

		if (glob(pats[i], 0, NULL, &g))
			continue;
		for (size_t k = 0; k < g.gl_pathc && n < max; k++) {
			const char *p = g.gl_pathv[k], *b = strrchr(p, '/') + 1;

			/* python3.11, not python3.11-config or python3.11-gdb.py */
			if (strspn(b + 8, "0123456789") == strlen(b + 8) && !access(p, X_OK))
				snprintf(out[n++], 256, "%s", p);
		}
		globfree(&g);
	}
	while (env && *env && n < max) {
		size_t l = strcspn(env, ":");

		snprintf(out[n++], 256, "%.*s", (int)l, env);
		env += l + (env[l] == ':');
	}
	return n;
}

/* python running PROG, its "ready" line into line; its pid */
static pid_t start(const char *python, char *line, size_t len)
{
	int fd[2];
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		/* the non-ASCII names, printed in any locale */
		setenv("PYTHONIOENCODING", "utf-8", 1);
		execl(python, python, "-u", PROG, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	line[0] = '\0';
	if (!fgets(line, (int)len, f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* "file:line:func;..." of t, innermost first, as the program prints its own */
static void frames_text(const struct py_thread *t, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < t->nframes && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s:%d:%s", i ? ";" : "", t->frames[i].file,
				t->frames[i].line, t->frames[i].func);
}

static bool helper_seen(const struct py_stacks *s)
{
	for (int i = 1; i < s->nthreads; i++)
		for (int k = 0; k < s->threads[i].nframes; k++)
			if (!strcmp(s->threads[i].frames[k].func, "helper"))
				return true;
	return false;
}

static int minor_of(const char *python)
{
	return atoi(strstr(strrchr(python, '/'), "python3.") + 8);
}

static void one_python(const char *python, struct pystacks *ps, struct stacks *st)
{
	static struct py_stacks out;
	static struct thread_stack nat;
	char line[4096], got[4096], merged[2048], why[160];
	int minor = minor_of(python), rc, stripped = 0;
	pid_t pid = start(python, line, sizeof(line));
	const struct py_thread *t;

	if (strncmp(line, "ready ", 6)) {
		stop(pid);
		fail_msg("%s did not run %s: '%s'", python, PROG, line);
	}
	rc = pystacks__take(ps, pid, &out);
	if (minor < 9 || minor > 13) {
		char want[64];

		snprintf(want, sizeof(want), "CPython 3.%d: Python stack unknown", minor);
		stop(pid);
		assert_int_equal(rc, -ENOTSUP);
		assert_string_equal(out.error, want);
		printf("# %s: %s\n", python, out.error);
		return;
	}
	if (rc) {
		stop(pid);
		fail_msg("%s: %d %s", python, rc, out.error);
	}
	t = py_stacks_thread(&out, pid);
	assert_non_null(t);
	assert_true(t->main);
	assert_true(out.nthreads >= 2);
	frames_text(t, got, sizeof(got));
	if (strcmp(got, line + 6)) {
		stop(pid);
		fail_msg("%s: read '%s'\n  the program says '%s'", python, got, line + 6);
	}
	/* the other thread: its function named, whatever line its sleep is on */
	assert_true(helper_seen(&out));
	/* the native stack of the main thread, merged with the Python one */
	rc = stacks__take(st, pid, &pid, 1, &nat, why, sizeof(why));
	stop(pid);
	stacks__forget(st, pid);
	pystacks__forget(ps, pid);
	assert_int_equal(rc, 0);
	if (!py_merge_text(&nat, t, merged, sizeof(merged)))
		fail_msg("%s: not merged: %s", python, merged);
	assert_contains(merged, "pystackprog.py:13 inner -> ");
	/* ... down to where the native stack is: the call time.sleep waits in */
	stack_frame_name(&nat.frames[0], why, sizeof(why));
	if (strlen(merged) < strlen(why) || strcmp(merged + strlen(merged) - strlen(why), why))
		fail_msg("%s: merged '%s' does not end at %s", python, merged, why);
	/* a stripped binary (Debian's python3.11): a frame inside no symbol names its module, and
	 * the nearest export below it with the offset from there */
	for (int i = 0; i < nat.nframes; i++) {
		const struct stack_frame *fr = &nat.frames[i];

		if (fr->symbol[0] || !fr->module[0])
			continue;
		if (!fr->near[0] || fr->near_offset == 0 || fr->near_offset > fr->pc)
			fail_msg("%s: frame %d (%s+0x%llx) without its nearest export", python, i,
				 fr->module, (unsigned long long)fr->offset);
		stripped++;
	}
	/* from the top user frame in: each run of the eval loop replaced by its frames */
	if (strncmp(merged, "... -> pystackprog.py:13 inner -> ", 34) ||
	    strstr(merged, "_PyEval_EvalFrameDefault"))
		fail_msg("%s: merged wrong: %s", python, merged);
	printf("# %s: %d threads, %d frames in %.0f us, %d native frames inside no symbol; "
	       "merged: %s\n",
	       python, out.nthreads, t->nframes, out.read_ns / 1e3, stripped, merged);
	if (!strcmp(python, "/usr/bin/python3.11"))
		assert_true(stripped > 0);
	/* with symbols: of the interpreter's run of frames below inner(), the builtin alone */
	if (!stripped && !strstr(merged, "pystackprog.py:13 inner -> time_sleep -> "))
		fail_msg("%s: merged '%s' without 'inner -> time_sleep'", python, merged);
}

static void test_every_python(void **state)
{
	static char list[32][256];
	struct pystacks *ps = pystacks__new();
	struct stacks *st = stacks__new(NULL, NULL);
	int n = pythons(list, 32), known = 0;

	(void)state;
	if (access(PROG, R_OK))
		fail_msg("%s not found: run from the repository's root", PROG);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		one_python(list[i], ps, st);
		known += minor_of(list[i]) >= 9 && minor_of(list[i]) <= 13;
	}
	/* Debian 12's python3.11 at least */
	assert_true(known > 0);
	pystacks__free(ps);
	stacks__free(st);
}

/* Not CPython: nothing, and no error */
static void test_not_python(void **state)
{
	struct pystacks *ps = pystacks__new();
	static struct py_stacks out;

	(void)state;
	assert_int_equal(pystacks__take(ps, getpid(), &out), -ENOENT);
	assert_string_equal(out.error, "");
	pystacks__free(ps);
}

/*
 * Not permitted: a process of another user (pid 1, root's), read by an unprivileged one (this
 * test as nobody when it runs as root): refused, and said so, with ptrace named
 */
static void test_not_permitted(void **state)
{
	pid_t child;
	int status;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		static struct py_stacks out;
		struct pystacks *ps;

		if (getuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(2);
		ps = pystacks__new();
		if (pystacks__take(ps, 1, &out) != -EPERM)
			_exit(3);
		if (!strstr(out.error, "cannot read the memory of pid 1: ") ||
		    !strstr(out.error, "ptrace"))
			_exit(4);
		_exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_line_tables(void **state)
{
	/* 3.9 co_lnotab: (bytes, line) increments */
	static const uint8_t lnotab[] = {6, 1, 8, 2};
	/* 3.10: (bytes, line delta) pairs, -128 no line */
	static const uint8_t lt310[] = {4, 1, 2, 0x80, 6, 2};
	/* 3.11+: no columns +2 over 2 units; same line 1 unit; no location 1 unit; long form -1 */
	static const uint8_t loc[] = {0x80 | 13 << 3 | 1,
				      4,
				      0x80 | 0 << 3 | 0,
				      5,
				      0x80 | 15 << 3 | 0,
				      0x80 | 14 << 3 | 0,
				      3,
				      0,
				      1,
				      2};

	(void)state;
	assert_int_equal(py_addr2line(9, lnotab, sizeof(lnotab), 10, 0), 10);
	assert_int_equal(py_addr2line(9, lnotab, sizeof(lnotab), 10, 5), 10);
	assert_int_equal(py_addr2line(9, lnotab, sizeof(lnotab), 10, 6), 11);
	assert_int_equal(py_addr2line(9, lnotab, sizeof(lnotab), 10, 14), 13);
	assert_int_equal(py_addr2line(9, lnotab, sizeof(lnotab), 10, -1), 10);
	assert_int_equal(py_addr2line(10, lt310, sizeof(lt310), 10, 3), 11);
	assert_int_equal(py_addr2line(10, lt310, sizeof(lt310), 10, 4), 0);
	assert_int_equal(py_addr2line(10, lt310, sizeof(lt310), 10, 6), 13);
	assert_int_equal(py_addr2line(10, lt310, sizeof(lt310), 10, 12), 0);
	assert_int_equal(py_addr2line(11, loc, sizeof(loc), 10, 0), 12);
	assert_int_equal(py_addr2line(11, loc, sizeof(loc), 10, 1), 12);
	assert_int_equal(py_addr2line(11, loc, sizeof(loc), 10, 2), 12);
	assert_int_equal(py_addr2line(11, loc, sizeof(loc), 10, 3), 0);
	assert_int_equal(py_addr2line(11, loc, sizeof(loc), 10, 4), 11);
	assert_int_equal(py_addr2line(11, loc, sizeof(loc), 10, 5), 0);
	/* cut short: no crash, no line */
	assert_int_equal(py_addr2line(11, loc, 1, 10, 4), 0);
}

static void test_debug_offsets(void **state)
{
	static uint8_t buf[PY_DEBUG_OFFSETS_LEN];
	struct py_layout l;
	uint64_t v = 0x030d01f0;
	int minor;

	(void)state;
	assert_int_equal(pylayout_from_debug(buf, sizeof(buf), &l, &minor), -ENOENT);
	memcpy(buf, "xdebugpy", 8);
	memcpy(buf + 8, &v, 8);
	for (size_t off = 24; off + 8 <= sizeof(buf); off += 8) {
		uint64_t f = off / 8;

		memcpy(buf + off, &f, 8);
	}
	assert_int_equal(pylayout_from_debug(buf, sizeof(buf), &l, &minor), 0);
	assert_int_equal(minor, 13);
	/* each field from its own slot of 3.13's struct */
	assert_int_equal(l.rt_interp_head, 40 / 8);
	assert_int_equal(l.ts_frame, 184 / 8);
	assert_int_equal(l.fr_instr, 248 / 8);
	assert_int_equal(l.co_code, 344 / 8);
	assert_int_equal(l.un_ascii_size, 560 / 8);
	assert_int_equal(l.un_compact_size, 560 / 8 + 16);
	assert_int_equal(l.rt_main_thread, -1);
	v = 0x030f00a1;
	memcpy(buf + 8, &v, 8);
	assert_int_equal(pylayout_from_debug(buf, sizeof(buf), &l, &minor), -ENOTSUP);
	assert_int_equal(minor, 15);
	assert_null(pylayout_table(8));
	assert_non_null(pylayout_table(11));
}

static struct py_frame pf(const char *file, int line, const char *func, bool entry)
{
	struct py_frame f = {.line = line, .entry = entry};

	snprintf(f.file, sizeof(f.file), "%s", file);
	snprintf(f.func, sizeof(f.func), "%s", func);
	return f;
}

static void test_names(void **state)
{
	struct py_frame a = pf("/home/u/train.py", 142, "save_checkpoint", false);
	struct py_frame b =
		pf("/opt/venv/lib/python3.11/site-packages/torch/serialization.py", 652, "save", 0);
	struct py_frame c = pf("/usr/lib/python3.11/threading.py", 320, "wait", false);
	struct py_frame d = pf("<frozen importlib._bootstrap>", 0, "_find_and_load", false);
	struct py_thread t = {.nframes = 2};
	char buf[128];

	(void)state;
	assert_string_equal(py_frame_name(&a, buf, sizeof(buf)), "train.py:142 save_checkpoint");
	assert_string_equal(py_frame_name(&b, buf, sizeof(buf)), "torch/serialization.py:652 save");
	assert_string_equal(py_frame_name(&c, buf, sizeof(buf)), "threading.py:320 wait");
	assert_string_equal(py_frame_name(&d, buf, sizeof(buf)),
			    "<frozen importlib._bootstrap> _find_and_load");
	assert_true(py_frame_is_user(&a));
	assert_false(py_frame_is_user(&b));
	assert_false(py_frame_is_user(&c));
	assert_false(py_frame_is_user(&d));
	t.frames[0] = b;
	t.frames[1] = a;
	assert_ptr_equal(py_top_frame(&t), &t.frames[1]);
	t.frames[1] = c;
	assert_ptr_equal(py_top_frame(&t), &t.frames[0]);
	t.nframes = 0;
	assert_null(py_top_frame(&t));
}

static void native(struct thread_stack *st, const char *const *names, int n)
{
	memset(st, 0, sizeof(*st));
	for (int i = 0; i < n; i++) {
		const char *sym = strchr(names[i], ':') + 1;

		snprintf(st->frames[i].module, sizeof(st->frames[i].module), "%.*s",
			 (int)(sym - names[i] - 1), names[i]);
		snprintf(st->frames[i].symbol, sizeof(st->frames[i].symbol), "%s", sym);
	}
	st->nframes = n;
}

static void test_merge(void **state)
{
	/* 3.11: save() called from C (a hook), save_checkpoint and main in the outer run */
	static const char *const nat[] = {
		"/lib/libc.so.6:write",
		"/usr/lib/libpython3.11.so:_Py_write",
		"/usr/lib/libpython3.11.so:_PyEval_EvalFrameDefault",
		"/usr/lib/libpython3.11.so:_PyFunction_Vectorcall",
		"/opt/torch/libtorch_python.so:_ZN5torch4hookEv",
		"/usr/lib/libpython3.11.so:cfunction_call",
		"/usr/lib/libpython3.11.so:_PyEval_EvalFrameDefault",
		"/usr/lib/libpython3.11.so:Py_RunMain",
		"/lib/libc.so.6:__libc_start_main",
	};
	struct thread_stack st;
	struct py_thread py = {.nframes = 3};
	char buf[512];

	(void)state;
	native(&st, nat, 9);
	py.frames[0] =
		pf("/v/lib/python3.11/site-packages/torch/serialization.py", 652, "save", true);
	py.frames[1] = pf("/w/train.py", 142, "save_checkpoint", false);
	py.frames[2] = pf("/w/train.py", 200, "<module>", true);
	assert_true(py_merge_text(&st, &py, buf, sizeof(buf)));
	assert_string_equal(buf, "... -> train.py:142 save_checkpoint -> torch::hook -> "
				 "torch/serialization.py:652 save -> _Py_write -> write");
	/* one run of the eval loop more than the native stack has, which reached main: both */
	native(&st, nat, 9);
	st.frames[4] = st.frames[8];
	st.nframes = 5;
	assert_false(py_merge_text(&st, &py, buf, sizeof(buf)));
	assert_string_equal(buf, "python: ... -> train.py:142 save_checkpoint -> "
				 "torch/serialization.py:652 save; native: "
				 "_PyFunction_Vectorcall -> _PyEval_EvalFrameDefault -> _Py_write "
				 "-> write");
	/* the native unwind cut at its limit: the outer runs follow it */
	native(&st, nat, 3);
	st.nframes = STACK_MAX_FRAMES;
	for (int i = 3; i < STACK_MAX_FRAMES; i++)
		st.frames[i] = st.frames[0];
	st.frames[STACK_MAX_FRAMES - 1] = st.frames[2];
	assert_true(py_merge_text(&st, &py, buf, sizeof(buf)));
	assert_contains(buf, "... -> train.py:142 save_checkpoint -> write -> ");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_python),  cmocka_unit_test(test_not_python),
		cmocka_unit_test(test_not_permitted), cmocka_unit_test(test_line_tables),
		cmocka_unit_test(test_debug_offsets), cmocka_unit_test(test_names),
		cmocka_unit_test(test_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
