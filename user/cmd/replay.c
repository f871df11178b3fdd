// SPDX-License-Identifier: MIT
/*
 * `nccltrace replay DUMP...`: a recorded dump served as the tracer that wrote it served it live,
 * /state, so that `watch` or anything that polls a tracer
 * reads a post-mortem dump as a live job. The dump is read as time goes (one state ahead, never
 * the whole file), in real time or faster; each dump is one node, and --nodes N makes N of them
 * out of a few dumps (the last one repeated), each its ranks at an offset and its host under its own name: the scale of
 * a big job, on one machine, for `watch` and its benchmark (scripts/scale-bench.sh).
 *
 * One file for the command (its options, the dumps read as time goes, the pages, the loop), as
 * run.c and watch.c are: the page it serves is sessionlisten.c's form and the answers to
 * ?since= are present/statedelta.c's, shared; what is left is the replay's own.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "cmd/listen.h"
#include "cmd/subcmds.h"
#include "present/dump.h"
#include "present/statedelta.h"
#include "util/clock.h"
#include "util/exits.h"

#define REPLAY_STEP_MS 100 /* how often the dumps' time moves on */
#define REPLAY_PORTS   65536

static const char replay_help[] =
	"Usage: nccltrace replay [--listen ADDR:PORT] [--speed X] [--from SEC] [--nodes N]\n"
	"                        [--host NAME] [--rank-offset K] [--token-file FILE] DUMP...\n"
	"\n"
	"Serve recorded dumps as the tracers that wrote them served them live: /state, the\n"
	"snapshot in force at each moment of the dump and the findings then open, so that\n"
	"'nccltrace watch' (its dashboard, or --once) or anything polling a tracer reads a\n"
	"post-mortem dump as a live job. Each dump is a node, served on its own port (the\n"
	"first on --listen's, the next on the one after, ...); the dumps play together, from\n"
	"the first state each wrote. The page is a live tracer's, plus \"replay\": the dump,\n"
	"the node and the second of the dump served. A dump is read as time goes, one state\n"
	"ahead: an hour-long dump costs what one second of it does. Serves until stopped\n"
	"(SIGINT, SIGTERM); at a dump's end its last state stays, the job over.\n"
	"\n"
	"Options:\n"
	"  --listen ADDR:PORT  the first node's port (default 127.0.0.1:9464); loopback\n"
	"                      unless --token-file is given, as for 'run --listen'\n"
	"  --speed X           X seconds of the dump a second (default 1); 0: stay at --from\n"
	"  --from SEC          start SEC seconds after the dump's first state (default 0)\n"
	"  --nodes N           N nodes out of the dumps (node k plays dump k, the nodes past\n"
	"                      them the last dump): node k's host is HOST-k, its ranks k*R\n"
	"                      on (R: the most ranks of a dump), every communicator and\n"
	"                      world N*R ranks, and its loopback its own (no connection\n"
	"                      joins another node's)\n"
	"  --host NAME         the host's name (with --nodes: NAME-k)\n"
	"  --rank-offset K     every rank K more (with --nodes: before k*R)\n"
	"  --token-file FILE   require 'Authorization: Bearer' and FILE's first line\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit status: 0 when stopped; 64 on usage errors; 65 or 66 for a dump that cannot be\n"
	"read; 69 when a port cannot be listened on.\n"
	"\n"
	"Examples:\n"
	"  nccltrace replay nccltrace-node1.jsonl & nccltrace watch 127.0.0.1:9464\n"
	"  nccltrace replay --nodes 128 --listen 127.0.0.1:9500 stall.jsonl healthy.jsonl\n";

struct replay_opts {
	const char *listen, *host, *token_file;
	double speed, from_s;
	int nodes, rank_offset;
	bool nodes_given;
	char **dumps;
	int ndumps;
};

/* one dump, read as its time goes */
struct rsrc {
	const char *path;
	struct dump_reader *r;
	json_t *header;
	json_t *cur;   /* the state record in force, NULL before the first */
	json_t *ahead; /* the next record that matters (state, finding, footer), NULL at the end */
	json_t *findings; /* the open ones: {"ID": its last record} */
	int64_t first_ts; /* the first state's ts_ns */
	int64_t last_ts;  /* the last record applied */
	unsigned gen;	  /* each state or finding applied */
	bool ended;	  /* its footer, or its end, reached */
	bool told_end;
	int ranks; /* the most ranks a state of it names (world size, else highest rank + 1) */
};

