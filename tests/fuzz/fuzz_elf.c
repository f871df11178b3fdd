// SPDX-License-Identifier: MIT
/*
 * An NCCL library as nccltrace finds it in a rank's maps (any file the job maps, of any build):
 * its ELF symbols, version strings, build id, DWARF offsets, and the profiler API it looks up.
 * The seeds are real builds of the fake NCCL (scripts/fuzz.sh puts them in), so the fuzzer
 * starts from valid ELF.
 */
#include <string.h>
#include "fuzz.h"
#include "util/elfsym.h"
#include "nccl/nccllib.h"
#include "nccl/ncclprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nccl_lib lib;
	const char *path = fuzz_file(data, size);
	struct elf_lib *l;
	struct elf_sym s[4];
	char err[512], buf[256];

	/* no offsets cache: an input must not become the next one's cache entry */
	nccllib_open(path, NULL, &lib, err, sizeof(err));
	ncclprof_lib_api(path);
	if (elflib_open(path, &l, err, sizeof(err)) == 0) {
		elflib_find(l, "ncclAllReduce", s, 4);
		elflib_find_clone(l, "ncclSocketConnect", s, 4);
		elflib_find_object(l, "ncclParamSocketRetryCnt", s);
		elflib_find_string(l, "NCCL version ", buf, sizeof(buf));
		elflib_close(l);
	}
	return 0;
}
