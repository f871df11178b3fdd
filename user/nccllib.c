// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "dwoff.h"
#include "elfsym.h"
#include "nccllib.h"
#include "verbsoffs.h"

/* Mangled names checked against libnccl.so.2 2.28.9 (reference/nccl-internals.md). */
static const struct nccl_probe_def defs[] = {
	{NT_P_COMM_INIT, "comm_init", "_ZL20ncclCommInitRankFuncP12ncclAsyncJob", "init",
	 NP_RET | NP_CORE},
	{NT_P_BOOTSTRAP_INIT, "bootstrap_init", "_Z13bootstrapInitiPvP8ncclComm", "bootstrap",
	 NP_RET | NP_CORE},
	{NT_P_BOOTSTRAP_SPLIT, "bootstrap_split", "_Z14bootstrapSplitmP8ncclCommS0_iiPi",
	 "bootstrap (split)", NP_RET},
	{NT_P_ALLGATHER, "bootstrap_allgather", "_Z18bootstrapAllGatherPvS_i",
	 "bootstrap allgather", NP_RET},
	{NT_P_BOOTSTRAP_SEND, "bootstrap_send", "_Z13bootstrapSendPviiS_i", "bootstrap send",
	 NP_RET},
	{NT_P_BOOTSTRAP_RECV, "bootstrap_recv", "_Z13bootstrapRecvPviiS_i", "bootstrap recv",
	 NP_RET},
	{NT_P_INIT_TRANSPORTS, "init_transports", "_ZL18initTransportsRankP8ncclCommS0_Pm",
	 "transport init", NP_RET},
	{NT_P_TOPO_GET, "topo_get_system", "_Z17ncclTopoGetSystemP8ncclCommPP14ncclTopoSystemPKc",
	 "topology", NP_RET},
	{NT_P_TOPO_COMPUTE, "topo_compute", "_Z15ncclTopoComputeP14ncclTopoSystemP13ncclTopoGraph",
	 "topology search", NP_RET},
	{NT_P_RING_CONNECT, "ring_connect", "_Z24ncclTransportRingConnectP8ncclComm", "ring setup",
	 NP_RET | NP_CORE},
	{NT_P_TREE_CONNECT, "tree_connect", "_Z24ncclTransportTreeConnectP8ncclComm", "tree setup",
	 NP_RET},
	{NT_P_P2P_SETUP, "p2p_setup", "_Z21ncclTransportP2pSetupP8ncclCommP13ncclTopoGraphi",
	 "transport setup", NP_RET | NP_CORE},
	{NT_P_PROXY_CONNECT, "proxy_connect",
	 "_Z16ncclProxyConnectP8ncclCommiiiP18ncclProxyConnector", "proxy connect", NP_RET},
	{NT_P_PROXY_CALL, "proxy_call",
	 "_Z21ncclProxyCallBlockingP8ncclCommP18ncclProxyConnectoriPviS3_i", "proxy call", NP_RET},
	{NT_P_SOCKET_CONNECT, "socket_connect", "_Z17ncclSocketConnectP10ncclSocket",
	 "socket connect", NP_RET | NP_CORE},
	{NT_P_SOCKET_ACCEPT, "socket_accept", "_Z16ncclSocketAcceptP10ncclSocketS0_",
	 "socket accept", NP_RET | NP_CORE},
	{NT_P_CONNECT_RETRY, "connect_retry", "_ZL18socketConnectCheckP10ncclSocketiPKc.part.2",
	 NULL, NP_CLONE},
	{NT_P_NET_CONNECT, "net_socket_connect",
	 "_Z20ncclNetSocketConnectPviS_PS_PP24ncclNetDeviceHandle_v7_t", "net connect", NP_RET},
	{NT_P_NET_ACCEPT, "net_socket_accept",
	 "_Z19ncclNetSocketAcceptPvPS_PP24ncclNetDeviceHandle_v7_t", "net accept", NP_RET},
	{NT_P_ENV, "env", "_Z19ncclEnvPluginGetEnvPKc", NULL, NP_RET | NP_CORE},
	{NT_P_DEBUG_LOG, "debug_log", "_Z12ncclDebugLog17ncclDebugLogLevelmPKciS1_z", NULL,
	 NP_RET | NP_CORE},
	{NT_P_ENQUEUE, "enqueue", "_Z16ncclEnqueueCheckP8ncclInfo", NULL, NP_OPTIN},
	/* public C API (weak aliases of pnccl*): the last collective counts before the free */
	{NT_P_COMM_DESTROY, "comm_destroy", "ncclCommDestroy", NULL, 0},
	{NT_P_COMM_ABORT, "comm_abort", "ncclCommAbort", NULL, 0},
	/* the IB transport: re-entrant state machines the proxy calls until the QPs are up */
	{NT_P_IB_CONNECT, "ib_connect", "_Z13ncclIbConnectPviS_PS_PP24ncclNetDeviceHandle_v7_t",
	 "ib connect", NP_RET},
	{NT_P_IB_ACCEPT, "ib_accept", "_Z12ncclIbAcceptPvPS_PP24ncclNetDeviceHandle_v7_t",
	 "ib accept", NP_RET},
	/* verbs through NCCL's wrappers (ibvwrap.cc): attached with the library, never late */
	{NT_P_IBV_OPEN_DEVICE, "ibv_open_device",
	 "_Z20wrap_ibv_open_devicePP11ibv_contextP10ibv_device", NULL, NP_RET},
	{NT_P_IBV_CREATE_QP, "ibv_create_qp",
	 "_Z18wrap_ibv_create_qpPP6ibv_qpP6ibv_pdP16ibv_qp_init_attr", NULL, NP_RET},
	{NT_P_IBV_MODIFY_QP, "ibv_modify_qp", "_Z18wrap_ibv_modify_qpP6ibv_qpP11ibv_qp_attri", NULL,
	 NP_RET},
	{NT_P_IBV_DESTROY_QP, "ibv_destroy_qp", "_Z19wrap_ibv_destroy_qpP6ibv_qp", NULL, NP_RET},
	{NT_P_IBV_REG_MR, "ibv_reg_mr", "_Z15wrap_ibv_reg_mrPP6ibv_mrP6ibv_pdPvmi", NULL, NP_RET},
	{NT_P_IBV_ASYNC_EVENT, "ibv_get_async_event",
	 "_Z24wrap_ibv_get_async_eventP11ibv_contextP15ibv_async_event", NULL, NP_RET},
	{NT_P_ROLE_PROXY_SERVICE, "role_proxy_service", "_Z16ncclProxyServicePv", NULL, 0},
	{NT_P_ROLE_PROXY_PROGRESS, "role_proxy_progress", "_Z17ncclProxyProgressPv", NULL, 0},
	{NT_P_ROLE_BOOTSTRAP_ROOT, "role_bootstrap_root", "_ZL13bootstrapRootPv", NULL, 0},
	{NT_P_ROLE_IB_ASYNC, "role_ib_async", "_ZL21ncclIbAsyncThreadMainPv", NULL, 0},
	{NT_P_ROLE_NET_SOCKET, "role_net_socket", "_Z22persistentSocketThreadPv", NULL, 0},
};