/* one node: a dump under its own host, ranks and port */
struct replay;
struct rnode {
	struct replay *rp;
	struct rsrc *src;
	int index;
	char host[96], loopback[200];
	int rank_offset;
	struct listener *l;
	char *body;   /* its page, made for gen, job_over */
	json_t *json; /* the same, for ?since= */
	uint64_t seq;
	struct state_deltas *deltas;
	unsigned body_gen;
	bool body_over;
	uint64_t body_at; /* when it was made (with --speed 0 remade each second) */
};

struct replay {
	struct replay_opts o;
	struct rsrc *src;
	struct rnode *node;
	int world; /* every communicator's ranks with --nodes, else 0: as written */
	uint64_t mono0;
	uint64_t pages;
};

static int64_t rec_ts(const json_t *rec)
{
	return (int64_t)json_integer_value(json_object_get(rec, "ts_ns"));
}

static const char *rec_type(const json_t *rec)
{
	return json_string_value(json_object_get(rec, "type")) ?: "";
}

/* the next record of src that replay uses, into src->ahead; -1 with why in err */
static int read_ahead(struct rsrc *src, char *err, size_t errlen)
{
	json_t *rec;
	int line, rc;

	src->ahead = NULL;
	while ((rc = dump_reader_next(src->r, &rec, &line, err, errlen)) == 1) {
		const char *t = rec_type(rec);

		if (!src->header) {
			src->header = rec;
			continue;
		}
		if ((!strcmp(t, "state") && json_is_object(json_object_get(rec, "state")) &&
		     json_is_integer(json_object_get(rec, "ts_ns"))) ||
		    !strcmp(t, "finding") || !strcmp(t, "footer")) {
			src->ahead = rec;
			return 0;
		}
		json_decref(rec);
	}
	return rc;
}

/* a rank (a record of it, or a process of a state) counted in src->ranks */
static void note_rank(struct rsrc *src, const json_t *p)
{
	int ws = (int)json_integer_value(json_object_get(p, "world_size"));
	int r = (int)json_integer_value(json_object_get(p, "rank"));

	if (ws > src->ranks)
		src->ranks = ws;
	if (json_is_integer(json_object_get(p, "rank")) && r + 1 > src->ranks)
		src->ranks = r + 1;
}

static int rank_record(void *ctx, json_t *rec, int line)
{
	json_t *p;
	size_t i;

	(void)line;
	if (!strcmp(rec_type(rec), "rank"))
		note_rank(ctx, rec);
	json_array_foreach(json_object_get(json_object_get(rec, "state"), "procs"), i, p)
		note_rank(ctx, p);
	return 0;
}

/*
 * The ranks of a dump, known before it plays (the offsets of --nodes): its rank records, a pass
 * that leaves the states unread; their processes where it has none (a dump of no rank record)
 */
static int count_ranks(struct rsrc *src, char *err, size_t errlen)
{
	if (dump_read_events(src->path, rank_record, src, err, errlen))
		return -1;
	if (!src->ranks && dump_read_states(src->path, rank_record, src, err, errlen))
		return -1;
	return 0;
}

/* the record ahead, applied: a state in force, a finding opened or closed, the end */
static void apply(struct rsrc *src, json_t *rec)
{
	const char *t = rec_type(rec);

	if (json_is_integer(json_object_get(rec, "ts_ns")))
		src->last_ts = rec_ts(rec);
	src->gen++;
	if (!strcmp(t, "state")) {
		json_decref(src->cur);
		src->cur = rec;
		return;
	}
	if (!strcmp(t, "finding")) {
		char id[24];

		snprintf(id, sizeof(id), "%lld",
			 (long long)json_integer_value(json_object_get(rec, "id")));
		if (!strcmp(json_string_value(json_object_get(rec, "event")) ?: "", "close"))
			json_object_del(src->findings, id);
		else
			json_object_set(src->findings, id, rec);
	} else {
		src->ended = true;
	}
	json_decref(rec);
}

/* src's records up to its time to: 0, or -1 with why in err */
static int advance(struct rsrc *src, int64_t to, char *err, size_t errlen)
{
	while (src->ahead && (!src->cur || rec_ts(src->ahead) <= to ||
			      !json_is_integer(json_object_get(src->ahead, "ts_ns")))) {
		apply(src, src->ahead);
		if (read_ahead(src, err, errlen))
			return -1;
	}
	if (!src->ahead && !src->ended) {
		src->ended = true;
		src->gen++;
	}
	return 0;
}

