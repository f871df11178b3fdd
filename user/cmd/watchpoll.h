/* SPDX-License-Identifier: MIT */
/* `watch`'s fetches: GET /state from every tracer at once (libcurl's multi interface). */
#ifndef NT_WATCHPOLL_H
#define NT_WATCHPOLL_H

#include <stdbool.h>
#include <stddef.h>

struct endpoint {
	const char *spec; /* "HOST:PORT" as given */
	char url[192];
	char *body; /* the last answer, NULL if none */
	size_t len;
	long code;     /* its HTTP status, 0 if none */
	char err[192]; /* why there is none, "" if there is */
	void *h;       /* its curl handle, kept so that its connection is kept */
	/*
	 * what changed since its last page (present/statedelta.h): the seq of that page (0:
	 * none), the pages as read so far; whole pages each round when full
	 */
	unsigned long long seq;
	struct delta_dec *dec;
	bool full;
	char req[224]; /* the URL asked for */
};

/* The URLs of n specs ("HOST:PORT", "[ADDR6]:PORT", "http://HOST:PORT"); -1 on a bad one. */
int watchpoll_init(struct endpoint *e, int n, char *err, size_t errlen);
/* Fetch every endpoint's /state, each within timeout_ms; how many answered 200. */
int watchpoll_round(struct endpoint *e, int n, const char *token, long timeout_ms);
void watchpoll_free(struct endpoint *e, int n);

#endif /* NT_WATCHPOLL_H */
