// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "present/dump.h"
#include "present/dumpdelta.h"
#include "present/dumpring.h"
#include "present/dumpzst.h"
#include "util/log.h"
#include "nccltrace.h"

struct dump {
	int fd;
	char *path;
	struct delta_enc *enc;	/* snapshots and states as what changed (dumpdelta.h) */
	struct dump_ring *ring; /* the calm job's last minute of snapshots (dumpring.h) */
	uint64_t frames_held, frames_dropped;
	struct zst_out *zst; /* a ".zst" dump: the records since the last frame (dumpzst.h) */
	uint64_t zst_flushed_ns;
	uint64_t written;	   /* bytes on disk */
	uint64_t calm_seen[2];	   /* calm frames offered: snapshots, states */
	struct dump_budget budget; /* --max-dump-bytes (dump.h) */
};

int dump_create_file(const char *path, bool chown, uid_t uid, gid_t gid)
{
	int fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0640);
	if (fd < 0)
		return -errno;
	if (chown && fchown(fd, uid, gid)) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	return fd;
}

int dump_create_dir(const char *path, bool chown, uid_t uid, gid_t gid)
{
	struct stat st;
	int fd, err;

	if (mkdir(path, 0750))
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/*
	 * The one mkdir made: a writer of the parent could have put another in its place since,
	 * and fchown (never chown on the path) gives only this one away.
	 */
	if (fstat(fd, &st) || st.st_uid != geteuid()) {
		close(fd);
		return -EEXIST;
	}
	if (chown && fchown(fd, uid, gid)) {
		err = -errno;
		close(fd);
		rmdir(path);
		return err;
	}
	return fd;
}

int dump__create(const char *path, bool chown, uid_t uid, gid_t gid, struct dump **out)
{
	struct dump *d;
	int fd = dump_create_file(path, chown, uid, gid);

	if (fd < 0)
		return fd;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path)) || !(d->enc = delta_enc_new()) ||
	    !(d->ring = dump_ring_new((uint64_t)DUMP_RING_SPAN_S * 1000000000ull,
				      DUMP_RING_MAX_BYTES))) {
		if (d) {
			free(d->path);
			delta_enc_free(d->enc);
		}
		free(d);
		close(fd);
		unlink(path);
		return -ENOMEM;
	}
	if (dumpzst_name(path) && !(d->zst = zst_out_new())) {
		d->fd = fd;
		dump__close(d);
		unlink(path);
		return -ENOMEM;
	}
	d->fd = fd;
	*out = d;
	return 0;
}

/* the bytes the budget allows the file (0: no budget), the footer's share kept but for it */
static uint64_t limit_of(const struct dump *d, bool footer)
{
	if (!d->budget.bytes)
		return 0;
	return d->budget.bytes - (footer ? 0 : DUMP_FOOTER_RESERVE);
}

/*
 * A record into a compressed dump: into the next frame while the most that frame can take on
 * disk fits the budget; past that, what is pending goes now, and the record is a frame of its
 * own, written if its compressed bytes fit. 0 (*left_out set when it did not fit) or -errno.
 */
static int zst_put(struct dump *d, const char *s, size_t len, bool footer, bool *left_out)
{
	uint64_t limit = limit_of(d, footer);
	ssize_t n;
	int err;

	if (!limit || d->written + zst_out_bound(d->zst, len) <= limit) {
		/* written at the tick, or now if the frame is full */
		err = zst_out_add(d->zst, s, len);
		return err > 0 ? zst_out_flush(d->zst, d->fd, &d->written) : err;
	}
	err = zst_out_flush(d->zst, d->fd, &d->written);
	if (!err)
		err = zst_out_add(d->zst, s, len);
	if (err < 0)
		return err;
	n = zst_out_seal(d->zst);
	if (n < 0)
		return (int)n;
	if (d->written + (uint64_t)n > limit) {
		zst_out_drop(d->zst);
		*left_out = true;
		return 0;
	}
	return zst_out_write(d->zst, d->fd, &d->written);
}

/* a record the budget leaves out: counted, and the time it was first met */
static void over_budget(struct dump *d, json_t *rec, bool frame)
{
	json_t *ts = json_object_get(rec, "ts_ns");

	if (frame) {
		d->budget.frames_dropped++;
		/* the reader's last frame is the one before: the next one whole */
		delta_enc_reset(d->enc);
	} else {
		d->budget.records_dropped++;
	}
	if (!d->budget.met_ns && json_is_integer(ts))
		d->budget.met_ns = (uint64_t)json_integer_value(ts);
}

