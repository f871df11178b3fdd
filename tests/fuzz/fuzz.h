/* SPDX-License-Identifier: MIT */
/*
 * What the libFuzzer targets share: the input as a file (the readers under test take paths, as
 * nccltrace gives them a dump, a library or a cache entry), and the directory of the target
 * binary (build/fuzz), from which the seeds' builds are found.
 */
#ifndef NT_FUZZ_H
#define NT_FUZZ_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The input in a memory file, named as /proc/self/fd/N: the same name for every input. */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	return path;
}

#endif /* NT_FUZZ_H */