/*
 * libibverbs' own exported functions (default versions, IBVERBS_1.1: what dlvsym gives NCCL),
 * for verbs users other than NCCL; calls made through NCCL's wrappers are told once. Not
 * ibv_post_send or ibv_poll_cq: inline calls into the provider (libmlx5), millions a second.
 */
static const struct nccl_probe_def verbs_defs[] = {
	{NT_P_IBV_OPEN_DEVICE, "ibv_open_device", "ibv_open_device", NULL, NP_RET | NP_CORE},
	{NT_P_IBV_CREATE_QP, "ibv_create_qp", "ibv_create_qp", NULL, NP_RET | NP_CORE},
	{NT_P_IBV_MODIFY_QP, "ibv_modify_qp", "ibv_modify_qp", NULL, NP_RET | NP_CORE},
	{NT_P_IBV_DESTROY_QP, "ibv_destroy_qp", "ibv_destroy_qp", NULL, NP_RET | NP_CORE},
	{NT_P_IBV_REG_MR, "ibv_reg_mr", "ibv_reg_mr", NULL, NP_RET},
	{NT_P_IBV_ASYNC_EVENT, "ibv_get_async_event", "ibv_get_async_event", NULL,
	 NP_RET | NP_CORE},
};

const struct nccl_probe_def *nccl_lib_probe(const struct nccl_lib *lib, enum nt_probe id)
{
	if (lib->offs.lib_kind != NT_LIB_VERBS)
		return nccl_probe(id);
	for (size_t i = 0; i < sizeof(verbs_defs) / sizeof(verbs_defs[0]); i++)
		if (verbs_defs[i].id == id)
			return &verbs_defs[i];
	return NULL;
}