static bool is_frame(json_t *rec)
{
	const char *t = json_string_value(json_object_get(rec, "type"));

	return t && (!strcmp(t, "snapshot") || !strcmp(t, "state"));
}

int dump__write(struct dump *d, json_t *rec)
{
	size_t len, off = 0;
	int err = 0;
	char *s;
	bool footer, left_out = false;

	/* out of memory, it stays whole: a key frame */
	delta_encode(d->enc, rec);
	s = json_dumps(rec, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!s) {
		delta_enc_reset(d->enc);
		return -ENOMEM;
	}
	len = strlen(s);
	s[len] = '\n'; /* json_dumps' NUL becomes the newline: one write per record */
	footer = !strcmp(json_string_value(json_object_get(rec, "type")) ?: "", "footer");
	if (d->zst) {
		err = zst_put(d, s, len + 1, footer, &left_out);
		off = len + 1;
	} else if (limit_of(d, footer) && d->written + len + 1 > limit_of(d, footer)) {
		left_out = true;
		off = len + 1;
	}
	if (left_out)
		over_budget(d, rec, is_frame(rec));
	while (off < len + 1) {
		ssize_t n = write(d->fd, s + off, len + 1 - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		off += n;
		d->written += (uint64_t)n;
	}
	free(s);
	/* a frame not written whole: a reader would apply the next one to another */
	if (err)
		delta_enc_reset(d->enc);
	return err;
}

/*
 * A calm frame (what = 0 a snapshot, 1 a state) under the budget: every one while half of it
 * is free, then one in 2, 4 and 8 as the free part halves, and none in its last sixteenth,
 * which is the findings'. Counted as thinned when left out.
 */
static bool calm_ok(struct dump *d, int what)
{
	uint64_t used, free_b, share, every = 1;

	if (!d->budget.bytes)
		return true;
	used = d->written + (d->zst ? zst_out_pending(d->zst) : 0);
	free_b = used < d->budget.bytes ? d->budget.bytes - used : 0;
	for (share = d->budget.bytes / 2; free_b < share; share /= 2)
		if ((every *= 2) > 8)
			break;
	if (every > 8 || d->calm_seen[what]++ % every) {
		d->budget.calm_thinned++;
		return false;
	}
	return true;
}

int dump__write_calm(struct dump *d, json_t *rec)
{
	const char *t = json_string_value(json_object_get(rec, "type"));

	if (!calm_ok(d, t && !strcmp(t, "state")))
		return 0;
	return dump__write(d, rec);
}

void dump__set_budget(struct dump *d, uint64_t bytes)
{
	d->budget.bytes = bytes;
}

json_t *dump__budget_json(const struct dump *d)
{
	const struct dump_budget *b = &d->budget;
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "bytes", (json_int_t)b->bytes, "written",
			      (json_int_t)d->written, "calm_thinned", (json_int_t)b->calm_thinned,
			      "frames_dropped", (json_int_t)b->frames_dropped, "records_dropped",
			      (json_int_t)b->records_dropped);

	if (o && b->met_ns)
		json_object_set_new(o, "met_ns", json_integer((json_int_t)b->met_ns));
	return o;
}

/* a held frame's record built and written, the frame freed */
static int write_held(struct dump *d, void *item, const struct dump_held_ops *ops)
{
	json_t *rec = ops->record(item);
	int err = rec ? dump__write(d, rec) : -ENOMEM;

	json_decref(rec);
	ops->free(item);
	return err;
}

/* the ring's frames that are due (all: every one), written if kept, else dropped */
static int drain(struct dump *d, uint64_t now, bool all)
{
	const struct dump_held_ops *ops;
	void *item;
	bool keep;
	int err = 0;

	while ((item = dump_ring_pop(d->ring, now, all, &ops, &keep))) {
		if (!keep && !all) {
			ops->free(item);
			d->frames_dropped++;
			continue;
		}
		/* kept while calm: as the budget allows */
		if (!all && !calm_ok(d, 0)) {
			ops->free(item);
			continue;
		}
		if ((err = write_held(d, item, ops)))
			break;
	}
	return err;
}

int dump__hold(struct dump *d, void *item, const struct dump_held_ops *ops, size_t bytes,
	       uint64_t ts, bool keep)
{
	/* no room to hold it: written now, so that nothing is lost */
	if (dump_ring_push(d->ring, item, ops, bytes, ts, keep))
		return write_held(d, item, ops);
	d->frames_held++;
	return drain(d, ts, false);
}

