// SPDX-License-Identifier: MIT
#include <string.h>
#include "model/conns.h"
#include "model/snapskew.h"

static bool usable(const struct snap_conn *c)
{
	return !(c->c.flags & NT_CONN_LISTENER) && c->c.t.sport && c->c.t.dport &&
	       c->c.t.daddr[0] != 127;
}

bool snapskew_bounds(const struct snapshot *a, const struct snapshot *b, int64_t *lo, int64_t *hi)
{
	bool any = false;

	*lo = INT64_MIN;
	*hi = INT64_MAX;
	for (int i = 0; i < a->nconns; i++) {
		const struct snap_conn *ca = &a->conns[i];

		if (!usable(ca))
			continue;
		for (int k = 0; k < b->nconns; k++) {
			const struct snap_conn *cb = &b->conns[k];

			if (!usable(cb) || !conns_is_reverse(&ca->c.t, &cb->c.t))
				continue;
			/* a -> b: b's last receive (b's clock) no sooner than a's last send */
			if (ca->c.bytes_sent && ca->c.bytes_sent == cb->c.bytes_recv &&
			    ca->c.last_send_ns && cb->c.last_recv_ns) {
				int64_t d = (int64_t)(cb->c.last_recv_ns - ca->c.last_send_ns);

				*hi = d < *hi ? d : *hi;
				any = true;
			}
			/* b -> a: a's last receive no sooner than b's last send, less delta */
			if (cb->c.bytes_sent && cb->c.bytes_sent == ca->c.bytes_recv &&
			    cb->c.last_send_ns && ca->c.last_recv_ns) {
				int64_t d = (int64_t)(cb->c.last_send_ns - ca->c.last_recv_ns);

				*lo = d > *lo ? d : *lo;
				any = true;
			}
		}
	}
	return any;
}

int64_t snapskew_correction(int64_t lo, int64_t hi)
{
	if (lo > hi)
		return 0;
	if (lo > SNAPSKEW_TOLERANCE_NS)
		return lo;
	if (hi < -SNAPSKEW_TOLERANCE_NS)
		return hi;
	return 0;
}
