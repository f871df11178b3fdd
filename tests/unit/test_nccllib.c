// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nccl/dwoff.h"
#include "util/elfsym.h"
#include "nccl/nccllib.h"
#include "nccl/ncclsources.h"
#include "testutil.h"

/* A struct this test binary's own DWARF describes (tests are built with -g). */
typedef const char *nt_test_str;
struct nt_test_layout {
	char a;
	long b;
	int c[3];
	struct {
		short d;
	} inner;
	uint64_t e;
	volatile nt_test_str f; /* a pointer behind a qualifier and a typedef */
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

/* Does any other probe use this name? */
static bool name_used_elsewhere(int id, const char *sym)
{
	for (int k = 1; k < NT_P_MAX; k++)
		for (const struct nccl_sym_alt *a = nccl_probe(k)->alts; k != id && a->sym; a++)
			if (!strcmp(a->sym, sym))
				return true;
	return false;
}

static void test_probe_table(void **state)
{
	int core = 0;

	(void)state;
	for (int id = 1; id < NT_P_MAX; id++) {
		const struct nccl_probe_def *d = nccl_probe(id);

		assert_non_null(d);
		assert_int_equal(d->id, id);
		assert_non_null(d->alts[0].sym);
		for (const struct nccl_sym_alt *a = d->alts; a->sym; a++) {
			/* a mangled C++ name, or a public C API name */
			assert_true(strncmp(a->sym, "_Z", 2) == 0 ||
				    ((d->flags & NP_PUBLIC) && strncmp(a->sym, "nccl", 4) == 0));
			assert_false(name_used_elsewhere(id, a->sym));
			assert_true(a->from <= a->to);
			/* newest first, and the versions of two names never overlap */
			if (a > d->alts)
				assert_true(a->to < a[-1].from);
			/* a clone is matched by its base name: its number changes per build */
			assert_false(elfsym_is_clone(a->sym));
		}
		for (int k = id + 1; k < NT_P_MAX; k++)
			assert_string_not_equal(d->name, nccl_probe(k)->name);
		core += !!(d->flags & NP_CORE);
		/* only phases get a uretprobe; roles, retries and enqueue are entry-only */
		if (id >= NT_P_ROLE_PROXY_SERVICE || id == NT_P_CONNECT_RETRY ||
		    id == NT_P_ENQUEUE || id == NT_P_COMM_DESTROY || id == NT_P_COMM_ABORT)
			assert_false(d->flags & NP_RET);
		/* a clone's arguments are never trusted, so it is never a phase */
		if (d->flags & NP_CLONE)
			assert_false(d->flags & NP_RET);
		/*
		 * the table says which probes NCCL polls, and the BPF side counts exactly those
		 * (its return says when the run is done: a phase pair)
		 */
		assert_int_equal(!!(d->flags & NP_POLLED), !!nt_probe_polled(id));
		if (d->flags & NP_POLLED)
			assert_true(d->flags & NP_RET);
	}
	assert_true(nt_probe_polled(NT_P_NET_ACCEPT) && nt_probe_polled(NT_P_NET_CONNECT));
	assert_true(core >= 6);
	assert_null(nccl_probe(NT_P_MAX));
	assert_true(nt_probe_has_comm(NT_P_P2P_SETUP));
	assert_false(nt_probe_has_comm(NT_P_ENV));
	assert_true(nt_probe_api_init(NT_P_API_INIT_CONFIG));
	assert_false(nt_probe_api_init(NT_P_API_LAST_ERROR));
}

/*
 * Every mangled name in the table is what g++ makes of the signature it comes from
 * (tests/unit/nccl_sigs.cc, NCCL 2.18-2.30), and every signature there has its name here.
 */
static void test_names_match_signatures(void **state)
{
	char line[256], *names[128];
	int n = 0;
	FILE *f = fopen(NCCL_SIGS_NAMES, "r");

	(void)state;
	assert_non_null(f);
	while (n < 128 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		names[n++] = strdup(line);
	}
	fclose(f);
	assert_true(n >= 50);
	for (int id = 1; id < NT_P_MAX; id++)
		for (const struct nccl_sym_alt *a = nccl_probe(id)->alts; a->sym; a++) {
			bool found = !strncmp(a->sym, "nccl", 4); /* C names: not mangled */

			for (int i = 0; i < n && !found; i++)
				found = !strcmp(names[i], a->sym);
			if (!found)
				fail_msg("%s: no signature in nccl_sigs.cc mangles to it", a->sym);
		}
	for (int i = 0; i < n; i++) {
		bool found = false;

		for (int id = 1; id < NT_P_MAX && !found; id++)
			for (const struct nccl_sym_alt *a = nccl_probe(id)->alts; a->sym && !found;
			     a++)
				found = !strcmp(names[i], a->sym);
		if (!found)
			fail_msg("%s: a signature of nccl_sigs.cc the table does not have",
				 names[i]);
		free(names[i]);
	}
}

/* The row of src for fact */
static const struct nccl_source *source(const struct nccl_source *src, int n, const char *fact)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(src[i].fact, fact))
			return &src[i];
	fail_msg("no row %s", fact);
	return src;
}

