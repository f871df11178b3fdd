// SPDX-License-Identifier: MIT
/*
 * The I/O around envlint: which environment (this shell, a command's, the ranks of dumps),
 * which names are real (the strings of the NCCL library found, else the built-in table), and
 * the host checks (interfaces, a port in use, what sudo dropped).
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/doctor.h"
#include "cmd/subcmds.h"
#include "nccl/nccllib.h"
#include "nccl/ncclnames.h"
#include "nccl/ncclprof.h"
#include "nccl/ncclsources.h"
#include "present/dump.h"
#include "trace/hostcheck.h"
#include "trace/pcitopo.h"
#include "diagnose/pcilint.h"
#include "cmd/gpuwatch.h"
#include "trace/jobenv.h"
#include "trace/procfs.h"
#include "trace/ranks.h"
#include "util/grow.h"

#define MAX_PROBLEMS 256
#define MAX_ENVS     1024

extern char **environ;

/* An environment we own: keys and values strdup'ed. */
struct envset {
	struct lint_env e;
	struct lint_var *v;
	int cap;
	char label[64];
	char host[128];
	char ifaces[1024];
	int pid; /* a rank's, from a dump */
};

static void env_free(struct envset *s)
{
	for (int i = 0; i < s->e.n; i++) {
		free((char *)s->v[i].key);
		free((char *)s->v[i].value);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static void env_unset(struct envset *s, const char *key)
{
	for (int i = 0; i < s->e.n; i++)
		if (!strcmp(s->v[i].key, key)) {
			free((char *)s->v[i].key);
			free((char *)s->v[i].value);
			s->v[i] = s->v[--s->e.n];
			return;
		}
}

static int env_set(struct envset *s, const char *key, size_t kl, const char *val, size_t vl)
{
	char *k = strndup(key, kl), *v = strndup(val, vl);

	if (!k || !v)
		goto oom;
	env_unset(s, k);
	if (grow(&s->v, &s->cap, s->e.n, sizeof(*s->v), 32))
		goto oom;
	s->v[s->e.n].key = k;
	s->v[s->e.n].value = v;
	s->e.n++;
	s->e.v = s->v;
	return 0;
oom:
	free(k);
	free(v);
	return -ENOMEM;
}

static void env_from_environ(struct envset *s, char **env)
{
	for (int i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');

		if (eq && eq != env[i])
			env_set(s, env[i], eq - env[i], eq + 1, strlen(eq + 1));
	}
	s->e.v = s->v;
}

static void take_env(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	env_set(ctx, k, kl, v, vl);
}

/*
 * sudo's env_reset: the user's own shell is the nearest ancestor that does not run as root.
 * Its environment, as a lint_env; false if there is none to compare with.
 */
static bool sudo_shell_env(struct envset *out)
{
	const char *uid = getenv("SUDO_UID");
	int pid = getppid();

	if (geteuid() != 0 || !uid)
		return false;
	for (int hops = 0; pid > 1 && hops < 16; hops++) {
		char path[64], line[256];
		int ppid = -1;
		long ruid = -1;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/status", pid);
		f = fopen(path, "re");
		if (!f)
			return false;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "PPid: %d", &ppid);
			sscanf(line, "Uid: %ld", &ruid);
		}
		fclose(f);
		if (ruid == atol(uid)) {
			char *buf;
			size_t len;

			if (procfs_read_environ(pid, &buf, &len))
				return false;
			ranks_env_each(buf, len, take_env, out);
			free(buf);
			snprintf(out->label, sizeof(out->label), "your shell (pid %d)", pid);
			out->e.label = out->label;
			out->e.rank = -1;
			return true;
		}
		pid = ppid;
	}
	return false;
}

/* ---- a command's environment: its `env` prefix and torchrun's master options ---- */

