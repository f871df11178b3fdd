// SPDX-License-Identifier: MIT
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/elfsym.h"
#include "nccl/ncclnames.h"
#include "nccl/ncclparams.h"

static int take_name(void *ctx, const char *s, size_t len)
{
	struct nccl_names *nm = ctx;
	char *d;

	if (len <= 5 || len > 63 || nm->n == NCCL_NAMES_MAX)
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

static bool names_from_lib(struct nccl_names *nm, const char *path)
{
	struct elf_lib *l;
	char err[256], ver[64] = "";

	if (access(path, R_OK) || elflib_open(path, &l, err, sizeof(err)))
		return false;
	elflib_each_string(l, "NCCL_", take_name, nm);
	nm->registry_api = elflib_find(l, "ncclParamGetAllParameterKeys", NULL, 0) > 0;
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
	snprintf(nm->path, sizeof(nm->path), "%s", path);
	snprintf(nm->from, sizeof(nm->from), "NCCL %s at %s", ver[0] ? ver : "(version unknown)",
		 path);
	return true;
}

/* Where libnccl.so.2 usually is, from the command (a venv's site-packages) and the system. */
void nccl_lib_candidates(const char *cmd0, char (*out)[NCCL_CAND_LEN], int *n, int max)
{
	const char *ld = getenv("LD_LIBRARY_PATH"), *cuda = getenv("CUDA_HOME");
	char buf[PATH_MAX], pat[PATH_MAX + 64];
	const char *fixed[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/lib",
			       "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"};

#define ADD(...)                                                                                   \
	do {                                                                                       \
		if (*n < max)                                                                      \
			snprintf(out[(*n)++], NCCL_CAND_LEN, __VA_ARGS__);                         \
	} while (0)
	/* a libnccl preloaded is the one the job gets, whatever else is on its path */
	if (getenv("LD_PRELOAD")) {
		char pre[PATH_MAX * 2], *save = NULL;

		snprintf(pre, sizeof(pre), "%s", getenv("LD_PRELOAD"));
		for (char *t = strtok_r(pre, " :", &save); t; t = strtok_r(NULL, " :", &save)) {
			const char *b = strrchr(t, '/') ? strrchr(t, '/') + 1 : t;

			if (!strncmp(b, "libnccl.so", 10))
				ADD("%s", t);
		}
	}
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

void nccl_names_load(struct nccl_names *nm, const char *lib, const char *cmd0)
{
	char cand[32][NCCL_CAND_LEN];
	int nc = 0;

	nm->n = 0;
	nm->registry_api = false;
	if (lib && names_from_lib(nm, lib))
		return;
	if (!lib) {
		nccl_lib_candidates(cmd0, cand, &nc, 32);
		for (int i = 0; i < nc; i++)
			if (names_from_lib(nm, cand[i]))
				return;
	}
	for (int i = 0; nccl_param_at(i) && nm->n < NCCL_NAMES_MAX; i++)
		nm->v[nm->n++] = strdup(nccl_param_at(i)->name);
	snprintf(nm->from, sizeof(nm->from), "the built-in NCCL 2.28.9 table%s",
		 lib ? " (--nccl-lib is not a readable NCCL library)" : "");
}

void nccl_names_free(struct nccl_names *nm)
{
	for (int i = 0; i < nm->n; i++)
		free((char *)nm->v[i]);
	nm->n = 0;
}
