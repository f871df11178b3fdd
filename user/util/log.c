// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include "util/log.h"

static int verbosity = LOG_WARN;

void log_set_level(int level)
{
	verbosity = level;
}

int log_level(void)
{
	return verbosity;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > verbosity)
		return;
	fputs("nccltrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