static int apply_env_prefix(struct envset *s, char **cmd, int ncmd)
{
	int i = 0;
	const char *b = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];

	if (strcmp(b, "env"))
		return 0;
	for (i = 1; i < ncmd; i++) {
		const char *a = cmd[i], *eq = strchr(a, '=');

		if (!strcmp(a, "-i") || !strcmp(a, "--ignore-environment") || !strcmp(a, "-")) {
			for (int k = s->e.n - 1; k >= 0; k--)
				env_unset(s, s->v[k].key);
		} else if (!strcmp(a, "-u") && i + 1 < ncmd) {
			env_unset(s, cmd[++i]);
		} else if (!strncmp(a, "--unset=", 8)) {
			env_unset(s, a + 8);
		} else if (a[0] != '-' && eq && eq != a) {
			env_set(s, a, eq - a, eq + 1, strlen(eq + 1));
		} else {
			break;
		}
	}
	return i;
}

/* torchrun --master-port/--master_port N, --master-addr, --rdzv-endpoint HOST:PORT */
static void apply_launcher_args(struct envset *s, char **cmd, int ncmd)
{
	for (int i = 0; i < ncmd; i++) {
		const char *a = cmd[i], *val = NULL;
		char key[32] = "";

		if (!strncmp(a, "--master_port", 13) || !strncmp(a, "--master-port", 13)) {
			snprintf(key, sizeof(key), "MASTER_PORT");
			val = a[13] == '=' ? a + 14 : (!a[13] && i + 1 < ncmd ? cmd[i + 1] : NULL);
		} else if (!strncmp(a, "--master_addr", 13) || !strncmp(a, "--master-addr", 13)) {
			snprintf(key, sizeof(key), "MASTER_ADDR");
			val = a[13] == '=' ? a + 14 : (!a[13] && i + 1 < ncmd ? cmd[i + 1] : NULL);
		} else if (!strncmp(a, "--rdzv_endpoint", 15) ||
			   !strncmp(a, "--rdzv-endpoint", 15)) {
			const char *ep = a[15] == '='
						 ? a + 16
						 : (!a[15] && i + 1 < ncmd ? cmd[i + 1] : NULL);
			const char *colon = ep ? strrchr(ep, ':') : NULL;

			if (colon) {
				env_set(s, "MASTER_ADDR", 11, ep, colon - ep);
				env_set(s, "MASTER_PORT", 11, colon + 1, strlen(colon + 1));
			}
			continue;
		}
		if (key[0] && val)
			env_set(s, key, strlen(key), val, strlen(val));
	}
}

static const char *resolve_cmd(const char *c, char *buf, size_t len)
{
	if (strchr(c, '/'))
		return c;
	for (const char *p = getenv("PATH"); p && *p;) {
		size_t l = strcspn(p, ":");

		snprintf(buf, len, "%.*s/%s", (int)l, p, c);
		if (l && !access(buf, X_OK))
			return buf;
		p += l + (p[l] == ':');
	}
	return NULL;
}

/* This host's PCI tree (doctor before a run, job or not): ACS, links, the IOMMU */
static int host_pci_lint(struct lint_problem *out, int max)
{
	struct pci_dev *d;
	struct pci_iommu io;
	int n = pci_scan(&d), k;

	if (n < 0) {
		fprintf(stderr,
			"nccltrace: cannot read the PCI devices: %s; the host not checked\n",
			strerror(-n));
		return 0;
	}
	pci_iommu(&io);
	k = pci_lint(d, n, &io, out, max);
	free(d);
	return k;
}

static struct lint_problem *gpu_problem(struct lint_problem *out, int *k, int max,
					enum lint_sev sev, const char *var)
{
	struct lint_problem *p = host_problem(out, k, max, sev);

	if (p)
		snprintf(p->var, sizeof(p->var), "%s", var);
	return p;
}

/*
 * This host's GPUs as NVML sees them (doctor with no job): each GPU, and what makes a job hang
 * or crawl on it: persistence mode off, a clock slowdown now, NVLinks down, ECC rows that could
 * not be remapped. Through nccltrace-nvml, within 10 s whatever NVML does.
 */
