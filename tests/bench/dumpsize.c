// SPDX-License-Identifier: MIT
/*
 * The dump's size as the tracer writes it (format 2: frames as what changed, the calm job's
 * snapshots thinned through the pre-trigger ring): a dump of any format, each snapshot whole
 * (a synthetic one, scripts/bench-dumpsize.sh), written again by the tracer's own writer
 * (dump__write, dump__hold) with the tracer's rate rule (records.h: busy for the first minute,
 * while a finding is open and 30 s after one opened or closed; else one kept in 30 s).
 *   dumpsize IN OUT [full]    (IN may be /dev/stdin; OUT ending in .zst: compressed, dumpzst.h)
 * Prints the records and bytes read and written, and the snapshots held and thinned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "present/dump.h"
#include "present/records.h"
#include "nccltrace.h"

struct st {
	struct dump *d;
	bool full;
	uint64_t start, last_change, last_kept, nin;
	int open;
};

static json_t *text_record(const void *text)
{
	return json_loads(text, 0, NULL);
}

/* a synthetic snapshot held as its text (the tracer holds what it builds its record from) */
static const struct dump_held_ops text_ops = {.record = text_record, .free = free};

static int on_rec(void *ctx, json_t *rec, int line)
{
	struct st *s = ctx;
	const char *type = json_string_value(json_object_get(rec, "type")) ?: "";
	uint64_t ts = (uint64_t)json_integer_value(json_object_get(rec, "ts_ns"));
	json_t *c;
	size_t i;
	char *text;
	bool keep;

	(void)line;
	s->nin++;
	if (json_object_get(rec, "nccltrace")) {
		json_object_set_new(rec, "nccltrace", json_integer(NT_DUMP_FORMAT));
		s->start = (uint64_t)json_integer_value(json_object_get(rec, "start_ns"));
	}
	if (!strcmp(type, "finding")) {
		const char *ev = json_string_value(json_object_get(rec, "event")) ?: "";

		if (!strcmp(ev, "open") || !strcmp(ev, "close")) {
			s->open += !strcmp(ev, "open") ? 1 : -1;
			s->last_change = ts;
		}
	}
	/* a compressed dump's frame a second, as the tracer's tick writes them */
	if (ts && dump__tick(s->d, ts))
		return -1;
	if (strcmp(type, "snapshot"))
		return dump__write(s->d, rec);
	if (s->full || record_snapshot_busy(ts, s->start, s->last_change, s->open > 0)) {
		s->last_kept = ts;
		return dump__release(s->d) || dump__write(s->d, rec);
	}
	keep = ts - s->last_kept >= 30 * NT_NSEC_PER_SEC;
	json_array_foreach(json_object_get(rec, "conns"), i, c) keep |=
		json_is_true(json_object_get(c, "closed"));
	if (keep)
		s->last_kept = ts;
	text = json_dumps(rec, JSON_COMPACT);
	if (!text)
		return -1;
	return dump__hold(s->d, text, &text_ops, strlen(text), ts, keep);
}

int main(int argc, char **argv)
{
	struct st s = {0};
	char err[512];
	uint64_t held, thinned;
	struct stat out;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "full"))) {
		fprintf(stderr, "usage: dumpsize IN OUT [full]\n");
		return 64;
	}
	s.full = argc == 4;
	if (dump__create(argv[2], false, 0, 0, &s.d)) {
		perror(argv[2]);
		return 73;
	}
	if (dump_read_states(argv[1], on_rec, &s, err, sizeof(err))) {
		fprintf(stderr, "dumpsize: %s\n", err);
		dump__close(s.d);
		return 65;
	}
	dump__release(s.d);
	dump__frames(s.d, &held, &thinned);
	dump__close(s.d);
	if (stat(argv[2], &out))
		return 74;
	printf("read %llu records; wrote %.0f bytes; snapshots held %llu, thinned %llu\n",
	       (unsigned long long)s.nin, (double)out.st_size, (unsigned long long)held,
	       (unsigned long long)thinned);
	return 0;
}
