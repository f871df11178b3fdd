// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "dwoff.h"
#include "elfsym.h"
#include "nccllib.h"

/* A struct this test binary's own DWARF describes (tests are built with -g). */
struct nt_test_layout {
	char a;
	long b;
	int c[3];
	struct {
		short d;
	} inner;
	uint64_t e;
};

/* keep the type in the DWARF */
struct nt_test_layout nt_test_layout_instance;

__attribute__((noinline)) int nt_test_function(int x)
{
	return x + nt_test_layout_instance.c[0];
}

static void test_find_in_maps(void **state)
{
	char path[256];
	const char *maps =
		"55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 131 /usr/bin/python3.11\n"
		"7f10a0000000-7f10a0021000 rw-p 00000000 00:00 0 \n"
		"7f10b0000000-7f10b0400000 r--p 00000000 fd:01 77 /opt/venv/lib/python3.11/"
		"site-packages/nvidia/nccl/lib/libnccl.so.2\n"
		"7f10c0000000-7f10c0001000 r--p 00000000 fd:01 78 "
		"/usr/lib/x86_64-linux-gnu/libc.so.6\n";

	(void)state;
	assert_int_equal(nccllib_find_in_maps(maps, path, sizeof(path)), 0);
	assert_string_equal(path,
			    "/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2");
	/* a name that merely contains "nccl" is not the library */
	assert_int_not_equal(
		nccllib_find_in_maps("7f-7f r-xp 0 fd:01 5 /usr/lib/libmynccl.so\n"
				     "7f-7f r-xp 0 fd:01 6 /usr/lib/libncclx_helper.so\n",
				     path, sizeof(path)),
		0);
	assert_string_equal(path, "");
	/* libnccl.so without version, last line without a newline */
	assert_int_equal(
		nccllib_find_in_maps("7f-7f r-xp 0 fd:01 5 /x/libnccl.so", path, sizeof(path)), 0);
	assert_string_equal(path, "/x/libnccl.so");
	assert_int_not_equal(nccllib_find_in_maps("", path, sizeof(path)), 0);
	/* a path longer than the buffer is not cut short */
	assert_int_not_equal(nccllib_find_in_maps(maps, path, 20), 0);
}

static void test_probe_table(void **state)
{
	int core = 0;

	(void)state;
	for (int id = 1; id < NT_P_MAX; id++) {
		const struct nccl_probe_def *d = nccl_probe(id);

		assert_non_null(d);
		assert_int_equal(d->id, id);
		/* every symbol is a mangled C++ name or a public C API name */
		assert_true(strncmp(d->sym, "_Z", 2) == 0 || strncmp(d->sym, "nccl", 4) == 0);
		for (int k = id + 1; k < NT_P_MAX; k++) {
			assert_string_not_equal(d->name, nccl_probe(k)->name);
			assert_string_not_equal(d->sym, nccl_probe(k)->sym);
		}
		core += !!(d->flags & NP_CORE);
		/* only phases get a uretprobe; roles, retries and enqueue are entry-only */
		if (id >= NT_P_ROLE_PROXY_SERVICE || id == NT_P_CONNECT_RETRY ||
		    id == NT_P_ENQUEUE || id == NT_P_COMM_DESTROY || id == NT_P_COMM_ABORT)
			assert_false(d->flags & NP_RET);
		/* a clone's arguments are never trusted, so it is never a phase */
		if (d->flags & NP_CLONE) {
			assert_true(elfsym_is_clone(d->sym));
			assert_false(d->flags & NP_RET);
		}
	}
	assert_true(core >= 6);
	assert_null(nccl_probe(NT_P_MAX));
	assert_true(nt_probe_has_comm(NT_P_P2P_SETUP));
	assert_false(nt_probe_has_comm(NT_P_ENV));
}

static void test_is_clone(void **state)
{
	(void)state;
	assert_true(
		elfsym_is_clone("_ZL10sendToRootP19ncclBootstrapHandleP8ncclCommP7extInfo.isra.5"));
	assert_true(elfsym_is_clone("_Z12ncclDebugLog17ncclDebugLogLevelmPKciS1_z.cold.4"));
	assert_true(elfsym_is_clone("foo.constprop.0"));
	assert_true(elfsym_is_clone("_ZL18socketConnectCheckP10ncclSocketiPKc.part.2"));
	assert_false(elfsym_is_clone("_Z17ncclSocketConnectP10ncclSocket"));
	assert_false(elfsym_is_clone("ncclAllReduce"));
}

static void test_elf_self(void **state)
{
	struct elf_lib *l;
	struct elf_sym s[2];
	char err[256];

	(void)state;
	assert_int_equal(elflib_open("/proc/self/exe", &l, err, sizeof(err)), 0);
	assert_true(elflib_has_symtab(l));
	assert_true(elflib_has_dwarf(l));
	assert_int_equal(elflib_find(l, "nt_test_function", s, 2), 1);
	assert_true(s[0].func);
	assert_true(s[0].offset > 0);
	assert_int_equal(elflib_find(l, "no_such_function_here", s, 2), 0);
	assert_int_equal(elflib_find_object(l, "nt_test_layout_instance", s), 0);
	assert_false(s[0].func);
	elflib_close(l);

	assert_int_not_equal(elflib_open("/etc/hostname", &l, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "not an ELF"));
	assert_int_not_equal(elflib_open("/nonexistent", &l, err, sizeof(err)), 0);
}

static void test_dwarf_offsets(void **state)
{
	struct dwoff_req r[] = {
		{"nt_test_layout", "a", 0}, {"nt_test_layout", "b", 0},
		{"nt_test_layout", "c", 0}, {"nt_test_layout", "inner", 0},
		{"nt_test_layout", "e", 0}, {"nt_test_layout", "nope", 0},
		{"no_such_struct", "a", 0},
	};
	char err[256];

	(void)state;
	assert_int_equal(dwoff_resolve("/proc/self/exe", r, 7, err, sizeof(err)), 5);
	assert_int_equal(r[0].offset, offsetof(struct nt_test_layout, a));
	assert_int_equal(r[1].offset, offsetof(struct nt_test_layout, b));
	assert_int_equal(r[2].offset, offsetof(struct nt_test_layout, c));
	assert_int_equal(r[3].offset, offsetof(struct nt_test_layout, inner));
	assert_int_equal(r[4].offset, offsetof(struct nt_test_layout, e));
	assert_int_equal(r[5].offset, -1);
	assert_int_equal(r[6].offset, -1);
	assert_true(dwoff_resolve("/etc/hostname", r, 1, err, sizeof(err)) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_in_maps),  cmocka_unit_test(test_probe_table),
		cmocka_unit_test(test_is_clone),      cmocka_unit_test(test_elf_self),
		cmocka_unit_test(test_dwarf_offsets),
	};

	return cmocka_run_group_tests_name("nccllib", tests, NULL, NULL);
}