/* What tells each fact: a wheel (symbols, DWARF), NVIDIA's stripped .deb, a 2.21 with DWARF */
static void test_sources(void **state)
{
	static struct nccl_lib lib;
	struct nccl_source src[NCCL_SOURCES_MAX];
	int n;

	(void)state;
	memset(&lib, 0, sizeof(lib));
	memset(&lib.offs, 0xff, sizeof(lib.offs)); /* every field unknown (-1) */
	lib.offs.lasterr_delta = 0;
	lib.has_symtab = true;
	lib.offs_src = OFFS_DWARF;
	for (int p = 1; p < NT_P_MAX; p++)
		lib.probe_off[p] = 0x1000 + p;
	lib.offs.comm_seq = 1075728;
	lib.offs.lasterr_delta = 4096;
	n = nccl_sources(&lib, 5, src);
	assert_true(n >= 8 && n <= NCCL_SOURCES_MAX);
	assert_contains(source(src, n, "phases")->how, "internal probes");
	assert_null(strstr(source(src, n, "phases")->how, "the first collectives"));
	assert_contains(source(src, n, "collective counts")->how,
			"comm->seqNumber, read from memory; nccltrace's profiler plugin");
	assert_contains(source(src, n, "warnings")->how, "with ncclLastError's text");
	assert_contains(source(src, n, "where a thread waits")->how, ".symtab");
	/* stripped to the API: no internal probe, no offsets */
	for (int p = 1; p < NT_P_MAX; p++)
		if (!nt_probe_api_coll(p) && !nt_probe_api_init(p) && p != NT_P_COMM_DESTROY &&
		    p != NT_P_COMM_ABORT && p != NT_P_API_LAST_ERROR)
			lib.probe_off[p] = 0;
	lib.offs_src = OFFS_NONE;
	lib.has_symtab = false;
	lib.offs.lasterr_delta = 0;
	n = nccl_sources(&lib, 5, src);
	assert_contains(source(src, n, "phases")->how, "the first collectives until they return");
	assert_contains(source(src, n, "phases")->how, "profiler plugin's API events");
	assert_string_equal(source(src, n, "collective counts")->how,
			    "nccltrace's profiler plugin");
	assert_false(source(src, n, "collective counts")->none);
	assert_true(source(src, n, "socket roles")->none);
	assert_null(strstr(source(src, n, "settings")->how, "getenv probe"));
	assert_contains(source(src, n, "where a thread waits")->how, "exported names only");
	/* 2.21 with DWARF: no seqNumber, no plugin API, the totals */
	for (int p = 1; p < NT_P_MAX; p++)
		lib.probe_off[p] = 0x1000 + p;
	lib.offs_src = OFFS_DWARF;
	lib.offs.comm_seq = -1;
	lib.offs.shres_collops = 784;
	n = nccl_sources(&lib, 0, src);
	assert_contains(source(src, n, "collective counts")->how,
			"comm->sharedRes->collOpCount (all functions together)");
	assert_null(strstr(source(src, n, "collective counts")->how, "plugin"));
	assert_string_equal(source(src, n, "collective arguments")->how,
			    "--collectives (ncclEnqueueCheck probe)");
	lib.probe_off[NT_P_ENQUEUE] = 0;
	n = nccl_sources(&lib, 0, src);
	assert_true(source(src, n, "collective arguments")->none);
	assert_string_equal(source(src, n, "collective arguments")->how, "none on this build");
}

static void test_version_code(void **state)
{
	(void)state;
	assert_int_equal(nccl_version_code("2.28.9"), 22809);
	assert_int_equal(nccl_version_code("2.18.6"), 21806);
	assert_int_equal(nccl_version_code("2.30"), 23000);
	assert_int_equal(nccl_version_code(""), 0);
	assert_int_equal(nccl_version_code("abc"), 0);
	assert_int_equal(nccl_version_code("2.280.1"), 0);
	assert_int_equal(nccl_version_code(NULL), 0);
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
		{"no_such_struct", "a", 0}, {"nt_test_layout", "f", 0},
	};
	char err[256];

	(void)state;
	assert_int_equal(dwoff_resolve("/proc/self/exe", r, 8, err, sizeof(err)), 6);
	assert_int_equal(r[0].offset, offsetof(struct nt_test_layout, a));
	assert_int_equal(r[1].offset, offsetof(struct nt_test_layout, b));
	assert_int_equal(r[2].offset, offsetof(struct nt_test_layout, c));
	assert_int_equal(r[3].offset, offsetof(struct nt_test_layout, inner));
	assert_int_equal(r[4].offset, offsetof(struct nt_test_layout, e));
	assert_int_equal(r[5].offset, -1);
	assert_int_equal(r[6].offset, -1);
	assert_false(r[0].is_ptr);
	assert_false(r[2].is_ptr);
	assert_int_equal(r[7].offset, offsetof(struct nt_test_layout, f));
	assert_true(r[7].is_ptr);
	assert_true(dwoff_resolve("/etc/hostname", r, 1, err, sizeof(err)) < 0);
}