int dump__release(struct dump *d)
{
	return drain(d, 0, true);
}

int dump__settle(struct dump *d)
{
	return drain(d, UINT64_MAX, false);
}

int dump__tick(struct dump *d, uint64_t now)
{
	int err;

	if (!d->zst || now - d->zst_flushed_ns < DUMPZST_EVERY_NS)
		return 0;
	d->zst_flushed_ns = now;
	err = zst_out_flush(d->zst, d->fd, &d->written);
	/* the frames in it are lost: the next one whole */
	if (err)
		delta_enc_reset(d->enc);
	return err;
}

bool dump__compressed(const struct dump *d)
{
	return d->zst != NULL;
}

int dump__set_ring(struct dump *d, unsigned span_s)
{
	struct dump_ring *r = dump_ring_new((uint64_t)span_s * 1000000000ull, DUMP_RING_MAX_BYTES);

	if (!r)
		return -ENOMEM;
	dump__release(d);
	dump_ring_free(d->ring);
	d->ring = r;
	return 0;
}

void dump__frames(const struct dump *d, uint64_t *held, uint64_t *dropped)
{
	*held = d->frames_held;
	*dropped = d->frames_dropped;
}

const char *dump__path(const struct dump *d)
{
	return d->path;
}

void dump__close(struct dump *d)
{
	if (!d)
		return;
	dump__release(d);
	dump_ring_free(d->ring);
	if (d->zst) {
		zst_out_flush(d->zst, d->fd, &d->written);
		zst_out_free(d->zst);
	}
	fsync(d->fd);
	close(d->fd);
	delta_enc_free(d->enc);
	free(d->path);
	free(d);
}

void dump_default_name(char *buf, size_t len, const char *host, const char *job, time_t now,
		       int seq)
{
	struct tm tm;
	char ts[32], n[16] = "";

	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm);
	if (seq > 1)
		snprintf(n, sizeof(n), "-%d", seq);
	snprintf(buf, len, "nccltrace-%s%s%s-%s%s.jsonl", host, job && *job ? "-" : "",
		 job ? job : "", ts, n);
}

/*
 * the dump whose cut last record was told of: report and html read a dump more than once (each
 * thread its own: a merged report reads its dumps on several)
 */
static __thread char cut_warned[4096];

static const char *rdzv_id(char *const *cmd, int ncmd)
{
	for (int i = 0; i < ncmd; i++) {
		const char *a = cmd[i];

		if (!strncmp(a, "--rdzv-id", 9) || !strncmp(a, "--rdzv_id", 9)) {
			if (a[9] == '=')
				return a + 10;
			if (!a[9] && i + 1 < ncmd)
				return cmd[i + 1];
		}
	}
	return NULL;
}

void dump_job_id(char *buf, size_t len, const char *slurm_job_id, const char *run_id,
		 char *const *cmd, int ncmd)
{
	const char *id = slurm_job_id && *slurm_job_id ? slurm_job_id
			 : run_id && *run_id	       ? run_id
						       : rdzv_id(cmd, ncmd);
	size_t n;

	if (!len)
		return;
	buf[0] = '\0';
	if (!id || !*id)
		return;
	snprintf(buf, len, "%s-%.48s", id == slurm_job_id ? "slurm" : "run", id);
	for (n = 0; buf[n]; n++)
		if (!((buf[n] >= 'a' && buf[n] <= 'z') || (buf[n] >= 'A' && buf[n] <= 'Z') ||
		      (buf[n] >= '0' && buf[n] <= '9') || buf[n] == '.' || buf[n] == '-' ||
		      buf[n] == '_'))
			buf[n] = '_';
}

static int read_lines(const char *path, int (*fn)(void *, json_t *, int), void *ctx, int want,
		      char *err, size_t errlen);

int dump_read(const char *path, int (*fn)(void *, json_t *, int), void *ctx, char *err,
	      size_t errlen)
{
	return read_lines(path, fn, ctx, DUMP_READ_SNAPSHOTS, err, errlen);
}

int dump_read_events(const char *path, int (*fn)(void *, json_t *, int), void *ctx, char *err,
		     size_t errlen)
{
	return read_lines(path, fn, ctx, 0, err, errlen);
}

