// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include "cmd/cli.h"
#include "cmd/subcmds.h"
#include "nccltrace.h"

/* `nccltrace --version` */
static const char *version_text(void)
{
	static char text[640];

	snprintf(text, sizeof(text),
		 "nccltrace %s\n"
		 "dump format %d (reads 1-%d)\n"
		 "NCCL: probes by name for 2.18-2.30 (NVIDIA/nccl v2.18.6-1 ... v2.30.7-1; later "
		 "versions are probed by the same names where they have them: "
		 "'nccltrace probes LIB' says what a library offers)\n"
		 "NCCL profiler plugin: API v1-v7 (NCCL 2.23-2.31)\n",
		 NT_VERSION, NT_DUMP_FORMAT, NT_DUMP_FORMAT);
	return text;
}

/*
 * The bundle's script (scripts/bundle.sh) keeps the job's LD_PRELOAD and LD_LIBRARY_PATH from
 * the bundle's loader, as NCCLTRACE_JOB_*: back under their names, for the job and for what
 * reads them as the job's (which NCCL it loads), and the bundle's names gone; and its own path,
 * NCCLTRACE_SELF, what starts nccltrace again
 */
static void job_loader_env(void)
{
	static const char *const names[] = {"LD_PRELOAD", "LD_LIBRARY_PATH"};
	char *v0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char key[48];
		const char *v;

		snprintf(key, sizeof(key), "NCCLTRACE_JOB_%s", names[i]);
		v = getenv(key);
		if (v && !setenv(names[i], v, 1))
			unsetenv(key);
	}
	/* how to start nccltrace again (the agent's attaches): the bundle's script, else this */
	if ((v0 = getenv("NCCLTRACE_SELF")) && strchr(v0, '/') && (v0 = strdup(v0))) {
		cli_self = v0;
		unsetenv("NCCLTRACE_SELF");
	}
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	job_loader_env();
	/* started by the bundle's loader (scripts/bundle.sh), ps and top would say ld-linux */
	prctl(PR_SET_NAME, "nccltrace");
	if (!cmd) {
		fputs(cli_main_help, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "run"))
		return run_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "attach"))
		return attach_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return report_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "convert"))
		return convert_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "cat"))
		return cat_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "doctor"))
		return doctor_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "probes"))
		return probes_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "watch"))
		return watch_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "replay"))
		return replay_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "agent"))
		return agent_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		fputs(cli_main_help, stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		fputs(version_text(), stdout);
		return 0;
	}
	fprintf(stderr, "nccltrace: unknown command '%s' (try 'nccltrace --help')\n", cmd);
	return EXIT_USAGE;
}