static int host_gpu_lint(struct lint_problem *out, int max)
{
	struct snap_gpu g[16];
	char st[200], path[PATH_MAX], var[16];
	int n = gpuwatch_once(jobenv_lib("nccltrace-nvml", path, sizeof(path)) ? NULL : path, g, 16,
			      st, sizeof(st), 10),
	    k = 0;
	struct lint_problem *p;
	struct pci_dev *d;
	int nd = pci_scan(&d);
	bool gpu = false;

	for (int i = 0; i < nd; i++)
		gpu = gpu || pci_is_gpu(&d[i]);
	if (nd > 0)
		free(d);
	/* NVML's absence is worth a line only where an NVIDIA GPU is */
	if ((n || gpu) && (p = gpu_problem(out, &k, max, LINT_INFO, "GPU"))) {
		snprintf(p->value, sizeof(p->value), "%s",
			 strncmp(st, "NVML ", 5) ? "NVML absent" : "NVML");
		snprintf(p->what, sizeof(p->what), "%s", st);
	}
	for (int i = 0; i < n; i++) {
		snprintf(var, sizeof(var), "GPU %d", g[i].index);
		if ((p = gpu_problem(out, &k, max, LINT_INFO, var))) {
			snprintf(p->value, sizeof(p->value), "%s", g[i].bus);
			snprintf(p->what, sizeof(p->what),
				 "%s, %s, %s, NUMA node %d, PCIe Gen%d x%d of Gen%d x%d, NVLink %d "
				 "of "
				 "%d up, persistence mode %s",
				 g[i].name, g[i].uuid, g[i].bus, g[i].numa, g[i].pcie_gen,
				 g[i].pcie_width, g[i].pcie_gen_max, g[i].pcie_width_max,
				 g[i].nvlink_up, g[i].nvlink_known,
				 g[i].persistence < 0 ? "unknown"
				 : g[i].persistence   ? "on"
						      : "off");
		}
		if (!g[i].persistence && (p = gpu_problem(out, &k, max, LINT_WARN, var))) {
			snprintf(p->value, sizeof(p->value), "persistence off");
			snprintf(p->what, sizeof(p->what),
				 "persistence mode is off on GPU %d: the driver sets the GPU up "
				 "anew "
				 "for each process, which makes every rank's start slow and first "
				 "collectives late",
				 g[i].index);
			snprintf(p->fix, sizeof(p->fix),
				 "run nvidia-persistenced (or nvidia-smi -pm 1)");
		}
		if ((g[i].throttle & 0xc8) && (p = gpu_problem(out, &k, max, LINT_WARN, var))) {
			snprintf(p->value, sizeof(p->value), "throttle 0x%llx",
				 (unsigned long long)g[i].throttle);
			snprintf(p->what, sizeof(p->what),
				 "GPU %d is slowed down by its hardware now (thermal, power brake "
				 "or "
				 "HW slowdown): SM clock %d of %d MHz; its ranks will straggle",
				 g[i].index, g[i].sm_mhz, g[i].sm_max_mhz);
			snprintf(
				p->fix, sizeof(p->fix),
				"nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; check cooling and "
				"power");
		}
		if (g[i].nvlink_known && g[i].nvlink_up < g[i].nvlink_known &&
		    (p = gpu_problem(out, &k, max, LINT_WARN, var))) {
			snprintf(p->value, sizeof(p->value), "NVLink %d/%d", g[i].nvlink_up,
				 g[i].nvlink_known);
			snprintf(p->what, sizeof(p->what),
				 "%d of the %d NVLinks of GPU %d are down: peer traffic falls back "
				 "to "
				 "PCIe or stops",
				 g[i].nvlink_known - g[i].nvlink_up, g[i].nvlink_known, g[i].index);
			snprintf(p->fix, sizeof(p->fix),
				 "nvidia-smi nvlink -s and -e; reset the GPU (nvidia-smi -r)");
		}
		if (g[i].remap_failed && (p = gpu_problem(out, &k, max, LINT_ERROR, var))) {
			snprintf(p->value, sizeof(p->value), "row remapping failed");
			snprintf(
				p->what, sizeof(p->what),
				"GPU %d could not remap a memory row with uncorrectable errors: it "
				"will fault again",
				g[i].index);
			snprintf(p->fix, sizeof(p->fix), "drain the node and replace the GPU");
		}
	}
	return k;
}