int dump_read_states(const char *path, int (*fn)(void *, json_t *, int), void *ctx, char *err,
		     size_t errlen)
{
	return read_lines(path, fn, ctx, DUMP_READ_STATES | DUMP_READ_SNAPSHOTS, err, errlen);
}

/*
 * Is the line a record of a type want leaves out: a state or a snapshot, as record_state() and
 * record_snapshot() write them (their "type" first)? One written otherwise is read.
 */
static bool unwanted(const char *line, size_t n, int want)
{
	static const char st[] = "{\"type\":\"state\",", sn[] = "{\"type\":\"snapshot\",",
			  ft[] = "{\"type\":\"footer\",";

	if (want & DUMP_READ_ONLY_STATES)
		return !(n > sizeof(st) && !memcmp(line, st, sizeof(st) - 1)) &&
		       !(n > sizeof(ft) && !memcmp(line, ft, sizeof(ft) - 1));

	if (!(want & DUMP_READ_STATES) && n > sizeof(st) && !memcmp(line, st, sizeof(st) - 1))
		return true;
	return !(want & DUMP_READ_SNAPSHOTS) && n > sizeof(sn) && !memcmp(line, sn, sizeof(sn) - 1);
}

/* the header's check: 0, or -1 with why in err */
static int header_bad(json_t *rec, const char *path, int lineno, char *err, size_t errlen)
{
	json_t *v = json_object_get(rec, "nccltrace");

	if (!json_is_integer(v)) {
		snprintf(err, errlen, "%s:%d: not an nccltrace dump (no header)", path, lineno);
		return -1;
	}
	if (json_integer_value(v) > NT_DUMP_FORMAT) {
		snprintf(err, errlen,
			 "%s:%d: dump format %lld is newer than this nccltrace reads (%d)", path,
			 lineno, (long long)json_integer_value(v), NT_DUMP_FORMAT);
		return -1;
	}
	return 0;
}

/*
 * A record of another dump format than the header's: the header of another dump (two dumps
 * joined, one of them older), or a frame written as what changed (format 2) in a format 1
 * dump. 0, or -1 with why in err.
 */
static int other_version(json_t *rec, json_int_t format, const char *path, int lineno, char *err,
			 size_t errlen)
{
	json_t *v = json_object_get(rec, "nccltrace");

	if (v && json_integer_value(v) != format) {
		snprintf(err, errlen,
			 "%s:%d: the header of a format %lld dump inside a format %lld one (two "
			 "dumps joined?); the %d records before it read",
			 path, lineno, (long long)json_integer_value(v), (long long)format,
			 lineno - 1);
		return -1;
	}
	if (format < 2 && (json_object_get(rec, "delta") || json_object_get(rec, "key"))) {
		snprintf(err, errlen,
			 "%s:%d: a frame of dump format 2 (written as what changed) in a format "
			 "%lld dump; the %d records before it read",
			 path, lineno, (long long)format, lineno - 1);
		return -1;
	}
	return 0;
}

/* the header's check (header: it was read, its format in *format), or the others' */
static int format_bad(json_t *rec, bool header, json_int_t *format, const char *path, int lineno,
		      char *err, size_t errlen)
{
	if (header)
		return other_version(rec, *format, path, lineno, err, errlen);
	if (header_bad(rec, path, lineno, err, errlen))
		return -1;
	*format = json_integer_value(json_object_get(rec, "nccltrace"));
	return 0;
}

/*
 * How the reading of f ended, after lineno lines: a read error (a corrupt compressed frame) is
 * -1 with why in err; a compressed dump cut inside its last frame is told once
 */
static int read_end(FILE *f, const struct zst_in_status *zs, const char *path, int lineno,
		    char *err, size_t errlen)
{
	if (ferror(f)) {
		snprintf(err, errlen, "%s:%d: %s after the %d records before it%s%s", path,
			 lineno + 1, zs->error[0] ? "corrupt compressed data" : "cannot read on",
			 lineno, zs->error[0] ? ": " : "",
			 zs->error[0] ? zs->error : strerror(errno));
		return -1;
	}
	if (zs->cut && strcmp(cut_warned, path)) {
		pr_warn("%s: its last compressed frame was cut short (the tracer was killed while "
			"writing it, or the disk was full); reading the %d records before it\n",
			path, lineno);
		snprintf(cut_warned, sizeof(cut_warned), "%s", path);
	}
	return 0;
}

