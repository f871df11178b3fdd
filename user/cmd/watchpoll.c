// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/watchpoll.h"

#ifndef NT_STATIC
#include <curl/curl.h>

int watchpoll_init(struct endpoint *e, int n, char *err, size_t errlen)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "cannot initialise libcurl");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const char *s = e[i].spec;
		const char *colon = strrchr(s, ':');

		if (!strncmp(s, "http://", 7))
			s += 7;
		if (!*s || !colon || colon[1] == '\0' || strpbrk(s, "/?#@ ")) {
			snprintf(err, errlen, "'%s' is not HOST:PORT (a tracer's --listen)",
				 e[i].spec);
			return -1;
		}
		snprintf(e[i].url, sizeof(e[i].url), "http://%s/state", s);
	}
	return 0;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
	struct endpoint *e = ud;
	size_t n = size * nmemb;
	char *nb;

	/* a /state of 64 MiB is nobody's tracer */
	if (e->len + n > (64u << 20))
		return 0;
	nb = realloc(e->body, e->len + n + 1);
	if (!nb)
		return 0;
	memcpy(nb + e->len, p, n);
	e->body = nb;
	e->len += n;
	e->body[e->len] = '\0';
	return n;
}

static void *handle(struct endpoint *e, struct curl_slist *hdr, long timeout_ms)
{
	CURL *h = e->h ? e->h : curl_easy_init();

	if (!h)
		return NULL;
	e->h = h;
	if (e->full)
		snprintf(e->req, sizeof(e->req), "%s", e->url);
	else
		snprintf(e->req, sizeof(e->req), "%s?since=%llu", e->url, e->seq);
	curl_easy_setopt(h, CURLOPT_URL, e->req);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_PRIVATE, e);
	return h;
}

int watchpoll_round(struct endpoint *e, int n, const char *token, long timeout_ms)
{
	CURLM *m = curl_multi_init();
	struct curl_slist *hdr = NULL;
	char auth[300];
	int running = 0, ok = 0;
	CURLMsg *msg;
	int left;

	if (!m)
		return 0;
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		hdr = curl_slist_append(NULL, auth);
	}
	for (int i = 0; i < n; i++) {
		free(e[i].body);
		e[i].body = NULL;
		e[i].len = 0;
		e[i].code = 0;
		snprintf(e[i].err, sizeof(e[i].err), "no answer");
		if (handle(&e[i], hdr, timeout_ms))
			curl_multi_add_handle(m, e[i].h);
	}
	do {
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	} while (running);
	while ((msg = curl_multi_info_read(m, &left))) {
		struct endpoint *x = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (!x)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &x->code);
		if (msg->data.result != CURLE_OK)
			snprintf(x->err, sizeof(x->err), "%s",
				 curl_easy_strerror(msg->data.result));
		else if (x->code != 200)
			snprintf(x->err, sizeof(x->err), "HTTP %ld%s", x->code,
				 x->code == 401 ? " (wrong or missing --token-file)" : "");
		else
			x->err[0] = '\0', ok++;
	}
	for (int i = 0; i < n; i++)
		if (e[i].h)
			curl_multi_remove_handle(m, e[i].h);
	curl_multi_cleanup(m);
	curl_slist_free_all(hdr);
	return ok;
}

void watchpoll_free(struct endpoint *e, int n)
{
	for (int i = 0; i < n; i++) {
		free(e[i].body);
		if (e[i].h)
			curl_easy_cleanup(e[i].h);
	}
	curl_global_cleanup();
}
#else
/* the static build links no libcurl: watch says so */
int watchpoll_init(struct endpoint *e, int n, char *err, size_t errlen)
{
	(void)e, (void)n;
	snprintf(err, errlen,
		 "watch is not in the static build (no libcurl): on a node without "
		 "nccltrace's libraries use the bundle (make bundle: "
		 "build/nccltrace-bundle)");
	return -1;
}

int watchpoll_round(struct endpoint *e, int n, const char *token, long timeout_ms)
{
	(void)e, (void)n, (void)token, (void)timeout_ms;
	return 0;
}

void watchpoll_free(struct endpoint *e, int n)
{
	(void)e, (void)n;
}
#endif
