// SPDX-License-Identifier: MIT
/*
 * A dump from anywhere (another host's, a corrupt or hostile one): what report, report --html
 * convert and cat make of it (format 2's frames made whole: dumpdelta.h). Any input gives a result or an error, never a crash.
 */
#include <jansson.h>
#include "fuzz.h"
#include "present/dump.h"
#include "present/convert.h"
#include "present/convertmerge.h"
#include "present/html.h"
#include "present/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int each_rec(void *ctx, json_t *rec, int line)
{
	(void)ctx;
	(void)line;
	return !json_is_object(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	char err[512];
	json_t *r = report_findings(path, err, sizeof(err)), *t;

	if (r) {
		json_t *ranks = report_ranks(path, r, err, sizeof(err));

		if (ranks) {
			json_object_set_new(r, "ranks", ranks);
			if (!freopen("/dev/null", "w", stdout))
				abort();
			report_print(r);
			html_write("/dev/null", r, path, err, sizeof(err));
		}
		json_decref(r);
	}
	/* every record, the state frames made whole too (nccltrace cat, a merge) */
	dump_read_states(path, each_rec, NULL, err, sizeof(err));
	t = convert_dump(path, false, err, sizeof(err));
	json_decref(t);
	/* the convert command's way: events spilled to a file, copied out in time order */
	{
		char *paths[] = {(char *)path};
		struct convert_sink *s = convert_dumps_sink(paths, 1, err, sizeof(err));
		FILE *f = s ? fopen("/dev/null", "w") : NULL;
		size_t n;

		if (f) {
			convert_sink_write(s, f, &n, err, sizeof(err));
			fclose(f);
		}
		convert_sink_free(s);
	}
	return 0;
}