static int lint_launch(struct envset *env, char **cmd, int ncmd, const char *lib,
		       struct lint_problem *out, int max, struct nccl_names *nm)
{
	struct lint_ctx c = {
		.launch = true,
		.iface_exists = host_iface_exists,
		.port_in_use = host_port_in_use,
		.gid = host_hca_gid,
	};
	struct envset shell = {0};
	char pathbuf[PATH_MAX];
	const char *cmd0 = NULL;
	int n, skip = 0;

	env_from_environ(env, environ);
	snprintf(env->label, sizeof(env->label), "%s",
		 cmd ? "the command's environment" : "this shell");
	env->e.label = env->label;
	env->e.rank = -1;
	if (cmd) {
		skip = apply_env_prefix(env, cmd, ncmd);
		apply_launcher_args(env, cmd + skip, ncmd - skip);
		if (skip < ncmd)
			cmd0 = resolve_cmd(cmd[skip], pathbuf, sizeof(pathbuf));
	}
	nccl_names_load(nm, lib, cmd0);
	c.names = nm->v;
	c.nnames = nm->n;
	c.names_from = nm->from;
	n = envlint(&c, &env->e, 1, out, max);
	if (sudo_shell_env(&shell))
		envlint_lost(&shell.e, &env->e, out, &n, max);
	env_free(&shell);
	return n;
}

int doctor_launch_check(char **cmd, int ncmd, const char *nccl_lib, struct lint_problem *out,
			int max, char *names_from, size_t len)
{
	struct envset env = {0};
	struct nccl_names nm = {0};
	int n = lint_launch(&env, cmd, ncmd, nccl_lib, out, max, &nm);

	n += host_pci_lint(out + n, max - n);
	snprintf(names_from, len, "%s", nm.from);
	nccl_names_free(&nm);
	env_free(&env);
	return n;
}

/* ---- the ranks of dumps ---- */

struct dump_ctx {
	struct envset *envs;
	int n;
	char host[128];
	char ifaces[1024]; /* the dump's host's interfaces ("" : the header has none) */
	char lib[PATH_MAX];
};

static struct envset *rank_env(struct dump_ctx *d, int pid)
{
	for (int i = 0; i < d->n; i++)
		if (d->envs[i].pid == pid)
			return &d->envs[i];
	return NULL;
}

static int on_record(void *ctx, json_t *rec, int line)
{
	struct dump_ctx *d = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));
	const char *key;
	json_t *v;

	(void)line;
	if (json_object_get(rec, "nccltrace")) {
		snprintf(d->host, sizeof(d->host), "%s",
			 json_string_value(json_object_get(rec, "host")) ?: "");
		snprintf(d->ifaces, sizeof(d->ifaces), "%s",
			 json_string_value(json_object_get(rec, "ifaces")) ?: "");
		return 0;
	}
	if (!type)
		return 0;
	if (!strcmp(type, "nccl_lib") && !d->lib[0] &&
	    json_string_value(json_object_get(rec, "path")))
		snprintf(d->lib, sizeof(d->lib), "%s",
			 json_string_value(json_object_get(rec, "path")));
	if (!strcmp(type, "rank") && json_is_integer(json_object_get(rec, "rank")) &&
	    d->n < MAX_ENVS) {
		struct envset *s = &d->envs[d->n++];
		int pid = (int)json_integer_value(json_object_get(rec, "pid"));

		memset(s, 0, sizeof(*s));
		s->e.rank = (int)json_integer_value(json_object_get(rec, "rank"));
		s->pid = pid;
		snprintf(s->label, sizeof(s->label), "rank %d (pid %d)", s->e.rank, pid);
		snprintf(s->host, sizeof(s->host), "%s", d->host);
		s->e.label = s->label;
		s->e.host = s->host;
		snprintf(s->ifaces, sizeof(s->ifaces), "%s", d->ifaces);
		s->e.ifaces = s->ifaces[0] ? s->ifaces : NULL;
		json_object_foreach(json_object_get(rec, "env"), key, v) if (json_is_string(v))
			env_set(s, key, strlen(key), json_string_value(v),
				strlen(json_string_value(v)));
	}
	/* what NCCL read (nccl.conf included): part of the rank's configuration */
	if (!strcmp(type, "nccl_setting") && json_is_string(json_object_get(rec, "value"))) {
		struct envset *s =
			rank_env(d, (int)json_integer_value(json_object_get(rec, "pid")));
		const char *name = json_string_value(json_object_get(rec, "name"));
		const char *val = json_string_value(json_object_get(rec, "value"));
		bool have = false;

		for (int i = 0; s && name && i < s->e.n; i++)
			have |= !strcmp(s->v[i].key, name);
		if (s && name && !have)
			env_set(s, name, strlen(name), val, strlen(val));
	}
	return 0;
}