/* the dump opened and read to its first state; an exit status with why in err */
static int src_open(struct rsrc *src, const char *path, char *err, size_t errlen)
{
	src->path = path;
	src->findings = json_object();
	src->r = dump_reader_open(path, DUMP_READ_STATES, err, errlen);
	if (!src->r)
		return EXIT_NOINPUT;
	do {
		if (read_ahead(src, err, errlen))
			return EXIT_DATAERR;
		if (!src->ahead) {
			snprintf(err, errlen,
				 "%s: no state records (a dump of nccltrace before multi-host "
				 "reports, or one that ran less than a second): nothing to replay",
				 path);
			return EXIT_DATAERR;
		}
		if (!strcmp(rec_type(src->ahead), "state"))
			break;
		apply(src, src->ahead);
	} while (1);
	src->first_ts = rec_ts(src->ahead);
	src->ended = false;
	return count_ranks(src, err, errlen) ? EXIT_DATAERR : 0;
}

static void src_close(struct rsrc *src)
{
	dump_reader_close(src->r);
	json_decref(src->header);
	json_decref(src->cur);
	json_decref(src->ahead);
	json_decref(src->findings);
}

/* the dumps' time now: from their first state, --from on, at --speed */
static int64_t dump_time(const struct replay *rp, const struct rsrc *src, uint64_t mono)
{
	return src->first_ts + (int64_t)(rp->o.from_s * 1e9 + 0.5) +
	       (int64_t)((double)(mono - rp->mono0) * rp->o.speed);
}

static void shift_int(json_t *o, const char *key, int by)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v) && json_integer_value(v) >= 0)
		json_object_set_new(o, key, json_integer(json_integer_value(v) + by));
}

static void set_size(json_t *o, const char *key, int world)
{
	json_t *v = json_object_get(o, key);

	if (world > 0 && json_is_integer(v) && json_integer_value(v) > 0)
		json_object_set_new(o, key, json_integer(world));
}

/*
 * Every rank of a state at an offset, every world and communicator of size world (0: as
 * written): processes' and communicators' ranks, NCCL's log's communicators and the ring paths
 * between ranks it logged.
 */
static void move_ranks(json_t *v, int by, int world, bool path)
{
	const char *k;
	json_t *e;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, e) move_ranks(e, by, world, path);
		return;
	}
	if (!json_is_object(v))
		return;
	shift_int(v, "rank", by);
	shift_int(v, "proxy_rank", by);
	set_size(v, "nranks", world);
	set_size(v, "world_size", world);
	if (path) {
		shift_int(v, "from", by);
		shift_int(v, "to", by);
	}
	json_object_foreach(v, k, e) if (json_is_array(e) || json_is_object(e))
		move_ranks(e, by, world, !strcmp(k, "paths"));
}

/* a finding as a live page has it (open, as of the state's time) */
static json_t *page_finding(const json_t *rec, int64_t now, int by)
{
	json_t *f = json_deep_copy(rec), *w = json_object_get(f, "waiter_ranks"), *e;
	int64_t ts = rec_ts(rec);
	size_t i;

	json_object_del(f, "type");
	json_object_del(f, "realtime_ns");
	json_object_set_new(f, "event", json_string("update"));
	if (now > ts) {
		json_object_set_new(f, "ts_ns", json_integer(now));
		json_object_set_new(f, "since_s",
				    json_real(json_number_value(json_object_get(f, "since_s")) +
					      (double)(now - ts) / 1e9));
	}
	if (by) {
		shift_int(f, "rank", by);
		shift_int(f, "peer_rank", by);
		shift_int(f, "remote_rank", by);
		json_array_foreach(w, i, e)
			json_array_set_new(w, i, json_integer(json_integer_value(e) + by));
	}
	return f;
}

/* the command as `run` joins it */
static json_t *cmd_line(const json_t *cmd)
{
	char buf[4096];
	size_t off = 0;
	json_t *a;
	size_t i;

	buf[0] = '\0';
	json_array_foreach(cmd, i, a) if (off + 2 < sizeof(buf)) off += (size_t)snprintf(
		buf + off, sizeof(buf) - off, "%s%s", i ? " " : "", json_string_value(a) ?: "");
	return json_string(buf);
}

/*
 * the job over: its footer reached, or the state in force the last, the footer next (the
 * tracer writes its last state after the job has ended, as its page said then)
 */
