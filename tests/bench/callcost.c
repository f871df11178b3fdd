// SPDX-License-Identifier: MIT
/*
 * Cost of one socket call, for the overhead benchmark: a connected TCP pair on 127.0.0.1 in one
 * process (no scheduler noise between processes), then
 *   - N receive calls that return EAGAIN (what a waiting NCCL proxy thread does), and
 *   - N send+receive pairs of 64 bytes (the per-call cost with byte progress).
 * Prints "eagain_ns=X xfer_ns=Y": nanoseconds per call, median of 5 rounds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "bench.h"
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "callcost: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int l, c, s, one = 1;
	double eag[5], xfer[5];
	char buf[64] = {0};

	if (n <= 0)
		n = 1000000;
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		die("listen");
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++)
			if (recv(s, buf, sizeof(buf), MSG_DONTWAIT) != -1 || errno != EAGAIN)
				die("expected EAGAIN");
		eag[r] = (now_ns() - t0) / n;
		t0 = now_ns();
		for (long i = 0; i < n / 4; i++) {
			if (send(c, buf, sizeof(buf), 0) != sizeof(buf))
				die("send");
			if (recv(s, buf, sizeof(buf), MSG_WAITALL) != sizeof(buf))
				die("recv");
		}
		xfer[r] = (now_ns() - t0) / (n / 4) / 2;
	}
	qsort(eag, 5, sizeof(double), cmp_double);
	qsort(xfer, 5, sizeof(double), cmp_double);
	printf("eagain_ns=%.1f xfer_ns=%.1f\n", eag[2], xfer[2]);
	return 0;
}
