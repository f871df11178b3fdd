/* SPDX-License-Identifier: MIT */
#ifndef NT_RUN_H
#define NT_RUN_H

/* `nccltrace run`: argv[0] is "run". Returns the process exit status. */
int run_main(int argc, char **argv);

#endif /* NT_RUN_H */