static bool job_over(const struct rsrc *src)
{
	return src->ended || (src->ahead && !strcmp(rec_type(src->ahead), "footer"));
}

static json_t *state_page(struct replay *rp, struct rnode *n)
{
	struct rsrc *src = n->src;
	uint64_t mono = clock_mono_ns(), real = clock_real_ns();
	int64_t now = rec_ts(src->cur), at = dump_time(rp, src, mono);
	json_t *h = src->header, *st = json_deep_copy(json_object_get(src->cur, "state"));
	json_t *fs = json_array(), *f;
	const char *id;

	json_object_foreach(src->findings, id, f)
		json_array_append_new(fs, page_finding(f, now, n->rank_offset));
	if (n->rank_offset || rp->world)
		move_ranks(st, n->rank_offset, rp->world, false);
	return json_pack(
		"{s:i,s:I,s:O?,s:s,s:s,s:I,s:I,s:O?,s:o,s:b,s:o,s:o,s:{s:s,s:i,s:f}}",
		"nccltrace_state", 1, "seq", (json_int_t)n->seq, "version",
		json_object_get(h, "version"), "host", n->host, "loopback", n->loopback,
		/* the state's time is the dump's time now: as a live tracer's, not later */
		"boot_to_realtime_ns", (json_int_t)((int64_t)real - (at > now ? at : now)),
		"realtime_ns", (json_int_t)real, "stall_threshold_s",
		json_object_get(h, "stall_threshold_s"), "cmd", cmd_line(json_object_get(h, "cmd")),
		"job_over", job_over(src), "findings", fs, "state", st, "replay", "dump", src->path,
		"node", n->index, "at_s", (double)(at - src->first_ts) / 1e9);
}

static void make_page(struct replay *rp, struct rnode *n, uint64_t mono)
{
	if (n->body && n->body_gen == n->src->gen && n->body_over == n->src->ended &&
	    (rp->o.speed > 0 || mono - n->body_at < 1000000000ULL))
		return;
	free(n->body);
	json_decref(n->json);
	n->seq++;
	n->json = state_page(rp, n);
	n->body = n->json ? json_dumps(n->json, JSON_COMPACT) : NULL;
	n->body_gen = n->src->gen;
	n->body_over = n->src->ended;
	n->body_at = mono;
	rp->pages++;
}

/*
 * A page is made when asked for, once for each state (and finding) of its dump, and copied for
 * every answer until the next: a node nobody asks for costs nothing.
 */
static char *page(void *ctx, const char *url, const char *since, const char **type)
{
	struct rnode *n = ctx;

	if (strcmp(url, "/state"))
		return NULL;
	*type = "application/json";
	make_page(n->rp, n, clock_mono_ns());
	if (since && n->json && (n->deltas || (n->deltas = state_deltas_new())))
		return state_deltas_answer(n->deltas, n->json, state_since(since));
	return n->body ? strdup(n->body) : NULL;
}

static int parse_num(const char *opt, const char *s, double lo, double *out, char *err,
		     size_t errlen)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end || errno || !(*out >= lo) || *out > 1e9) {
		snprintf(err, errlen, "%s '%s': expected a number of at least %g", opt, s, lo);
		return -1;
	}
	return 0;
}

