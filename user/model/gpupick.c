// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/gpupick.h"
#include "model/snapshot.h"

int gpu_env_pick(const char *cvd, int local_rank, const struct snap_gpu *gpus, int n)
{
	char ent[64];
	const char *p;
	int count = 1, k;
	size_t len;

	if (!cvd) {
		for (int i = 0; local_rank >= 0 && i < n; i++)
			if (gpus[i].index == local_rank)
				return i;
		return -1;
	}
	for (p = cvd; *p; p++)
		count += *p == ',';
	k = count == 1 ? 0 : local_rank;
	if (!*cvd || k < 0 || k >= count)
		return -1;
	for (p = cvd; k > 0; k--)
		p = strchr(p, ',') + 1;
	len = strcspn(p, ",");
	while (len && p[len - 1] == ' ')
		len--;
	while (len && *p == ' ')
		p++, len--;
	if (!len || len >= sizeof(ent))
		return -1;
	memcpy(ent, p, len);
	ent[len] = 0;
	if (!strncmp(ent, "GPU-", 4)) {
		int found = -1;

		for (int i = 0; i < n; i++)
			if (!strncmp(gpus[i].uuid, ent, len)) {
				if (found >= 0)
					return -1; /* a prefix of two: CUDA refuses it too */
				found = i;
			}
		return found;
	}
	char *end;
	long v = strtol(ent, &end, 10);

	if (*end || end == ent || v < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (gpus[i].index == v)
			return i;
	return -1;
}

int gpu_pick(const struct snap_gpu *gpus, const int *listed, int nlisted, const char *log_bus,
	     int env, char *also, size_t alsolen)
{
	int pick = -1;
	size_t at = 0;

	for (int i = 0; pick < 0 && log_bus && *log_bus && i < nlisted; i++)
		if (!strcmp(gpus[listed[i]].bus, log_bus))
			pick = listed[i];
	for (int i = 0; pick < 0 && env >= 0 && i < nlisted; i++)
		if (listed[i] == env)
			pick = env;
	if (pick < 0)
		for (int i = 0; i < nlisted; i++)
			if (pick < 0 || gpus[listed[i]].index < gpus[pick].index)
				pick = listed[i];
	if (alsolen)
		also[0] = 0;
	for (int i = 0; i < nlisted && alsolen; i++)
		if (listed[i] != pick && at + 12 < alsolen)
			at += (size_t)snprintf(also + at, alsolen - at, "%s%d", at ? "," : "",
					       gpus[listed[i]].index);
	return pick;
}
