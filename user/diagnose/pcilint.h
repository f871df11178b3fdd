/* SPDX-License-Identifier: MIT */
/*
 * The host as a suspect, before a run (doctor): what in its PCI tree makes NCCL hang or crawl.
 * ACS redirect on a switch port between an NVIDIA GPU and an RDMA NIC or another GPU that share
 * the switch (P2P and GPUDirect RDMA go up to the root complex: NVIDIA/nccl issues 631, 667,
 * 2079), a GPU's or NIC's link trained narrower than it can be, and an IOMMU that translates
 * DMA. Pure: the devices come from trace/pcitopo.
 */
#ifndef NT_PCILINT_H
#define NT_PCILINT_H

#include "diagnose/envlint.h"
#include "trace/pcitopo.h"

/* A blank problem of the host's (rank -1) at out[*n], counted; NULL when out is full */
struct lint_problem *host_problem(struct lint_problem *out, int *n, int max, enum lint_sev sev);

/* The problems (and one line of what was seen, as info) into out: how many, at most max */
int pci_lint(const struct pci_dev *d, int n, const struct pci_iommu *io, struct lint_problem *out,
	     int max);

#endif /* NT_PCILINT_H */