const struct nccl_probe_def *nccl_probe(enum nt_probe id)
{
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (defs[i].id == id)
			return &defs[i];
	return NULL;
}

const char *nccl_offsets_source_name(enum nccl_offsets_source s)
{
	switch (s) {
	case OFFS_DWARF:
		return "DWARF";
	case OFFS_CACHE:
		return "DWARF (cached)";
	case OFFS_TABLE:
		return "built-in table";
	case OFFS_HEADER:
		return "<infiniband/verbs.h>";
	default:
		return "none";
	}
}

/* The struct fields the probes read, in the order of struct nt_nccl_offsets' s32 members. */
static const struct {
	const char *type, *member;
} fields[] = {
	{"ncclSocket", "fd"},	 {"ncclSocket", "addr"},     {"ncclSocket", "state"},
	{"ncclSocket", "type"},	 {"ncclComm", "commHash"},   {"ncclComm", "rank"},
	{"ncclComm", "nRanks"},	 {"ncclComm", "seqNumber"},  {"ncclInfo", "coll"},
	{"ncclInfo", "count"},	 {"ncclInfo", "datatype"},   {"ncclInfo", "root"},
	{"ncclInfo", "comm"},	 {"bootstrapState", "rank"}, {"bootstrapState", "nranks"},
	{"ncclTopoGraph", "id"}, {"ncclIbHandle", "stage"},  {"ncclIbListenComm", "stage"},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
_Static_assert(NFIELDS * 4 == offsetof(struct nt_nccl_offsets, lasterr_delta),
	       "fields[] follows struct nt_nccl_offsets");

static __s32 *offs_slot(struct nt_nccl_offsets *o, size_t i)
{
	return &((__s32 *)o)[i];
}

/* Verified against the DWARF of these builds (`nccltrace probes` prints the same values). */
static const struct {
	const char *build_id;
	__s32 v[NFIELDS];
} known[] = {
	/* libnccl.so.2 2.28.9+cuda13.0, CUDA 13.0 toolkit and the nvidia-nccl-cu13 wheel */
	{"9fcf74d93a8c3605bf7718f594d0a24366e38536",
	 {0, 12, 52, 72, 0x1044c8, 0x1044d0, 0x1044d4, 0x106a10, 0, 32, 40, 48, 56, 476, 480, 0, 40,
	  104}},
};

const char *nccllib_cache_dir(void)
{
	const char *d = getenv("NCCLTRACE_CACHE_DIR");

	return d && *d ? d : "/var/cache/nccltrace";
}

static void cache_path(const char *dir, const char *build_id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.offsets", dir, build_id);
}

static int cache_load(const char *dir, struct nccl_lib *lib)
{
	char path[PATH_MAX + 64], type[64], member[64];
	long v;
	int n = 0;
	FILE *f;

	cache_path(dir, lib->build_id, path, sizeof(path));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%63[^.].%63s %ld\n", type, member, &v) == 3) {
		for (size_t i = 0; i < NFIELDS; i++) {
			if (!strcmp(fields[i].type, type) && !strcmp(fields[i].member, member)) {
				*offs_slot(&lib->offs, i) = (__s32)v;
				n++;
			}
		}
	}
	fclose(f);
	return n == (int)NFIELDS ? 0 : -EINVAL;
}

