// SPDX-License-Identifier: MIT
/*
 * NCCL's own log, as a rank writes it (INFO and WARN lines, any bytes): each line parsed, the
 * facts applied to a process's summary and written as dump records; IB completion errors from
 * WARN text.
 */
#include <jansson.h>
#include <string.h>
#include "fuzz.h"
#include "model/snapshot.h"
#include "nccl/ibwarn.h"
#include "nccl/nccllog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct snap_nccl_log l;
	const char *p = (const char *)data, *end = p + size;
	uint64_t now = 1;

	memset(&l, 0, sizeof(l));
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct nccllog_fact f;
		char text[512];

		if (nccllog_parse(p, len, &f) != NLOG_NONE) {
			json_decref(nccllog_fact_json(&f));
			nccllog_apply(&l, &f, now++);
		}
		/* the WARN text as ib_parse_completion gets it: NUL-terminated */
		if (len < sizeof(text)) {
			struct ib_completion c;

			memcpy(text, p, len);
			text[len] = '\0';
			ib_parse_completion(text, &c);
		}
		p += len + 1;
	}
	return 0;
}
