/* SPDX-License-Identifier: MIT */
/*
 * Progress over time, per process, as a text heat strip: the bytes a process's connections
 * moved (sent and received), sampled at each snapshot of a dump, cut into columns of equal time,
 * each drawn as one character whose height is its rate against the job's highest. Where
 * progress stopped, and on which ranks first, shows as a gap. Pure.
 */
#ifndef NT_HEAT_H
#define NT_HEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct heat_pt {
	uint64_t ts_ns;
	long long total; /* bytes moved so far */
};

struct heat_series {
	int pid;
	struct heat_pt *pts; /* in time order */
	int n, cap;
};

struct heat {
	struct heat_series *s;
	int n, cap;
	int hint; /* where the next pid is looked for first */
};

/* pid's total at ts (a snapshot's; not before its last point); 0 or -ENOMEM */
int heat_add(struct heat *h, int pid, uint64_t ts_ns, long long total);

/*
 * The bytes a second pid moved in each of ncols columns of equal time from t0 to t1 into
 * out[ncols]: the rise of its total over the column, the total taken as a line between its
 * points (0 before the first, held after the last). A pid never seen gives 0s. false if
 * t1 <= t0 or ncols < 1.
 */
bool heat_columns(const struct heat *h, int pid, uint64_t t0, uint64_t t1, int ncols, double *out);

/*
 * Rates v[n] in columns of col_s from from_s, as the rates of nout columns of ocol_s from ofrom_s
 * (the time each column of out shares with each of v's, weighted; 0 where v has none): the strips
 * of ranks whose dumps began at different times, on one grid. Identity on the same grid.
 */
void heat_resample(const double *v, int n, double from_s, double col_s, double *out, int nout,
		   double ofrom_s, double ocol_s);

/*
 * One strip: v[n] against max, a character a column. Nothing moved: ' '; else one of 8
 * heights, at least the lowest ("▁▂▃▄▅▆▇█" in UTF-8, ".:-=+*#@" in ASCII); blank throughout
 * if max <= 0. out holds up to len bytes, NUL-terminated, whole characters only (3 bytes a
 * column in UTF-8).
 */
void heat_strip(const double *v, int n, double max, bool utf8, char *out, size_t len);

/*
 * Whether the terminal's locale is UTF-8, as setlocale(LC_CTYPE, "") would take it: the
 * first of LC_ALL, LC_CTYPE and LANG that is set and not empty ("C.UTF-8", "en_US.utf8").
 */
bool heat_utf8(const char *lc_all, const char *lc_ctype, const char *lang);

void heat_free(struct heat *h);

#endif /* NT_HEAT_H */