struct dump_reader {
	const char *path;
	FILE *f;
	struct zst_in_status zs;
	char *line;
	size_t cap;
	int lineno, want;
	json_int_t format;
	bool header, done;
	struct delta_dec *dec;
};

struct dump_reader *dump_reader_open(const char *path, int want, char *err, size_t errlen)
{
	struct dump_reader *r = calloc(1, sizeof(*r));

	err[0] = '\0';
	if (!r || !(r->dec = delta_dec_new())) {
		snprintf(err, errlen, "%s: out of memory", path);
		free(r);
		return NULL;
	}
	r->path = path;
	r->want = want;
	r->f = dumpzst_open(path, &r->zs);
	if (!r->f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		delta_dec_free(r->dec);
		free(r);
		return NULL;
	}
	return r;
}

/* the end of the lines: 0 at a good one, -1 with why in err */
static int reader_end(struct dump_reader *r, char *err, size_t errlen)
{
	r->done = true;
	if (read_end(r->f, &r->zs, r->path, r->lineno, err, errlen))
		return -1;
	if (!r->header) {
		snprintf(err, errlen, "%s: empty file, not an nccltrace dump", r->path);
		return -1;
	}
	return 0;
}

int dump_reader_next(struct dump_reader *r, json_t **out, int *lineno, char *err, size_t errlen)
{
	ssize_t n;
	char why[256];

	*out = NULL;
	err[0] = '\0';
	if (r->done)
		return 0;
	while ((n = getline(&r->line, &r->cap, r->f)) >= 0) {
		char *line = r->line;
		json_error_t je;
		json_t *rec;

		r->lineno++;
		if (n > 0 && line[n - 1] == '\n') {
			line[--n] = '\0';
		} else if (n > 0 && !r->header) {
			snprintf(err, errlen, "%s:%d: cut short before its header", r->path,
				 r->lineno);
			r->done = true;
			return -1;
		} else if (n > 0) {
			/* the dump as far as it was written (a full disk, a tracer killed while
			 * writing): every record before the cut one is whole, so read those */
			if (strcmp(cut_warned, r->path)) {
				pr_warn("%s:%d: the last record was cut short (no end of line: the "
					"disk was full, or the tracer was killed while writing); "
					"reading the %d records before it\n",
					r->path, r->lineno, r->lineno - 1);
				snprintf(cut_warned, sizeof(cut_warned), "%s", r->path);
			}
			return reader_end(r, err, errlen);
		}
		if (n == 0 || (r->header && unwanted(line, (size_t)n, r->want)))
			continue;
		r->done = true; /* until the record is good */
		if (memchr(line, '\0', n)) {
			snprintf(err, errlen, "%s:%d: binary data, not a JSON record", r->path,
				 r->lineno);
			return -1;
		}
		rec = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je);
		if (!rec || !json_is_object(rec)) {
			snprintf(err, errlen, "%s:%d: not a JSON object%s%s", r->path, r->lineno,
				 rec ? "" : ": ", rec ? "" : je.text);
			json_decref(rec);
			return -1;
		}
		/* the first record (even after blank lines) the header, the others of its format */
		if (format_bad(rec, r->header, &r->format, r->path, r->lineno, err, errlen)) {
			json_decref(rec);
			return -1;
		}
		r->header = true;
		/* a frame written as what changed, whole again */
		if (delta_decode(r->dec, rec, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%d: %s", r->path, r->lineno, why);
			json_decref(rec);
			return -1;
		}
		r->done = false;
		*out = rec;
		*lineno = r->lineno;
		return 1;
	}
	return reader_end(r, err, errlen);
}

void dump_reader_close(struct dump_reader *r)
{
	if (!r)
		return;
	free(r->line);
	fclose(r->f);
	delta_dec_free(r->dec);
	free(r);
}

static int read_lines(const char *path, int (*fn)(void *, json_t *, int), void *ctx, int want,
		      char *err, size_t errlen)
{
	struct dump_reader *r = dump_reader_open(path, want, err, errlen);
	json_t *rec;
	int line, rc;

	if (!r)
		return -1;
	while ((rc = dump_reader_next(r, &rec, &line, err, errlen)) == 1) {
		rc = fn(ctx, rec, line);
		json_decref(rec);
		if (rc) {
			if (!err[0])
				snprintf(err, errlen, "%s:%d: invalid record", path, line);
			rc = -1;
			break;
		}
	}
	dump_reader_close(r);
	return rc;
}