/* Written to a temporary file and renamed: readers never see half a cache entry. */
static void cache_store(const char *dir, const struct nccl_lib *lib)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
	FILE *f;
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return;
	cache_path(dir, lib->build_id, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	for (size_t i = 0; i < NFIELDS; i++)
		fprintf(f, "%s.%s %d\n", fields[i].type, fields[i].member,
			((const __s32 *)&lib->offs)[i]);
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

static void resolve_offsets(struct nccl_lib *lib, const char *cache_dir)
{
	struct dwoff_req req[NFIELDS];
	char err[256];

	for (size_t i = 0; i < NFIELDS; i++)
		*offs_slot(&lib->offs, i) = -1;
	if (lib->build_id[0] && cache_dir && cache_load(cache_dir, lib) == 0) {
		lib->offs_src = OFFS_CACHE;
		return;
	}
	if (lib->has_dwarf) {
		for (size_t i = 0; i < NFIELDS; i++) {
			req[i].type = fields[i].type;
			req[i].member = fields[i].member;
		}
		/* the socket and comm fields are what the probes need most: require those */
		if (dwoff_resolve(lib->path, req, NFIELDS, err, sizeof(err)) > 0 &&
		    req[0].offset >= 0 && req[5].offset >= 0) {
			for (size_t i = 0; i < NFIELDS; i++)
				*offs_slot(&lib->offs, i) = (__s32)req[i].offset;
			lib->offs_src = OFFS_DWARF;
			if (lib->build_id[0] && cache_dir)
				cache_store(cache_dir, lib);
			return;
		}
	}
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
		if (strcmp(known[k].build_id, lib->build_id) == 0) {
			for (size_t i = 0; i < NFIELDS; i++)
				*offs_slot(&lib->offs, i) = known[k].v[i];
			lib->offs_src = OFFS_TABLE;
			return;
		}
	}
	lib->offs_src = OFFS_NONE;
}

int nccllib_open(const char *path, const char *cache_dir, struct nccl_lib *lib, char *err,
		 size_t errlen)
{
	struct elf_lib *el;
	struct elf_sym syms[4], dbg, last;
	char ver[128];
	int rc;

	memset(lib, 0, sizeof(*lib));
	snprintf(lib->path, sizeof(lib->path), "%s", path);
	rc = elflib_open(path, &el, err, errlen);
	if (rc)
		return rc;
	snprintf(lib->build_id, sizeof(lib->build_id), "%s", elflib_build_id(el));
	lib->has_symtab = elflib_has_symtab(el);
	lib->has_dwarf = elflib_has_dwarf(el);
	if (elflib_find_string(el, "NCCL version ", ver, sizeof(ver)) == 0)
		sscanf(ver + strlen("NCCL version "), "%63[0-9.]", lib->version);
	lib->offs.lib_kind = nccllib_is_verbs(path) ? NT_LIB_VERBS : NT_LIB_NCCL;
	for (int id = 1; id < NT_P_MAX; id++) {
		const struct nccl_probe_def *d = nccl_lib_probe(lib, id);
		int n = d ? elflib_find(el, d->sym, syms, 4) : 0;

		lib->probe_dups[id] = n;
		if (n > 0) {
			/* duplicate static names: the lowest address, reported as ambiguous */
			lib->probe_off[id] = syms[0].offset;
			lib->resolved++;
		} else if (d && (d->flags & NP_CORE)) {
			lib->missing_core++;
		}
	}
	if (lib->offs.lib_kind == NT_LIB_VERBS) {
		elflib_close(el);
		if (!lib->resolved) {
			snprintf(err, errlen, "%s: no verbs functions found", path);
			return -ENOENT;
		}
		/* its structs are <infiniband/verbs.h>'s: the programs have them already */
		lib->offs_src = OFFS_HEADER;
		return 0;
	}
	/* WARN text lands in the global ncclLastError: reach it from ncclDebugLog's address */
	if (elflib_find(el, nccl_probe(NT_P_DEBUG_LOG)->sym, &dbg, 1) > 0 &&
	    elflib_find_object(el, "ncclLastError", &last) == 0)
		lib->offs.lasterr_delta = (__s64)last.vaddr - (__s64)dbg.vaddr;
	elflib_close(el);
	if (lib->resolved == 0 && !lib->version[0]) {
		snprintf(err, errlen,
			 "%s: no NCCL functions or version string found: not NCCL, or "
			 "stripped of its symbols",
			 path);
		return -ENOENT;
	}
	{
		__s64 delta = lib->offs.lasterr_delta;

		resolve_offsets(lib, cache_dir);
		lib->offs.lasterr_delta = delta;
	}
	return 0;
}