/* 0, 1 for --help, -1 with why in err */
static int replay_parse(struct replay_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	enum { OPT_LISTEN = 256, OPT_SPEED, OPT_FROM, OPT_NODES, OPT_HOST, OPT_OFFSET, OPT_TOKEN };
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, OPT_LISTEN},
		{"speed", required_argument, NULL, OPT_SPEED},
		{"from", required_argument, NULL, OPT_FROM},
		{"nodes", required_argument, NULL, OPT_NODES},
		{"host", required_argument, NULL, OPT_HOST},
		{"rank-offset", required_argument, NULL, OPT_OFFSET},
		{"token-file", required_argument, NULL, OPT_TOKEN},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	double v;
	int c;

	*o = (struct replay_opts){.listen = "127.0.0.1:9464", .speed = 1};
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			o->listen = optarg;
			break;
		case OPT_SPEED:
			if (parse_num("--speed", optarg, 0, &o->speed, err, errlen))
				return -1;
			break;
		case OPT_FROM:
			if (parse_num("--from", optarg, 0, &o->from_s, err, errlen))
				return -1;
			break;
		case OPT_NODES:
			if (parse_num("--nodes", optarg, 1, &v, err, errlen) || v != (int)v ||
			    v > 16384) {
				snprintf(err, errlen, "--nodes '%s': expected 1 to 16384", optarg);
				return -1;
			}
			o->nodes = (int)v;
			o->nodes_given = true;
			break;
		case OPT_HOST:
			if (!optarg[0] || strlen(optarg) > 64) {
				snprintf(err, errlen, "--host '%s': expected 1 to 64 characters",
					 optarg);
				return -1;
			}
			o->host = optarg;
			break;
		case OPT_OFFSET:
			if (parse_num("--rank-offset", optarg, 0, &v, err, errlen) || v != (int)v ||
			    v > 1 << 24) {
				snprintf(err, errlen, "--rank-offset '%s': expected 0 to %d",
					 optarg, 1 << 24);
				return -1;
			}
			o->rank_offset = (int)v;
			break;
		case OPT_TOKEN:
			o->token_file = optarg;
			break;
		case 'h':
			return 1;
		case ':':
			snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind >= argc) {
		snprintf(err, errlen, "no dump given (usage: nccltrace replay DUMP...)");
		return -1;
	}
	o->dumps = argv + optind;
	o->ndumps = argc - optind;
	if (!o->nodes)
		o->nodes = o->ndumps;
	if (o->nodes < o->ndumps) {
		snprintf(err, errlen, "--nodes %d: fewer nodes than the %d dumps given", o->nodes,
			 o->ndumps);
		return -1;
	}
	return 0;
}

/* node k's listen spec: --listen's port + k */
static int node_spec(const char *listen, int k, char *out, size_t len, char *err, size_t errlen)
{
	const char *colon = strrchr(listen, ':');
	const char *ps = colon ? colon + 1 : listen;
	char *end;
	long port = strtol(ps, &end, 10);

	if (end == ps || *end || port < 0 || port + k >= REPLAY_PORTS || (port == 0 && k)) {
		snprintf(err, errlen,
			 "--listen '%s': expected PORT, ADDR:PORT or [ADDR6]:PORT with room for "
			 "the next %d ports",
			 listen, k);
		return -1;
	}
	snprintf(out, len, "%.*s%ld", colon ? (int)(colon - listen + 1) : 0, listen, port + k);
	return 0;
}

