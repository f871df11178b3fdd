// SPDX-License-Identifier: MIT
/*
 * The I/O around envlint: which environment (this shell, a command's, the ranks of dumps),
 * which names are real (the strings of the NCCL library found, else the built-in table), and
 * the host checks (interfaces, a port in use, what sudo dropped).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cli.h"
#include "doctor.h"
#include "dump.h"
#include "elfsym.h"
#include "ncclparams.h"
#include "procfs.h"
#include "ranks.h"

#define MAX_PROBLEMS 256
#define MAX_ENVS     1024
#define MAX_NAMES    1024
#define CAND_LEN     (PATH_MAX + 64)

extern char **environ;

/* An environment we own: keys and values strdup'ed. */
struct envset {
	struct lint_env e;
	struct lint_var *v;
	int cap;
	char label[64];
	char host[128];
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
	if (s->e.n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 32;
		struct lint_var *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			goto oom;
		s->v = nv;
		s->cap = cap;
	}
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

/* ---- the real names: from the NCCL library in use, else the built-in table ---- */

struct names {
	const char *v[MAX_NAMES];
	int n;
	char from[PATH_MAX + 64];
};

static int take_name(void *ctx, const char *s, size_t len)
{
	struct names *nm = ctx;
	char *d;

	if (len <= 5 || len > 63 || nm->n == MAX_NAMES)
		return 0;
	for (size_t i = 5; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	for (int i = 0; i < nm->n; i++)
		if (strlen(nm->v[i]) == len && !memcmp(nm->v[i], s, len))
			return 0;
	d = strndup(s, len);
	if (d)
		nm->v[nm->n++] = d;
	return 0;
}

static bool names_from_lib(struct names *nm, const char *path)
{
	struct elf_lib *l;
	char err[256], ver[64] = "";

	if (access(path, R_OK) || elflib_open(path, &l, err, sizeof(err)))
		return false;
	elflib_each_string(l, "NCCL_", take_name, nm);
	if (!elflib_find_string(l, "NCCL version ", ver, sizeof(ver)))
		sscanf(ver + strlen("NCCL version "), "%63[0-9.]", ver);
	else
		ver[0] = '\0';
	elflib_close(l);
	/* a library with hardly any: not NCCL, or stripped of its strings */
	if (nm->n < 50) {
		for (int i = 0; i < nm->n; i++)
			free((char *)nm->v[i]);
		nm->n = 0;
		return false;
	}
	snprintf(nm->from, sizeof(nm->from), "NCCL %s at %s", ver[0] ? ver : "(version unknown)",
		 path);
	return true;
}

/* Where libnccl.so.2 usually is, from the command (a venv's site-packages) and the system. */
static void lib_candidates(const char *cmd0, char (*out)[CAND_LEN], int *n, int max)
{
	const char *ld = getenv("LD_LIBRARY_PATH"), *cuda = getenv("CUDA_HOME");
	char buf[PATH_MAX], pat[PATH_MAX + 64];
	const char *fixed[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/lib",
			       "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"};

#define ADD(...)                                                                                   \
	do {                                                                                       \
		if (*n < max)                                                                      \
			snprintf(out[(*n)++], CAND_LEN, __VA_ARGS__);                              \
	} while (0)
	/* the directory as found, not resolved: a venv's python is a symlink out of the venv */
	if (cmd0 && strchr(cmd0, '/')) {
		glob_t g;

		snprintf(buf, sizeof(buf), "%s", cmd0);
		*strrchr(buf, '/') = '\0';
		snprintf(pat, sizeof(pat),
			 "%s/../lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2", buf);
		if (!glob(pat, 0, NULL, &g)) {
			for (size_t i = 0; i < g.gl_pathc; i++)
				ADD("%s", g.gl_pathv[i]);
			globfree(&g);
		}
	}
	for (const char *p = ld; p && *p;) {
		size_t l = strcspn(p, ":");

		if (l)
			ADD("%.*s/libnccl.so.2", (int)l, p);
		p += l + (p[l] == ':');
	}
	if (cuda) {
		ADD("%s/lib64/libnccl.so.2", cuda);
		ADD("%s/lib/libnccl.so.2", cuda);
	}
	/* next to nvcc: the CUDA toolkit's own NCCL */
	for (const char *p = getenv("PATH"); p && *p;) {
		size_t l = strcspn(p, ":");

		snprintf(pat, sizeof(pat), "%.*s/nvcc", (int)l, p);
		if (l && realpath(pat, buf)) {
			char *s1 = strrchr(buf, '/');

			if (s1) {
				*s1 = '\0';
				s1 = strrchr(buf, '/');
				if (s1)
					*s1 = '\0';
				ADD("%s/lib/libnccl.so.2", buf);
				ADD("%s/lib64/libnccl.so.2", buf);
			}
			break;
		}
		p += l + (p[l] == ':');
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		ADD("%s/libnccl.so.2", fixed[i]);
#undef ADD
}

static void load_names(struct names *nm, const char *lib, const char *cmd0)
{
	char cand[32][CAND_LEN];
	int nc = 0;

	nm->n = 0;
	if (lib && names_from_lib(nm, lib))
		return;
	if (!lib) {
		lib_candidates(cmd0, cand, &nc, 32);
		for (int i = 0; i < nc; i++)
			if (names_from_lib(nm, cand[i]))
				return;
	}
	for (int i = 0; nccl_param_at(i) && nm->n < MAX_NAMES; i++)
		nm->v[nm->n++] = strdup(nccl_param_at(i)->name);
	snprintf(nm->from, sizeof(nm->from), "the built-in NCCL 2.28.9 table%s",
		 lib ? " (--nccl-lib is not a readable NCCL library)" : "");
}

static void names_free(struct names *nm)
{
	for (int i = 0; i < nm->n; i++)
		free((char *)nm->v[i]);
	nm->n = 0;
}

/* ---- host checks ---- */

static bool iface_exists(void *io, const char *name, bool exact)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	(void)io;
	if (getifaddrs(&ifs))
		return true; /* cannot tell: say nothing */
	for (i = ifs; i && !found; i = i->ifa_next)
		found = exact ? !strcmp(i->ifa_name, name)
			      : !strncmp(i->ifa_name, name, strlen(name));
	freeifaddrs(ifs);
	return found;
}

static bool port_in_use(void *io, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool busy;

	(void)io;
	if (fd < 0)
		return false;
	busy = bind(fd, (struct sockaddr *)&a, sizeof(a)) && errno == EADDRINUSE;
	close(fd);
	return busy;
}

/* A one-line sysfs file, without its newline; false if unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/*
 * The local HCAs' GID tables, as the kernel shows them: /sys/class/infiniband/DEV/ports/1/
 * {gids,gid_attrs/types}/IDX and link_layer ($NCCLTRACE_SYSFS replaces /sys, for tests).
 */
static int hca_gid(void *io, const char *hca, int idx, char *type, size_t tlen, char *dev,
		   size_t dlen, bool *ib)
{
	const char *sys = getenv("NCCLTRACE_SYSFS");
	char dir[PATH_MAX], path[PATH_MAX + 64], gid[64], ll[32];
	struct dirent *d;
	DIR *dp;

	(void)io;
	snprintf(dir, sizeof(dir), "%s/class/infiniband", sys && *sys ? sys : "/sys");
	dp = opendir(dir);
	if (!dp)
		return -ENODEV;
	dev[0] = '\0';
	while ((d = readdir(dp)))
		if (d->d_name[0] != '.' && (!hca || !strcmp(d->d_name, hca)) &&
		    (!dev[0] || strcmp(d->d_name, dev) < 0))
			snprintf(dev, dlen, "%s", d->d_name); /* the first by name, as NCCL */
	closedir(dp);
	if (!dev[0])
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/%s/ports/1/link_layer", dir, dev);
	*ib = read_line(path, ll, sizeof(ll)) && !strcmp(ll, "InfiniBand");
	snprintf(path, sizeof(path), "%s/%s/ports/1/gids/%d", dir, dev, idx);
	if (!read_line(path, gid, sizeof(gid)) ||
	    !strcmp(gid, "0000:0000:0000:0000:0000:0000:0000:0000"))
		return *ib ? 0 : -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/ports/1/gid_attrs/types/%d", dir, dev, idx);
	if (!read_line(path, type, tlen))
		type[0] = '\0';
	return 0;
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

static int lint_launch(struct envset *env, char **cmd, int ncmd, const char *lib,
		       struct lint_problem *out, int max, struct names *nm)
{
	struct lint_ctx c = {
		.launch = true,
		.iface_exists = iface_exists,
		.port_in_use = port_in_use,
		.gid = hca_gid,
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
	load_names(nm, lib, cmd0);
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
	struct names nm = {0};
	int n = lint_launch(&env, cmd, ncmd, nccl_lib, out, max, &nm);

	snprintf(names_from, len, "%s", nm.from);
	names_free(&nm);
	env_free(&env);
	return n;
}

/* ---- the ranks of dumps ---- */

struct dump_ctx {
	struct envset *envs;
	int n;
	char host[128];
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
	json_object_set_new(o, "variable", p->var[0] ? json_string(p->var) : json_null());
	json_object_set_new(o, "value", p->var[0] ? json_string(p->value) : json_null());
	json_object_set_new(o, "rank", p->rank >= 0 ? json_integer(p->rank) : json_null());
	json_object_set_new(o, "what", json_string(p->what));
	json_object_set_new(o, "fix", json_string(p->fix));
	return o;
}

static int report(const struct doctor_opts *o, const char *what, const char *from,
		  const struct lint_problem *p, int n)
{
	int counted = envlint_count(p, n), errors = 0;

	for (int i = 0; i < n; i++)
		errors += p[i].sev == LINT_ERROR;
	if (o->json) {
		json_t *r = json_object(), *a = json_array();

		for (int i = 0; i < n; i++)
			json_array_append_new(a, problem_json(&p[i]));
		json_object_set_new(r, "checked", json_string(what));
		json_object_set_new(r, "names_from", json_string(from));
		json_object_set_new(r, "problems", a);
		json_object_set_new(r, "errors", json_integer(errors));
		json_object_set_new(r, "warnings", json_integer(counted - errors));
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
	}
	return counted ? 1 : 0;
}

int doctor_main(int argc, char **argv)
{
	struct doctor_opts o;
	struct lint_problem *p;
	struct names nm = {0};
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
		load_names(&nm, o.nccl_lib ? o.nccl_lib : (d.lib[0] ? d.lib : NULL), NULL);
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
		rc = report(&o, what, nm.from, p, n);
		free(envs);
	out_dump:
		for (int i = 0; i < d.n; i++)
			env_free(&d.envs[i]);
		free(d.envs);
	} else {
		struct envset env = {0};

		n = lint_launch(&env, o.cmd, o.ncmd, o.nccl_lib, p, MAX_PROBLEMS, &nm);
		rc = report(&o, env.label, nm.from, p, n);
		env_free(&env);
	}
	names_free(&nm);
	free(p);
	return rc;
}