bool nccllib_is_verbs(const char *path)
{
	const char *base = strrchr(path, '/');

	return strncmp(base ? base + 1 : path, "libibverbs.so", 13) == 0;
}

/* The first mapped file whose basename starts with prefix. */
static int find_mapped(const char *maps, const char *prefix, char *path, size_t len)
{
	const char *line = maps;
	size_t plen = strlen(prefix);

	path[0] = '\0';
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t ll = end ? (size_t)(end - line) : strlen(line);
		const char *p = memchr(line, '/', ll);

		if (p) {
			size_t pl = ll - (p - line);
			const char *base = p;

			for (const char *q = p; q < p + pl; q++)
				if (*q == '/')
					base = q + 1;
			if ((size_t)(p + pl - base) >= plen && strncmp(base, prefix, plen) == 0 &&
			    pl < len) {
				memcpy(path, p, pl);
				path[pl] = '\0';
				/* a library replaced on disk shows as "(deleted)": still usable */
				return 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

int nccllib_find_in_maps(const char *maps, char *path, size_t len)
{
	return find_mapped(maps, "libnccl.so", path, len);
}

int nccllib_find_verbs_in_maps(const char *maps, char *path, size_t len)
{
	return find_mapped(maps, "libibverbs.so", path, len);
}

int nccllib_probes_main(int argc, char **argv)
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
	printf("\n%-20s %-8s %-10s %s\n", "probe", "status", "offset", "symbol");
	for (int id = 1; id < NT_P_MAX; id++) {
		const struct nccl_probe_def *d = nccl_lib_probe(&lib, id);
		char st[16];

		if (!d)
			continue;
		snprintf(st, sizeof(st), "%s", lib.probe_off[id] ? "ok" : "missing");
		printf("%-20s %-8s 0x%-8llx %s%s%s%s\n", d->name, st,
		       (unsigned long long)lib.probe_off[id], d->sym,
		       d->flags & NP_CORE ? " [core]" : "",
		       d->flags & NP_OPTIN ? " [--collectives]" : "",
		       lib.probe_dups[id] > 1 ? " [duplicate name: lowest address]" : "");
	}
	if (lib.offs_src == OFFS_HEADER) {
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
	} else if (lib.offs_src != OFFS_NONE) {
		printf("\n%-28s %s\n", "field", "offset");
		for (size_t i = 0; i < NFIELDS; i++) {
			char name[96];

			snprintf(name, sizeof(name), "%s.%s", fields[i].type, fields[i].member);
			printf("%-28s %d\n", name, *offs_slot(&lib.offs, i));
		}
	}
	if (lib.missing_core) {
		printf(lib.offs.lib_kind == NT_LIB_VERBS
			       ? "\n%d core probe%s missing: queue pairs will be incomplete\n"
			       : "\n%d core probe%s missing: NCCL phases will be incomplete\n",
		       lib.missing_core, lib.missing_core == 1 ? "" : "s");
		return 1;
	}
	return 0;
}
