/* SPDX-License-Identifier: MIT */
/*
 * /state as what changed (`run --listen`'s and `replay`'s pages, read by `watch`). Every page
 * has a "seq" (its number on that server). A client that sends ?since=SEQ, the seq of the last
 * page it read, gets the page with its "state"'s procs, conns and comms written as a delta frame
 * against that page (present/dumpdelta.h: each element that changed whole, each that did not as
 * its index in that page's array), "delta": true and "since": SEQ; the server keeps where the
 * last few clients stand (STATEDELTA_BASES), and answers one it does not know (since=0, a seq it
 * forgot) with the whole page, from which that client goes on. A client that sends no since
 * (curl, Prometheus, an older watch) gets whole pages, as before. In a training job a third of
 * a page changes in a second; in a hang, or a calm hour, next to nothing.
 */
#ifndef NT_STATEDELTA_H
#define NT_STATEDELTA_H

#include <jansson.h>
#include <stdint.h>
#include "present/dumpdelta.h"

#define STATEDELTA_BASES 8 /* the clients' places a server keeps */

struct state_deltas;
struct state_deltas *state_deltas_new(void);
void state_deltas_free(struct state_deltas *d);
/*
 * The answer (malloc'd text) to ?since=since for page, its seq in it ("seq"): a delta against
 * the page of seq since when the server knows where that is, else the whole page; the page is
 * then known as a base for the next. page is not changed. NULL on ENOMEM.
 */
char *state_deltas_answer(struct state_deltas *d, json_t *page, uint64_t since);
/* since= as sent: its seq, or 0 (none, or not a number) */
uint64_t state_since(const char *s);

/*
 * A client's side: the page as read (a server's answer, whole or not), made whole again in
 * place against the last one dec took; 0, or -1 with why in err (a delta against a page dec
 * does not have: the client then starts again, since=0). A page with no "seq" (an agent's) is
 * left as it is.
 */
int state_delta_take(struct delta_dec *dec, json_t *page, char *err, size_t errlen);

#endif /* NT_STATEDELTA_H */