/* ---- output ---- */

static void print_problem(const struct lint_problem *p)
{
	if (p->host) /* "warning ACS 0000:42:08.0 RR,CR: ..." */
		printf("%-7s %s %s", lint_sev_name(p->sev), p->var, p->value);
	else
		printf("%-7s %s%s%s", lint_sev_name(p->sev), p->var[0] ? p->var : "job",
		       p->var[0] ? "=" : "", p->value);
	if (p->rank >= 0)
		printf(" (rank %d)", p->rank);
	printf(": %s", p->what);
	if (p->fix[0])
		printf(" -> %s", p->fix);
	putchar('\n');
}

static json_t *problem_json(const struct lint_problem *p)
{
	json_t *o = json_object();

	json_object_set_new(o, "severity", json_string(lint_sev_name(p->sev)));
	json_object_set_new(o, "variable",
			    p->var[0] && !p->host ? json_string(p->var) : json_null());
	json_object_set_new(o, "value", p->var[0] ? json_string(p->value) : json_null());
	if (p->host) /* the host's PCI tree: ACS, PCIe, IOMMU or PCI (what was seen) */
		json_object_set_new(o, "host", json_string(p->var));
	json_object_set_new(o, "rank", p->rank >= 0 ? json_integer(p->rank) : json_null());
	json_object_set_new(o, "what", json_string(p->what));
	json_object_set_new(o, "fix", json_string(p->fix));
	return o;
}

/*
 * What tells each fact about this job on its NCCL library (nccl_sources), into r (JSON) or on
 * stdout; nothing when the names came from the built-in table (no library found)
 */
static void job_sources(const char *lib, json_t *r)
{
	struct nccl_source src[NCCL_SOURCES_MAX];
	struct nccl_lib l;
	json_t *o;
	char err[256];
	int n;

	if (!lib || !lib[0] || nccllib_open(lib, nccllib_cache_dir(), &l, err, sizeof(err)))
		return;
	n = nccl_sources(&l, ncclprof_lib_api(lib), src);
	if (!r) {
		printf("sources on %s (what tells each fact, best first):\n", lib);
		for (int i = 0; i < n; i++)
			printf("  %-22s %s\n", src[i].fact, src[i].how);
		return;
	}
	o = json_object();
	for (int i = 0; i < n; i++)
		json_object_set_new(o, src[i].fact, json_string(src[i].how));
	json_object_set_new(r, "sources", o);
}

