// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "trace/hostcheck.h"

bool host_iface_exists(void *io, const char *name, bool exact)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	(void)io;
	if (getifaddrs(&ifs))
		return true; /* cannot tell: say nothing */
	for (i = ifs; i && !found; i = i->ifa_next)
		found = exact ? !strcmp(i->ifa_name, name)
			      : !strncmp(i->ifa_name, name, strlen(name));
	freeifaddrs(ifs);
	return found;
}

void host_iface_list(char *buf, size_t len)
{
	struct ifaddrs *ifs, *i;
	size_t off = 0;

	if (!len)
		return;
	buf[0] = '\0';
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		size_t n = strlen(i->ifa_name);
		bool seen = false;

		/* getifaddrs gives an interface once per address family */
		for (const char *p = buf; !seen && (p = strstr(p, i->ifa_name)); p += n)
			seen = (p == buf || p[-1] == ',') && (p[n] == ',' || !p[n]);
		if (!seen && off + n + 2 < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
						i->ifa_name);
	}
	freeifaddrs(ifs);
}

void host_loopback_id(char *buf, size_t len)
{
	char boot[64] = "", ns[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	ssize_t n;

	if (!len)
		return;
	buf[0] = '\0';
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		fclose(f);
	}
	boot[strcspn(boot, "\n")] = '\0';
	n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
	if (!boot[0] || n <= 0)
		return;
	ns[n] = '\0';
	snprintf(buf, len, "%s/%s", boot, ns);
}

bool host_port_in_use(void *io, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool busy;

	(void)io;
	if (fd < 0)
		return false;
	busy = bind(fd, (struct sockaddr *)&a, sizeof(a)) && errno == EADDRINUSE;
	close(fd);
	return busy;
}

bool host_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/*
 * The local HCAs' GID tables, as the kernel shows them: /sys/class/infiniband/DEV/ports/1/
 * {gids,gid_attrs/types}/IDX and link_layer.
 */
int host_hca_gid(void *io, const char *hca, int idx, char *type, size_t tlen, char *dev,
		 size_t dlen, bool *ib)
{
	const char *sys = getenv("NCCLTRACE_SYSFS");
	char dir[PATH_MAX], path[PATH_MAX + 64], gid[64], ll[32];
	struct dirent *d;
	DIR *dp;

	(void)io;
	snprintf(dir, sizeof(dir), "%s/class/infiniband", sys && *sys ? sys : "/sys");
	dp = opendir(dir);
	if (!dp)
		return -ENODEV;
	dev[0] = '\0';
	while ((d = readdir(dp)))
		if (d->d_name[0] != '.' && (!hca || !strcmp(d->d_name, hca)) &&
		    (!dev[0] || strcmp(d->d_name, dev) < 0))
			snprintf(dev, dlen, "%s", d->d_name); /* the first by name, as NCCL */
	closedir(dp);
	if (!dev[0])
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/%s/ports/1/link_layer", dir, dev);
	*ib = host_read_line(path, ll, sizeof(ll)) && !strcmp(ll, "InfiniBand");
	snprintf(path, sizeof(path), "%s/%s/ports/1/gids/%d", dir, dev, idx);
	if (!host_read_line(path, gid, sizeof(gid)) ||
	    !strcmp(gid, "0000:0000:0000:0000:0000:0000:0000:0000"))
		return *ib ? 0 : -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/ports/1/gid_attrs/types/%d", dir, dev, idx);
	if (!host_read_line(path, type, tlen))
		type[0] = '\0';
	return 0;
}