/* enough descriptors for every node's listener and its pollers */
static void raise_nofile(int nodes)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= (rlim_t)nodes * 4 + 64)
		return;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static int nodes_open(struct replay *rp, char *err, size_t errlen)
{
	int most = 0, rc;

	for (int i = 0; i < rp->o.ndumps; i++)
		if (rp->src[i].ranks > most)
			most = rp->src[i].ranks;
	if (rp->o.nodes_given && most)
		rp->world = rp->o.nodes * most;
	for (int k = 0; k < rp->o.nodes; k++) {
		struct rnode *n = &rp->node[k];
		const json_t *h;
		char spec[128];

		n->index = k;
		n->rp = rp;
		n->src = &rp->src[k < rp->o.ndumps ? k : rp->o.ndumps - 1];
		h = n->src->header;
		n->rank_offset = rp->o.rank_offset + (rp->o.nodes_given ? k * most : 0);
		snprintf(n->host, sizeof(n->host), rp->o.nodes_given ? "%s-%d" : "%s",
			 rp->o.host ?: json_string_value(json_object_get(h, "host")) ?: "?", k);
		snprintf(n->loopback, sizeof(n->loopback), rp->o.nodes_given ? "%s#%d" : "%s",
			 json_string_value(json_object_get(h, "loopback")) ?: "", k);
		if (node_spec(rp->o.listen, k, spec, sizeof(spec), err, errlen))
			return EXIT_USAGE;
		rc = listener__open(&n->l, spec, rp->o.token_file, page, n, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static void tell_start(const struct replay *rp, uint64_t real0)
{
	for (int i = 0; i < rp->o.ndumps; i++) {
		const struct rsrc *s = &rp->src[i];

		fprintf(stderr,
			"nccltrace: replaying %s (host %s, %d ranks) from its second %.1f (ts_ns "
			"%lld) at realtime_ns %llu, %g times as fast as it ran\n",
			s->path, json_string_value(json_object_get(s->header, "host")) ?: "?",
			s->ranks, rp->o.from_s,
			(long long)(s->first_ts + (int64_t)(rp->o.from_s * 1e9 + 0.5)),
			(unsigned long long)real0, rp->o.speed);
	}
	if (rp->o.nodes == 1)
		fprintf(stderr, "nccltrace: serving %s/state as host %s\n",
			listener__url(rp->node[0].l), rp->node[0].host);
	else
		fprintf(stderr,
			"nccltrace: serving %d nodes, %s/state ... %s/state, hosts %s ... %s%s\n",
			rp->o.nodes, listener__url(rp->node[0].l),
			listener__url(rp->node[rp->o.nodes - 1].l), rp->node[0].host,
			rp->node[rp->o.nodes - 1].host, rp->world ? ", ranks at offsets" : "");
}

/* every dump up to its time now, every node's page made anew where its dump moved */
static int step(struct replay *rp, char *err, size_t errlen)
{
	uint64_t mono = clock_mono_ns();

	for (int i = 0; i < rp->o.ndumps; i++) {
		struct rsrc *s = &rp->src[i];

		if (advance(s, dump_time(rp, s, mono), err, errlen))
			return -1;
		if (s->ended && !s->told_end) {
			s->told_end = true;
			fprintf(stderr,
				"nccltrace: %s: its end, after %.1f s of states; serving its last "
				"state until stopped\n",
				s->path, (double)(s->last_ts - s->first_ts) / 1e9);
		}
	}
	return 0;
}

static int serve(struct replay *rp)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), sfd, rc = 0;
	sigset_t mask;
	char err[512];
	struct epoll_event ev = {.events = EPOLLIN};

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (ep < 0 || sfd < 0) {
		fprintf(stderr, "nccltrace: epoll/signalfd: %s\n", strerror(errno));
		return EXIT_OSERR;
	}
	ev.data.u32 = UINT32_MAX;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	for (int k = 0; k < rp->o.nodes; k++) {
		ev.data.u32 = (uint32_t)k;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, listener__fd(rp->node[k].l), &ev)) {
			fprintf(stderr, "nccltrace: epoll: %s\n", strerror(errno));
			close(ep);
			close(sfd);
			return EXIT_OSERR;
		}
	}
	for (bool quit = false; !quit;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, REPLAY_STEP_MS);

		if (step(rp, err, sizeof(err))) {
			fprintf(stderr, "nccltrace: %s\n", err);
			rc = EXIT_DATAERR;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u32 == UINT32_MAX)
				quit = true;
			else
				listener__serve(rp->node[evs[i].data.u32].l);
		}
	}
	close(ep);
	close(sfd);
	return rc;
}

int replay_main(int argc, char **argv)
{
	struct replay rp = {0};
	char err[512];
	int rc;

	rc = replay_parse(&rp.o, argc, argv, err, sizeof(err));
	if (rc) {
		if (rc > 0) {
			fputs(replay_help, stdout);
			return 0;
		}
		fprintf(stderr, "nccltrace replay: %s\n", err);
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile(rp.o.nodes);
	rp.src = calloc(rp.o.ndumps, sizeof(*rp.src));
	rp.node = calloc(rp.o.nodes, sizeof(*rp.node));
	if (!rp.src || !rp.node) {
		fprintf(stderr, "nccltrace: out of memory\n");
		free(rp.src);
		return EXIT_OSERR;
	}
	for (int i = 0; i < rp.o.ndumps && !rc; i++)
		rc = src_open(&rp.src[i], rp.o.dumps[i], err, sizeof(err));
	if (!rc) {
		rp.mono0 = clock_mono_ns();
		for (int i = 0; i < rp.o.ndumps && !rc; i++)
			if (advance(&rp.src[i], dump_time(&rp, &rp.src[i], rp.mono0), err,
				    sizeof(err)))
				rc = EXIT_DATAERR;
	}
	if (!rc)
		rc = nodes_open(&rp, err, sizeof(err));
	if (rc)
		fprintf(stderr, "nccltrace: %s\n", err);
	if (!rc) {
		tell_start(&rp, clock_real_ns());
		rc = serve(&rp);
	}
	for (int k = 0; k < rp.o.nodes; k++) {
		listener__close(rp.node[k].l);
		free(rp.node[k].body);
		json_decref(rp.node[k].json);
		state_deltas_free(rp.node[k].deltas);
	}
	for (int i = 0; i < rp.o.ndumps; i++)
		src_close(&rp.src[i]);
	free(rp.src);
	free(rp.node);
	return rc;
}
