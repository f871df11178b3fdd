// SPDX-License-Identifier: MIT
#include "present/console.h"
#include "util/fmt.h"

/* what the job controls, said on a terminal: no escape sequence gets through (fmt_safe) */
#define SAFE(s, b) fmt_safe((s), (b), sizeof(b))

void console_kind_label(enum finding_kind k, char *buf, size_t len)
{
	const char *n = finding_kind_name(k);
	size_t i;

	for (i = 0; n[i] && i + 1 < len; i++)
		buf[i] = n[i] == '_' ? '-' : (n[i] >= 'a' && n[i] <= 'z' ? n[i] - 32 : n[i]);
	buf[i] = '\0';
}

void console_finding(FILE *out, enum finding_event ev, const struct tracked_finding *t,
		     uint64_t now)
{
	const struct finding *f = &t->f;
	char label[32], b[4096];

	console_kind_label(f->kind, label, sizeof(label));
	if (ev == FINDING_OPEN) {
		fprintf(out, "nccltrace: %s %.1fs%s  %s\n", label,
			(double)(now - f->since_ns) / NT_NSEC_PER_SEC, t->sure ? "" : ", early",
			SAFE(f->summary, b));
		for (int i = 0; i < f->nevidence; i++)
			fprintf(out, "    %s\n", SAFE(f->evidence[i], b));
		for (int i = 0; i < f->nhyp; i++)
			fprintf(out, "    %s %s\n",
				i ? "or:" : "likely:", SAFE(f->hypotheses[i], b));
	} else if (ev == FINDING_CLOSE) {
		fprintf(out, "nccltrace: %s over after %.1fs%s: %s\n", label,
			(double)(t->last_seen_ns - f->since_ns) / NT_NSEC_PER_SEC,
			t->transient ? " (transient: it went on before -t)" : "",
			SAFE(f->summary, b));
	}
}

void console_summary(FILE *out, const struct findings *fs)
{
	for (int i = 0; i < fs->n; i++) {
		char label[32], b[4096];

		console_kind_label(fs->v[i].f.kind, label, sizeof(label));
		fprintf(out, "nccltrace: %s  %s\n", label, SAFE(fs->v[i].f.summary, b));
	}
}
