// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include "diagnose/pcilint.h"

static bool endpoint(const struct pci_dev *d)
{
	return pci_is_gpu(d) || d->rdma;
}

static const struct pci_dev *by_bdf(const struct pci_dev *d, int n, const char *bdf, size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(d[i].bdf) == len && !strncmp(d[i].bdf, bdf, len))
			return &d[i];
	return NULL;
}

/* "GPU 0000:41:00.0" or "mlx5_0 (0000:42:00.0)" */
static const char *label(const struct pci_dev *d, char *buf, size_t len)
{
	if (pci_is_gpu(d))
		snprintf(buf, len, "GPU %s", d->bdf);
	else
		snprintf(buf, len, "%s (%s)", d->name, d->bdf);
	return buf;
}

struct lint_problem *host_problem(struct lint_problem *out, int *n, int max, enum lint_sev sev)
{
	struct lint_problem *p;

	if (*n >= max)
		return NULL;
	p = &out[(*n)++];
	memset(p, 0, sizeof(*p));
	p->sev = sev;
	p->rank = -1;
	p->host = true;
	return p;
}

/*
 * The bridges between a and b below the lowest one they share: a switch's downstream ports,
 * where ACS redirects their P2P upwards. None if they meet only at the host bridge (their P2P
 * crosses the root complex whatever ACS says). Calls fn for each.
 */
static void bridges_between(const struct pci_dev *d, int n, const struct pci_dev *a,
			    const struct pci_dev *b,
			    void (*fn)(const struct pci_dev *br, const struct pci_dev *a,
				       const struct pci_dev *b, void *ctx),
			    void *ctx)
{
	const char *pa = a->path, *pb = b->path;
	size_t common = 0;
	int shared = 0;

	/* the components both paths start with (each ends at a '/') */
	for (size_t i = 0; pa[i] && pa[i] == pb[i]; i++)
		if (pa[i] == '/') {
			common = i + 1;
			shared++;
		}
	if (shared < 2)
		return; /* only the host bridge ("pci0000:40/") in common */
	for (int side = 0; side < 2; side++) {
		const char *p = (side ? pb : pa) + common;
		const char *slash;

		/* every component below the shared part but the device itself */
		while ((slash = strchr(p, '/'))) {
			const struct pci_dev *br = by_bdf(d, n, p, (size_t)(slash - p));

			if (br && pci_is_bridge(br))
				fn(br, a, b, ctx);
			p = slash + 1;
		}
	}
	/* the shared switch's port above both: a downstream port when they hang off one */
}

struct acs_ctx {
	struct lint_problem *out;
	int *n, max;
	const char *seen[64]; /* the bridges said already */
	int nseen;
};

static void acs_check(const struct pci_dev *br, const struct pci_dev *a, const struct pci_dev *b,
		      void *ctx)
{
	struct acs_ctx *c = ctx;
	struct lint_problem *p;
	char la[64], lb[64];

	if (br->acs_ctrl < 0 || !(br->acs_ctrl & (PCI_ACS_RR | PCI_ACS_CR)))
		return;
	for (int i = 0; i < c->nseen; i++)
		if (!strcmp(c->seen[i], br->bdf))
			return;
	if (c->nseen < 64)
		c->seen[c->nseen++] = br->bdf;
	if (!(p = host_problem(c->out, c->n, c->max, LINT_WARN)))
		return;
	snprintf(p->var, sizeof(p->var), "ACS");
	snprintf(p->value, sizeof(p->value), "%s %s%s%s", br->bdf,
		 br->acs_ctrl & PCI_ACS_RR ? "RR" : "",
		 br->acs_ctrl & PCI_ACS_RR && br->acs_ctrl & PCI_ACS_CR ? "," : "",
		 br->acs_ctrl & PCI_ACS_CR ? "CR" : "");
	snprintf(p->what, sizeof(p->what),
		 "ACS redirect is on at the switch port %s, between %s and %s: their P2P and "
		 "GPUDirect RDMA go up through the root complex, and NCCL may hang or crawl "
		 "(NVIDIA/nccl issues 631, 667, 2079)",
		 br->bdf, label(a, la, sizeof(la)), label(b, lb, sizeof(lb)));
	snprintf(p->fix, sizeof(p->fix),
		 "disable ACS on it (setpci -s %s ECAP_ACS+0x6.w=0000, until reboot; or in the "
		 "BIOS), or avoid the path: NCCL_P2P_DISABLE=1, NCCL_NET_GDR_LEVEL=LOC",
		 br->bdf);
}

int pci_lint(const struct pci_dev *d, int n, const struct pci_iommu *io, struct lint_problem *out,
	     int max)
{
	int k = 0, gpus = 0, nics = 0;
	struct acs_ctx ac = {.out = out, .n = &k, .max = max};
	struct lint_problem *p;
	char l[64];

	for (int i = 0; i < n; i++) {
		gpus += pci_is_gpu(&d[i]);
		nics += d[i].rdma;
	}
	if (!gpus && !nics)
		return 0;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (endpoint(&d[i]) && endpoint(&d[j]))
				bridges_between(d, n, &d[i], &d[j], acs_check, &ac);
	/* a link trained narrower than its maximum (its speed drops when idle: not that) */
	for (int i = 0; i < n; i++) {
		if (!endpoint(&d[i]) || !d[i].width || !d[i].max_width ||
		    d[i].width >= d[i].max_width || !(p = host_problem(out, &k, max, LINT_WARN)))
			continue;
		snprintf(p->var, sizeof(p->var), "PCIe");
		snprintf(p->value, sizeof(p->value), "%s x%d", d[i].bdf, d[i].width);
		snprintf(p->what, sizeof(p->what),
			 "the PCIe link of %s runs at x%d of its x%d: its transfers, and the "
			 "collectives through it, are that much slower",
			 label(&d[i], l, sizeof(l)), d[i].width, d[i].max_width);
		snprintf(p->fix, sizeof(p->fix),
			 "reseat the card or check its slot and riser; lspci -vvs %s (LnkSta "
			 "against LnkCap)",
			 d[i].bdf);
	}
	if (gpus && io->units && !io->passthrough && !io->off &&
	    (p = host_problem(out, &k, max, LINT_WARN))) {
		snprintf(p->var, sizeof(p->var), "IOMMU");
		snprintf(p->value, sizeof(p->value), "translating");
		snprintf(p->what, sizeof(p->what),
			 "the IOMMU translates DMA (the kernel was not booted with iommu=pt): "
			 "GPU peer-to-peer and GPUDirect RDMA go through it, and NCCL may hang or "
			 "fail to use them");
		snprintf(p->fix, sizeof(p->fix),
			 "boot with iommu=pt (with intel_iommu=on or amd_iommu=on), or turn it off "
			 "in the BIOS");
	}
	if ((p = host_problem(out, &k, max, LINT_INFO))) {
		snprintf(p->var, sizeof(p->var), "PCI");
		snprintf(p->value, sizeof(p->value), "%d GPU%s, %d RDMA", gpus,
			 gpus == 1 ? "" : "s", nics);
		snprintf(p->what, sizeof(p->what),
			 "%d NVIDIA GPU%s and %d RDMA device%s in the PCI tree; ACS, links and the "
			 "IOMMU checked between them",
			 gpus, gpus == 1 ? "" : "s", nics, nics == 1 ? "" : "s");
	}
	return k;
}
