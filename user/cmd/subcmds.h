/* SPDX-License-Identifier: MIT */
/*
 * The subcommands main() dispatches to. Each takes its own argv (argv[0] is the subcommand's
 * name) and returns the process exit status: its own result, or a sysexits code with one line
 * on stderr.
 */
#ifndef NT_SUBCMDS_H
#define NT_SUBCMDS_H

#include <stdbool.h>

int run_main(int argc, char **argv);	 /* nccltrace run [OPTIONS] -- CMD... */
int attach_main(int argc, char **argv);	 /* nccltrace attach [OPTIONS] PID... */
int report_main(int argc, char **argv);	 /* nccltrace report [--json | --html OUT] DUMP */
int convert_main(int argc, char **argv); /* nccltrace convert DUMP -o TRACE.json */
int cat_main(int argc, char **argv);	 /* nccltrace cat DUMP */
int doctor_main(int argc, char **argv);	 /* nccltrace doctor [...] */
int probes_main(int argc, char **argv);
int watch_main(int argc, char **argv);
int agent_main(int argc, char **argv);		     /* nccltrace agent [OPTIONS] */
int replay_main(int argc, char **argv);		     /* nccltrace replay [OPTIONS] DUMP... */
/* nccltrace watch [--once [--json]] HOST:PORT... */ /* nccltrace probes [--no-cache] LIB */

/* What `report` prints of the dump at path (json, or an HTML page to html); 0 or an exit status */
int report_dump(const char *path, bool json, const char *html);

#endif /* NT_SUBCMDS_H */
