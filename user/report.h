/* SPDX-License-Identifier: MIT */
#ifndef NT_REPORT_H
#define NT_REPORT_H

#include <jansson.h>

/* `nccltrace report`: argv[0] is "report". Returns the process exit status. */
int report_main(int argc, char **argv);

/*
 * The findings of a dump, latest state of each, in the order they were raised:
 * {"findings":[...]}. NULL with "PATH:LINE: ..." in err on a corrupt dump.
 */
json_t *report_findings(const char *path, char *err, size_t errlen);

#endif /* NT_REPORT_H */
