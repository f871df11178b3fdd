// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#ifndef NT_STATIC
#include <microhttpd.h>
#endif
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cmd/listen.h"
#include "util/exits.h"

#define LISTEN_IDLE_S	 3U  /* an idle connection closed after this */
#define LISTEN_MAX_CONNS 64U /* connections at once; more are closed unanswered */

struct listener {
#ifndef NT_STATIC
	struct MHD_Daemon *d;
#endif
	char token[256]; /* "" : none asked */
	listen_page_fn page;
	void *ctx;
	char url[96];
};

bool listen_parse_spec(const char *spec, struct sockaddr_storage *ss, bool *loopback)
{
	char host[INET6_ADDRSTRLEN + 2] = "127.0.0.1";
	const char *colon = strrchr(spec, ':');
	const char *port_s = colon ? colon + 1 : spec;
	char *end;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (colon) {
		size_t n = (size_t)(colon - spec);

		if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']')
			spec++, n -= 2;
		if (n == 0 || n >= sizeof(host))
			return false;
		memcpy(host, spec, n);
		host[n] = '\0';
	}
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (end == port_s || *end || errno || port < 0 || port > 65535)
		return false;
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		*loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
		return true;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
		return true;
	}
	return false;
}

#ifndef NT_STATIC
/* the first line of path, at most 255 bytes; 0 or an exit status */
static int read_token(const char *path, char *tok, size_t len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
		return EXIT_NOINPUT;
	}
	n = read(fd, tok, len - 1);
	close(fd);
	if (n < 0)
		n = 0;
	tok[n] = '\0';
	tok[strcspn(tok, "\r\n")] = '\0';
	if (!tok[0]) {
		snprintf(err, errlen, "--token-file %s: empty (the token is its first line)", path);
		return EXIT_DATAERR;
	}
	return 0;
}

/* compares every byte whatever differs, so the time taken tells nothing of the token */
static bool token_ok(const char *want, const char *got)
{
	size_t n = strlen(want);
	unsigned char diff = 0;

	if (!got || strncmp(got, "Bearer ", 7))
		return false;
	got += 7;
	if (strlen(got) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(want[i] ^ got[i]);
	return diff == 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, char *body, const char *type)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct listener *l = cls;
	const char *type = "text/plain; charset=utf-8";
	char *body;

	(void)version, (void)upload, (void)con_cls;
	if (*upload_size)
		return MHD_NO; /* nothing here takes a body */
	if (l->token[0] &&
	    !token_ok(l->token, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
		return reply(c, MHD_HTTP_UNAUTHORIZED, strdup("unauthorized\n"), type);
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("GET only\n"), type);
	body = l->page(l->ctx, url, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since"),
		       &type);
	if (!body)
		return reply(c, MHD_HTTP_NOT_FOUND, strdup("not found: /metrics or /state\n"),
			     "text/plain; charset=utf-8");
	return reply(c, MHD_HTTP_OK, body, type);
}

int listener__open(struct listener **out, const char *spec, const char *token_file,
		   listen_page_fn page, void *ctx, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct listener *l;
	bool lo = false;
	char ip[INET6_ADDRSTRLEN] = "?";
	const union MHD_DaemonInfo *info;
	int rc;

	if (!listen_parse_spec(spec, &ss, &lo)) {
		snprintf(err, errlen, "--listen '%s': expected PORT, ADDR:PORT or [ADDR6]:PORT",
			 spec);
		return EXIT_USAGE;
	}
	if (!lo && !token_file) {
		snprintf(err, errlen,
			 "--listen %s is not a loopback address: it needs --token-file FILE "
			 "(requests must then carry 'Authorization: Bearer TOKEN')",
			 spec);
		return EXIT_USAGE;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return EXIT_OSERR;
	if (token_file && (rc = read_token(token_file, l->token, sizeof(l->token), err, errlen))) {
		free(l);
		return rc;
	}
	l->page = page;
	l->ctx = ctx;
	/*
	 * external epoll: served from the session's loop, in its thread. An idle connection goes
	 * after 3 s: libmicrohttpd's epoll is edge-triggered, and a client that sends part of a
	 * request and its FIN at once (a scanner, a broken client) leaves a connection it never
	 * reads to the end, so never closes, until this timeout; 64 such would shut every poller
	 * out for that long (tests/fuzz/fuzz_http.c found it)
	 */
	l->d = MHD_start_daemon(MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0,
				NULL, NULL, on_request, l, MHD_OPTION_SOCK_ADDR, &ss,
				MHD_OPTION_CONNECTION_TIMEOUT, LISTEN_IDLE_S,
				MHD_OPTION_CONNECTION_LIMIT, LISTEN_MAX_CONNS, MHD_OPTION_END);
	if (!l->d) {
		snprintf(err, errlen,
			 "--listen %s: cannot listen there (in use, or not an address "
			 "of this host?)",
			 spec);
		free(l);
		return EXIT_UNAVAILABLE;
	}
	info = MHD_get_daemon_info(l->d, MHD_DAEMON_INFO_BIND_PORT);
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof(ip));
	snprintf(l->url, sizeof(l->url),
		 ss.ss_family == AF_INET ? "http://%s:%u" : "http://[%s]:%u", ip,
		 info ? info->port : 0);
	*out = l;
	return 0;
}

int listener__fd(const struct listener *l)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->d, MHD_DAEMON_INFO_EPOLL_FD);

	return info ? info->epoll_fd : -1;
}

void listener__serve(struct listener *l)
{
	if (l)
		MHD_run(l->d);
}

const char *listener__url(const struct listener *l)
{
	return l->url;
}

void listener__close(struct listener *l)
{
	if (!l)
		return;
	MHD_stop_daemon(l->d);
	free(l);
}
#else
/* the static build links no libmicrohttpd: --listen says so */
int listener__open(struct listener **out, const char *spec, const char *token_file,
		   listen_page_fn page, void *ctx, char *err, size_t errlen)
{
	(void)out, (void)spec, (void)token_file, (void)page, (void)ctx;
	snprintf(err, errlen,
		 "--listen is not in the static build (no libmicrohttpd): on a node without "
		 "nccltrace's libraries use the bundle (make bundle: build/nccltrace-bundle)");
	return EXIT_UNAVAILABLE;
}

int listener__fd(const struct listener *l)
{
	(void)l;
	return -1;
}

void listener__serve(struct listener *l)
{
	(void)l;
}

const char *listener__url(const struct listener *l)
{
	(void)l;
	return "";
}

void listener__close(struct listener *l)
{
	(void)l;
}
#endif
