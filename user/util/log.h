/* SPDX-License-Identifier: MIT */
/* Messages on stderr, prefixed "nccltrace: ", filtered by verbosity (-v, -vv). */
#ifndef NT_LOG_H
#define NT_LOG_H

enum log_level {
	LOG_WARN = 0,
	LOG_INFO = 1,
	LOG_DEBUG = 2,
};

void log_set_level(int level);
int log_level(void);
__attribute__((format(printf, 2, 3))) void log_msg(int level, const char *fmt, ...);

#define pr_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* NT_LOG_H */