/*
 * The fake NCCL's 2.30.7 build (tests/fixtures/fixtures.mk): from 2.29 ncclSocket's fd is named
 * socketDescriptor (include/socket.h at v2.29.7-1 and v2.30.7-1); the other fields keep their
 * names. Every offset must come from its DWARF, the socket's fd (at 0) too.
 */
static void test_offsets_230(void **state)
{
	struct nccl_lib lib;
	char err[256];

	(void)state;
	if (access(FAKENCCL_230_LIB, R_OK)) {
		print_message("test_offsets_230: %s not built (make builds it)\n",
			      FAKENCCL_230_LIB);
		skip();
	}
	assert_int_equal(nccllib_open(FAKENCCL_230_LIB, NULL, &lib, err, sizeof(err)), 0);
	assert_string_equal(lib.version, "2.30.7");
	assert_int_equal(lib.offs_src, OFFS_DWARF);
	/* the fake's layout (tests/fixtures/fakenccl.h: its _Static_asserts) */
	assert_int_equal(lib.offs.sock_fd, 0);
	assert_int_equal(lib.offs.sock_addr, 12);
	assert_int_equal(lib.offs.sock_state, 52);
	assert_int_equal(lib.offs.sock_type, 72);
	assert_int_equal(lib.offs.comm_hash, 0x1044c8);
	assert_int_equal(lib.offs.comm_rank, 0x1044d0);
	assert_int_equal(lib.offs.comm_nranks, 0x1044d4);
	assert_int_equal(lib.offs.comm_seq, 0x106a10);
	assert_int_equal(lib.offs.comm_endmagic, 1082960);
	assert_int_equal(lib.offs.info_comm, 56);
	assert_int_equal(lib.offs.bstate_rank, 476);
	assert_int_equal(lib.offs.ibh_stage, 40);
	assert_int_equal(lib.offs.iblc_stage, 104);
	/* a pointer to the stage from 2.29: the probe reads through it */
	assert_int_equal(lib.offs.iblc_stage_ptr, 1);
	/* 2.23+ counts in seqNumber: 2.18-2.22's shared counter is not in this build */
	assert_int_equal(lib.offs.shres_collops, -1);
}

/* The cache keeps what the DWARF said, the stage's pointer flag too; 2.28.9 has none */
static void test_offsets_cache(void **state)
{
	struct nccl_lib lib, again;
	char dir[] = "/tmp/nccltrace-test-XXXXXX", path[128], err[256];

	(void)state;
	if (access(FAKENCCL_230_LIB, R_OK) || access(FAKENCCL_LIB, R_OK)) {
		print_message("test_offsets_cache: the fake NCCL is not built (make builds it)\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	assert_int_equal(nccllib_open(FAKENCCL_230_LIB, dir, &lib, err, sizeof(err)), 0);
	assert_int_equal(lib.offs_src, OFFS_DWARF);
	assert_int_equal(nccllib_open(FAKENCCL_230_LIB, dir, &again, err, sizeof(err)), 0);
	assert_int_equal(again.offs_src, OFFS_CACHE);
	assert_memory_equal(&again.offs, &lib.offs, sizeof(lib.offs));
	assert_int_equal(again.offs.iblc_stage_ptr, 1);
	snprintf(path, sizeof(path), "%s/%s.offsets", dir, lib.build_id);
	assert_int_equal(unlink(path), 0);

	assert_int_equal(nccllib_open(FAKENCCL_LIB, dir, &lib, err, sizeof(err)), 0);
	assert_int_equal(lib.offs_src, OFFS_DWARF);
	assert_int_equal(lib.offs.sock_fd, 0);
	assert_int_equal(lib.offs.iblc_stage, 104);
	assert_int_equal(lib.offs.iblc_stage_ptr, 0);
	assert_int_equal(nccllib_open(FAKENCCL_LIB, dir, &again, err, sizeof(err)), 0);
	assert_int_equal(again.offs_src, OFFS_CACHE);
	assert_memory_equal(&again.offs, &lib.offs, sizeof(lib.offs));
	snprintf(path, sizeof(path), "%s/%s.offsets", dir, lib.build_id);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_in_maps),
		cmocka_unit_test(test_probe_table),
		cmocka_unit_test(test_names_match_signatures),
		cmocka_unit_test(test_version_code),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_is_clone),
		cmocka_unit_test(test_elf_self),
		cmocka_unit_test(test_dwarf_offsets),
		cmocka_unit_test(test_offsets_230),
		cmocka_unit_test(test_offsets_cache),
	};

	return cmocka_run_group_tests_name("nccllib", tests, NULL, NULL);
}