static int report(const struct doctor_opts *o, const char *what, const struct nccl_names *nm,
		  const struct lint_problem *p, int n)
{
	const char *from = nm->from;
	int counted = envlint_count(p, n), errors = 0;

	for (int i = 0; i < n; i++)
		errors += p[i].sev == LINT_ERROR;
	if (o->json) {
		json_t *r = json_object(), *a = json_array();

		for (int i = 0; i < n; i++)
			json_array_append_new(a, problem_json(&p[i]));
		json_object_set_new(r, "checked", json_string(what));
		json_object_set_new(r, "names_from", json_string(from));
		json_object_set_new(r, "names_registry_api", json_boolean(nm->registry_api));
		json_object_set_new(r, "problems", a);
		json_object_set_new(r, "errors", json_integer(errors));
		json_object_set_new(r, "warnings", json_integer(counted - errors));
		job_sources(nm->path, r);
		json_dumpf(r, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(r);
	} else {
		for (int i = 0; i < n; i++)
			print_problem(&p[i]);
		if (counted)
			printf("%d problem%s (%d error%s) in %s; NCCL names from %s\n", counted,
			       counted == 1 ? "" : "s", errors, errors == 1 ? "" : "s", what, from);
		else
			printf("no problems in %s; NCCL names from %s\n", what, from);
		if (nm->registry_api)
			printf("  (its strings: its ncclParamGetAllParameterKeys lists only the "
			       "parameters moved into NCCL's new registry, not every name it "
			       "reads)\n");
		job_sources(nm->path, NULL);
	}
	return counted ? 1 : 0;
}

int doctor_main(int argc, char **argv)
{
	struct doctor_opts o;
	struct lint_problem *p;
	struct nccl_names nm = {0};
	char err[512], what[128];
	int n, rc;

	if (cli_parse_doctor(argc, argv, &o, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (o.help) {
		fputs(cli_doctor_help, stdout);
		return 0;
	}
	p = calloc(MAX_PROBLEMS, sizeof(*p));
	if (!p)
		return EXIT_OSERR;
	if (o.ndumps) {
		struct dump_ctx d = {.envs = calloc(MAX_ENVS, sizeof(struct envset))};
		struct lint_env *envs;
		struct lint_ctx c = {0};

		if (!d.envs) {
			free(p);
			return EXIT_OSERR;
		}
		for (int i = 0; i < o.ndumps; i++) {
			d.host[0] = '\0';
			if (dump_read(o.dumps[i], on_record, &d, err, sizeof(err))) {
				fprintf(stderr, "nccltrace: %s\n", err);
				rc = EXIT_NOINPUT;
				goto out_dump;
			}
		}
		nccl_names_load(&nm, o.nccl_lib ? o.nccl_lib : (d.lib[0] ? d.lib : NULL), NULL);
		c.names = nm.v;
		c.nnames = nm.n;
		c.names_from = nm.from;
		envs = calloc(d.n ? d.n : 1, sizeof(*envs));
		if (!envs) {
			rc = EXIT_OSERR;
			goto out_dump;
		}
		for (int i = 0; i < d.n; i++) {
			d.envs[i].e.v = d.envs[i].v;
			envs[i] = d.envs[i].e;
		}
		n = envlint(&c, envs, d.n, p, MAX_PROBLEMS);
		snprintf(what, sizeof(what), "%d rank%s of %d dump%s", d.n, d.n == 1 ? "" : "s",
			 o.ndumps, o.ndumps == 1 ? "" : "s");
		if (!d.n)
			fprintf(stderr,
				"nccltrace: no rank records in the dump%s (no process had "
				"RANK or a launcher's rank variable)\n",
				o.ndumps == 1 ? "" : "s");
		rc = report(&o, what, &nm, p, n);
		free(envs);
	out_dump:
		for (int i = 0; i < d.n; i++)
			env_free(&d.envs[i]);
		free(d.envs);
	} else {
		struct envset env = {0};

		n = lint_launch(&env, o.cmd, o.ncmd, o.nccl_lib, p, MAX_PROBLEMS, &nm);
		n += host_pci_lint(p + n, MAX_PROBLEMS - n);
		n += host_gpu_lint(p + n, MAX_PROBLEMS - n);
		rc = report(&o, env.label, &nm, p, n);
		env_free(&env);
	}
	nccl_names_free(&nm);
	free(p);
	return rc;
}
