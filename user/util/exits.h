/* SPDX-License-Identifier: MIT */
/* sysexits(3): nccltrace's own failures, as every subcommand reports them. */
#ifndef NT_EXITS_H
#define NT_EXITS_H

enum {
	EXIT_USAGE = 64,
	EXIT_DATAERR = 65,
	EXIT_NOINPUT = 66,
	EXIT_UNAVAILABLE = 69,
	EXIT_SOFTWARE = 70,
	EXIT_OSERR = 71,
	EXIT_CANTCREAT = 73,
	EXIT_IOERR = 74,
	EXIT_NOPERM = 77,
	EXIT_CONFIG = 78,
};

#endif /* NT_EXITS_H */
