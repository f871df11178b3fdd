// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace/hostcheck.h"
#include "trace/pcitopo.h"
#include "util/grow.h"

static const char *root(const char *var, const char *dflt)
{
	const char *v = getenv(var);

	return v && *v ? v : dflt;
}

static bool read_str(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX + 300];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return host_read_line(path, buf, len);
}

static long read_num(const char *dir, const char *file, long dflt)
{
	char buf[64], *end;
	long v;

	if (!read_str(dir, file, buf, sizeof(buf)))
		return dflt;
	v = strtol(buf, &end, 0);
	return end == buf ? dflt : v;
}

/*
 * The ACS control register from the extended config space: the capabilities' list from 0x100,
 * each header ID (16 bits), version (4), next (12); ACS (0x000d): control at +6. -1 if the
 * config space is short (not root: 64 or 256 bytes) or has none.
 */
static int acs_ctrl(const char *dir)
{
	char path[PATH_MAX + 300];
	uint8_t cfg[4096];
	size_t n;
	FILE *f;
	unsigned off = 0x100;

	snprintf(path, sizeof(path), "%s/config", dir);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(cfg, 1, sizeof(cfg), f);
	fclose(f);
	for (int hops = 0; hops < 64 && off >= 0x100 && off + 8 <= n; hops++) {
		uint32_t h = cfg[off] | cfg[off + 1] << 8 | cfg[off + 2] << 16 |
			     (uint32_t)cfg[off + 3] << 24;

		if (h == 0 || h == 0xffffffff)
			return -1;
		if ((h & 0xffff) == 0x000d)
			return cfg[off + 6] | cfg[off + 7] << 8;
		off = (h >> 20) & 0xffc;
	}
	return -1;
}

/* the first entry of dir/sub, "" if none (an RDMA device's or an interface's name) */
static void first_entry(const char *dir, const char *sub, char *buf, size_t len)
{
	char path[PATH_MAX + 300];
	struct dirent *e;
	DIR *d;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && (!buf[0] || strcmp(e->d_name, buf) < 0))
			snprintf(buf, len, "%.*s", (int)len - 1, e->d_name);
	closedir(d);
}

static int bdf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pci_dev *)a)->bdf, ((const struct pci_dev *)b)->bdf);
}

int pci_scan(struct pci_dev **out)
{
	char dir[PATH_MAX], dev[PATH_MAX + 260], real[PATH_MAX];
	struct pci_dev *v = NULL;
	int n = 0, cap = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/bus/pci/devices", root("NCCLTRACE_SYSFS", "/sys"));
	*out = NULL;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		struct pci_dev *p;
		const char *at;

		if (e->d_name[0] == '.' || grow(&v, &cap, n, sizeof(*v), 32))
			continue;
		snprintf(dev, sizeof(dev), "%s/%s", dir, e->d_name);
		p = &v[n];
		memset(p, 0, sizeof(*p));
		snprintf(p->bdf, sizeof(p->bdf), "%.15s", e->d_name);
		/* the link points into /sys/devices: its path there is its place in the tree */
		if (!realpath(dev, real))
			continue;
		at = strstr(real, "/devices/");
		snprintf(p->path, sizeof(p->path), "%.255s", at ? at + 9 : real);
		p->vendor = (unsigned)read_num(dev, "vendor", 0);
		p->class_code = (unsigned)read_num(dev, "class", 0);
		p->numa = (int)read_num(dev, "numa_node", -1);
		p->width = (int)read_num(dev, "current_link_width", 0);
		p->max_width = (int)read_num(dev, "max_link_width", 0);
		p->acs_ctrl = pci_is_bridge(p) ? acs_ctrl(dev) : -1;
		first_entry(dev, "infiniband", p->name, sizeof(p->name));
		p->rdma = p->name[0] != '\0';
		if (!p->rdma)
			first_entry(dev, "net", p->name, sizeof(p->name));
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), bdf_cmp);
	*out = v;
	return n;
}

void pci_iommu(struct pci_iommu *out)
{
	char path[PATH_MAX], line[4096];
	struct dirent *e;
	DIR *d;
	FILE *f;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/class/iommu", root("NCCLTRACE_SYSFS", "/sys"));
	d = opendir(path);
	if (d) {
		while ((e = readdir(d)))
			out->units = out->units || e->d_name[0] != '.';
		closedir(d);
	}
	snprintf(path, sizeof(path), "%s/cmdline", root("NCCLTRACE_PROCFS", "/proc"));
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		for (char *t = strtok(line, " \n"); t; t = strtok(NULL, " \n")) {
			out->passthrough = out->passthrough || !strcmp(t, "iommu=pt") ||
					   !strcmp(t, "iommu.passthrough=1") ||
					   !strcmp(t, "iommu.passthrough=on");
			out->off = out->off || !strcmp(t, "intel_iommu=off") ||
				   !strcmp(t, "amd_iommu=off") || !strcmp(t, "iommu=off");
		}
	}
	fclose(f);
}
