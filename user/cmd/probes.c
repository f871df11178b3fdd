// SPDX-License-Identifier: MIT
/* `nccltrace probes [--no-cache] LIB`: what nccltrace can probe in an NCCL (or verbs) library. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/subcmds.h"
#include "nccl/nccllib.h"
#include "nccl/ncclprof.h"
#include "nccl/ncclsources.h"
#include "nccl/verbsoffs.h"

/* Each probe: resolved or missing, its file offset, its symbol. */
static void print_probes(const struct nccl_lib *lib)
{
	printf("\n%-20s %-8s %-10s %s\n", "probe", "status", "offset", "symbol");
	for (int id = 1; id < NT_P_MAX; id++) {
		const struct nccl_probe_def *d = nccl_lib_probe(lib, id);
		char st[16];

		if (!d)
			continue;
		snprintf(st, sizeof(st), "%s", lib->probe_off[id] ? "ok" : "missing");
		printf("%-20s %-8s 0x%-8llx %s%s%s%s%s\n", d->name, st,
		       (unsigned long long)lib->probe_off[id], lib->probe_sym[id],
		       d->flags & NP_CORE ? " [core]" : "",
		       d->flags & NP_OPTIN ? " [--collectives]" : "",
		       d->flags & NP_POLLED ? " [polled: counted]" : "",
		       lib->probe_dups[id] > 1 ? " [duplicate name: lowest address]" : "");
	}
}

/* The struct fields the probes read, and where their offsets came from. */
static void print_offsets(const struct nccl_lib *lib)
{
	if (lib->offs_src == OFFS_HEADER) {
		struct nt_verbs_offsets vo;
		static const char *const names[] = {
			"ibv_qp.qp_num",
			"ibv_qp.context",
			"ibv_context.device",
			"ibv_device.name",
			"ibv_qp_attr.qp_state",
			"ibv_qp_attr.path_mtu",
			"ibv_qp_attr.dest_qp_num",
			"ibv_qp_attr.timeout",
			"ibv_qp_attr.retry_cnt",
			"ibv_qp_attr.rnr_retry",
			"ibv_qp_attr.min_rnr_timer",
			"ibv_qp_attr.ah_attr.grh.sgid_index",
			"ibv_qp_attr.ah_attr.port_num",
			"ibv_qp_attr.ah_attr.dlid",
			"ibv_qp_attr.ah_attr.grh.dgid",
			"ibv_async_event.element",
			"ibv_async_event.event_type",
		};

		verbs_offsets_fill(&vo);
		printf("\n%-36s %s\n", "field", "offset");
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			printf("%-36s %d\n", names[i], ((const __s32 *)&vo)[i]);
	} else if (lib->offs_src != OFFS_NONE) {
		printf("\n%-32s %s\n", "field", "offset");
		for (int i = 0; nccllib_offset_field(i); i++)
			printf("%-32s %d%s\n", nccllib_offset_field(i),
			       ((const __s32 *)&lib->offs)[i],
			       &((const __s32 *)&lib->offs)[i] == &lib->offs.iblc_stage &&
					       lib->offs.iblc_stage_ptr
				       ? " (a pointer to it: read through)"
				       : "");
	}
}

/* Whether the library has the profiler plugin API, and so what nccltrace's plugin gives. */
static void print_profiler(const char *path)
{
	int api = ncclprof_lib_api(path);

	if (api > 0)
		printf("profiler:  plugin API v%d (ncclProfiler_v%d first): collective counts and "
		       "arguments come from nccltrace's profiler plugin, on any build\n",
		       api, api);
	else if (api == 0)
		printf("profiler:  no plugin API (NCCL before 2.23): collective counts only from "
		       "comm->sharedRes->collOpCount (all functions together) where its offsets "
		       "are known\n");
	else
		printf("profiler:  unknown (%s)\n", strerror(-api));
}

/* What tells each fact on this build: the sources, best first */
static void print_sources(const struct nccl_lib *lib, const char *path)
{
	struct nccl_source src[NCCL_SOURCES_MAX];
	int n = nccl_sources(lib, ncclprof_lib_api(path), src);

	printf("\nsources (what tells each fact on this build, best first):\n");
	for (int i = 0; i < n; i++)
		printf("  %-22s %s\n", src[i].fact, src[i].how);
}

int probes_main(int argc, char **argv)
{
	struct nccl_lib lib;
	const char *path = NULL;
	bool no_cache = false;
	char err[512];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(cli_probes_help, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--no-cache")) {
			no_cache = true;
		} else if (argv[i][0] == '-') {
			fprintf(stderr,
				"nccltrace: unknown option '%s' (see nccltrace probes --help)\n",
				argv[i]);
			return EXIT_USAGE;
		} else if (path) {
			fprintf(stderr, "nccltrace: one library at a time\n");
			return EXIT_USAGE;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		fprintf(stderr, "nccltrace: no library given (usage: nccltrace probes LIB)\n");
		return EXIT_USAGE;
	}
	if (access(path, R_OK)) {
		fprintf(stderr, "nccltrace: cannot read %s: %s\n", path, strerror(errno));
		return EXIT_NOINPUT;
	}
	if (nccllib_open(path, no_cache ? NULL : nccllib_cache_dir(), &lib, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_DATAERR;
	}
	printf("library:   %s\n", lib.path);
	if (lib.offs.lib_kind == NT_LIB_VERBS)
		printf("kind:      libibverbs (verbs probes; NCCL's own calls are probed in "
		       "libnccl's wrap_ibv_* functions)\n");
	else
		printf("version:   %s\n", lib.version[0] ? lib.version : "unknown");
	printf("build-id:  %s\n", lib.build_id[0] ? lib.build_id : "none");
	printf("symbols:   %s\n",
	       lib.has_symtab ? ".symtab and .dynsym" : ".dynsym only (stripped)");
	printf("offsets:   %s%s\n", nccl_offsets_source_name(lib.offs_src),
	       lib.offs_src == OFFS_NONE ? " (arguments only: no socket, comm or collective fields)"
					 : "");
	if (lib.offs.lib_kind != NT_LIB_VERBS)
		printf("warnings:  %s\n",
		       lib.offs.lasterr_delta
			       ? "ncclLastError found: WARN text is captured"
			       : "ncclLastError not found: warnings are counted, text lost");
	if (lib.offs.lib_kind != NT_LIB_VERBS) {
		print_profiler(path);
		print_sources(&lib, path);
	}
	print_probes(&lib);
	print_offsets(&lib);
	if (lib.missing_core) {
		printf(lib.offs.lib_kind == NT_LIB_VERBS
			       ? "\n%d core probe%s missing: queue pairs will be incomplete\n"
			       : "\n%d core probe%s missing: NCCL phases will be incomplete\n",
		       lib.missing_core, lib.missing_core == 1 ? "" : "s");
		return 1;
	}
	return 0;
}
