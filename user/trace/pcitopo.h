/* SPDX-License-Identifier: MIT */
/*
 * The host's PCI devices as the kernel shows them under /sys ($NCCLTRACE_SYSFS replaces /sys,
 * and $NCCLTRACE_PROCFS /proc, for tests): where each sits in the tree, its class, NUMA node,
 * PCIe link against its maximum, and a bridge's ACS control (read from its extended config
 * space: root reads all 4096 bytes). What doctor checks on a host before a run.
 */
#ifndef NT_PCITOPO_H
#define NT_PCITOPO_H

#include <stdbool.h>

/* ACS control bits (PCIe base spec, the ACS extended capability, ID 0x000d) */
#define PCI_ACS_RR 0x04 /* P2P request redirect */
#define PCI_ACS_CR 0x08 /* P2P completion redirect */

struct pci_dev {
	char bdf[16];	/* "0000:41:00.0" */
	char path[256]; /* its place in the tree: "pci0000:40/0000:40:01.1/0000:41:00.0" */
	unsigned vendor, class_code; /* class_code: the 24-bit class, 0x030200 a 3D controller */
	int numa;		     /* -1: none said */
	int width, max_width;	     /* lanes of its PCIe link; 0: unknown */
	int acs_ctrl;		     /* its ACS control register, -1: no ACS capability read */
	bool rdma;		     /* an RDMA device (infiniband/ under it): InfiniBand or RoCE */
	char name[32];		     /* its RDMA device or network interface name, "" if none */
};

/* NVIDIA's GPUs (display and 3D controllers of vendor 0x10de) */
static inline bool pci_is_gpu(const struct pci_dev *d)
{
	return d->vendor == 0x10de && d->class_code >> 16 == 0x03;
}

/* A PCI-to-PCI bridge: a switch's port or a root port, where ACS applies */
static inline bool pci_is_bridge(const struct pci_dev *d)
{
	return d->class_code >> 8 == 0x0604;
}

/*
 * Every PCI device, in /sys/bus/pci/devices' order, into *out (free() it): their number, or
 * -errno when the directory cannot be read (no PCI bus here: 0 devices).
 */
int pci_scan(struct pci_dev **out);

/*
 * The IOMMU: whether one translates DMA (/sys/class/iommu has units) and whether the kernel
 * was booted with it in passthrough (iommu=pt, iommu.passthrough=1) or off (intel_iommu=off,
 * amd_iommu=off), from /proc/cmdline
 */
struct pci_iommu {
	bool units, passthrough, off;
};
void pci_iommu(struct pci_iommu *out);

#endif /* NT_PCITOPO_H */
