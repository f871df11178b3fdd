/* SPDX-License-Identifier: MIT */
/*
 * `run --listen ADDR:PORT`: the live view over HTTP (libmicrohttpd, driven from the session's
 * epoll loop, so the pages are built in the tracer's own thread from its latest snapshot):
 * /metrics (Prometheus text) and /state (the snapshot as JSON, with the open findings), which
 * `nccltrace watch` merges across hosts. Off by default; loopback unless an address is given,
 * and any other address needs --token-file: every request must then carry
 * "Authorization: Bearer TOKEN".
 */
#ifndef NT_LISTEN_H
#define NT_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

struct listener;

/*
 * A page: its body (malloc'd) and type, or NULL for 404 (503 when out of memory). since: the
 * request's ?since= as sent, NULL if none (present/statedelta.h).
 */
typedef char *(*listen_page_fn)(void *ctx, const char *url, const char *since, const char **type);

/*
 * spec: "PORT", "ADDR:PORT" or "[ADDR6]:PORT". 0, or an exit status (sysexits) with a
 * one-line reason in err: a spec that does not parse, a non-loopback address without a token,
 * an unreadable or empty token file, a port that cannot be bound.
 */
int listener__open(struct listener **out, const char *spec, const char *token_file,
		   listen_page_fn page, void *ctx, char *err, size_t errlen);
/* The fd to wait on (epoll), and what to call when it is ready, and at each tick. */
int listener__fd(const struct listener *l);
void listener__serve(struct listener *l);
/* "http://198.18.0.1:9464" as bound */
const char *listener__url(const struct listener *l);
void listener__close(struct listener *l);

/*
 * Parse spec into a socket address; false if it does not parse. loopback: whether it is one.
 * (The pure part, for the unit tests.)
 */
struct sockaddr_storage;
bool listen_parse_spec(const char *spec, struct sockaddr_storage *ss, bool *loopback);

#endif /* NT_LISTEN_H */
