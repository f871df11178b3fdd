// SPDX-License-Identifier: MIT
/*
 * `--listen` as a client on the network meets it: the input is what a client sends over one
 * connection to a real listener (cmd/listen.c on libmicrohttpd, a bearer token set), in one
 * write or two; the listener is run until it answers or closes. Method, path, headers, token,
 * bodies and garbage: an answer, a refusal or a close, never a crash, and the listener answers
 * the next client as before.
 *
 * The input: its first byte's low bit splits the rest in two writes at its middle, the next
 * bit shuts the write side after them (a client that says no more); the rest is sent as is.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <stdbool.h>
#include <sys/socket.h>
#include "fuzz.h"
#include "cmd/listen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct listener *l;
static int port;

static char *page(void *ctx, const char *url, const char *since, const char **type)
{
	(void)ctx, (void)since;
	if (!strcmp(url, "/metrics")) {
		*type = "text/plain; version=0.0.4";
		return strdup("nccltrace_up 1\n");
	}
	if (!strcmp(url, "/state")) {
		*type = "application/json";
		return strdup("{\"nccltrace_state\":1}");
	}
	return NULL;
}

static void open_listener(void)
{
	const uint8_t tok[] = "fuzz-token\n";
	char err[256];
	const char *url;

	if (listener__open(&l, "127.0.0.1:0", fuzz_file(tok, sizeof(tok) - 1), page, NULL, err,
			   sizeof(err))) {
		fprintf(stderr, "fuzz_http: %s\n", err);
		abort();
	}
	url = strrchr(listener__url(l), ':');
	port = url ? atoi(url + 1) : 0;
}

static int dial(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || (connect(fd, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS))
		abort();
	return fd;
}

/* an answer whole: its headers and as many bytes after them as its Content-Length says */
static bool answered(const char *a, size_t n)
{
	const char *end = strstr(a, "\r\n\r\n"), *cl = strcasestr(a, "\r\nContent-Length:");

	return end && cl && cl < end && n - (size_t)(end + 4 - a) >= strtoul(cl + 17, NULL, 10);
}

/*
 * the listener run until the client's side has a whole answer or sees a close; a request not
 * yet whole gets no answer: patience quiet turns (1 ms each) end the wait
 */
static size_t drive(int fd, char *ans, size_t cap, int patience)
{
	size_t n = 0;

	for (int turn = 0, quiet = 0; turn < 1000 && quiet < patience; turn++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		listener__serve(l);
		if (poll(&p, 1, 1) <= 0) {
			quiet++;
			continue;
		}
		quiet = 0;
		r = recv(fd, ans + n, cap - n - 1, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN))
			break;
		if (r > 0)
			n += (size_t)r;
		ans[n] = '\0';
		if (n + 1 >= cap || answered(ans, n))
			break;
	}
	ans[n] = '\0';
	return n;
}

static void send_part(int fd, const uint8_t *p, size_t n)
{
	struct pollfd w = {.fd = fd, .events = POLLOUT};

	while (n && poll(&w, 1, 100) > 0) {
		ssize_t s = send(fd, p, n, MSG_NOSIGNAL);

		if (s <= 0)
			return;
		p += s;
		n -= (size_t)s;
		listener__serve(l);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char good[] = "GET /state HTTP/1.1\r\nHost: x\r\n"
				   "Authorization: Bearer fuzz-token\r\nConnection: close\r\n\r\n";
	char ans[4096];
	int fd;

	if (!l)
		open_listener();
	if (size < 1)
		return 0;
	fd = dial();
	if (data[0] & 1) {
		send_part(fd, data + 1, (size - 1) / 2);
		listener__serve(l);
		send_part(fd, data + 1 + (size - 1) / 2, size - 1 - (size - 1) / 2);
	} else {
		send_part(fd, data + 1, size - 1);
	}
	if (data[0] & 2)
		shutdown(fd, SHUT_WR);
	drive(fd, ans, sizeof(ans), 5);
	/*
	 * a reset, not a FIN: a request cut short and a FIN that came with it leave the server's
	 * connection until its idle timeout (listen.c), and a fuzzer's hundreds a second would
	 * fill its 64 with them
	 */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){.l_onoff = 1},
		   sizeof(struct linger));
	close(fd);
	/* whatever came before, the next client with the token gets its page */
	fd = dial();
	send_part(fd, (const uint8_t *)good, sizeof(good) - 1);
	drive(fd, ans, sizeof(ans), 500);
	close(fd);
	if (strncmp(ans, "HTTP/1.1 200", 12) || !strstr(ans, "{\"nccltrace_state\":1}")) {
		fprintf(stderr, "fuzz_http: the next client got '%.200s'\n", ans);
		abort();
	}
	return 0;
}
