// SPDX-License-Identifier: MIT
/*
 * An all_reduce bus-bandwidth benchmark in the manner of nccl-tests, for measuring what
 * nccltrace costs a real NCCL job: one process per GPU (this program forks them, like a
 * launcher), the unique id passed through a file, sizes from --min to --max by --factor, a
 * warm-up, then --iters timed all_reduces per size (CUDA events on the stream). --pre S first
 * runs all_reduces of --min bytes for about S seconds: the steady state of a job that has been
 * training a while (nccltrace's quiet mode starts after 2 s of moving collectives). Rank 0 prints,
 * per size: bytes, time per all_reduce in microseconds, algbw and busbw in GB/s (busbw =
 * algbw x 2(n-1)/n, as nccl-tests). Built with the CUDA toolkit (nvcc's libcudart_static and
 * libnccl); run against whichever libnccl.so.2 the loader finds.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <getopt.h>
#include <nccl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct opts {
	int nranks;
	size_t min, max;
	int factor, iters, warmup;
	double target_s; /* time budget per size: fewer iterations for big sizes */
	double pre_s;	 /* untimed all_reduces first, for about this long */
	int one_gpu;	 /* every rank on GPU 0, each its own NCCL host (NCCL_HOSTID) */
	char id_file[256];
};

#define CHECK_CUDA(x)                                                                              \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "busbw: %s: %s\n", #x, cudaGetErrorString(e_));            \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)
#define CHECK_NCCL(x)                                                                              \
	do {                                                                                       \
		ncclResult_t r_ = (x);                                                             \
		if (r_ != ncclSuccess) {                                                           \
			fprintf(stderr, "busbw: %s: %s\n", #x, ncclGetErrorString(r_));            \
			exit(3);                                                                   \
		}                                                                                  \
	} while (0)

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0) {
		fprintf(stderr, "busbw: bad size '%s'\n", s);
		exit(64);
	}
	switch (*end) {
	case 'K':
	case 'k':
		v *= 1024;
		break;
	case 'M':
	case 'm':
		v *= 1024 * 1024;
		break;
	case 'G':
	case 'g':
		v *= 1024.0 * 1024 * 1024;
		break;
	default:
		break;
	}
	return (size_t)v;
}

static void read_id(const char *path, ncclUniqueId *id)
{
	for (int tries = 0; tries < 6000; tries++) {
		FILE *f = fopen(path, "rb");

		if (f) {
			size_t n = fread(id, 1, sizeof(*id), f);

			fclose(f);
			if (n == sizeof(*id))
				return;
		}
		usleep(10000);
	}
	fprintf(stderr, "busbw: no unique id in %s after 60 s\n", path);
	exit(4);
}

static void write_id(const char *path, const ncclUniqueId *id)
{
	char tmp[300];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f || fwrite(id, 1, sizeof(*id), f) != sizeof(*id) || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "busbw: cannot write %s: %s\n", path, strerror(errno));
		exit(4);
	}
}

/* Every rank must run the same number of all_reduces: rank 0's value wins. */
static void agree(int *v, ncclComm_t comm, cudaStream_t st)
{
	int *d;

	CHECK_CUDA(cudaMalloc((void **)&d, sizeof(int)));
	CHECK_CUDA(cudaMemcpy(d, v, sizeof(int), cudaMemcpyHostToDevice));
	CHECK_NCCL(ncclBroadcast(d, d, 1, ncclInt32, 0, comm, st));
	CHECK_CUDA(cudaMemcpyAsync(v, d, sizeof(int), cudaMemcpyDeviceToHost, st));
	CHECK_CUDA(cudaStreamSynchronize(st));
	CHECK_CUDA(cudaFree(d));
}

static int worker(const struct opts *o, int rank)
{
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t st;
	cudaEvent_t t0, t1;
	float *buf;
	size_t bytes = o->max < 4 ? 4 : o->max;

	if (o->one_gpu) {
		char host[32];

		/* NCCL takes each rank for a host of its own: its network transport joins them */
		snprintf(host, sizeof(host), "busbw-host-%d", rank);
		setenv("NCCL_HOSTID", host, 1);
	}
	CHECK_CUDA(cudaSetDevice(o->one_gpu ? 0 : rank));
	if (rank == 0) {
		CHECK_NCCL(ncclGetUniqueId(&id));
		write_id(o->id_file, &id);
	} else {
		read_id(o->id_file, &id);
	}
	CHECK_NCCL(ncclCommInitRank(&comm, o->nranks, id, rank));
	CHECK_CUDA(cudaStreamCreate(&st));
	CHECK_CUDA(cudaEventCreate(&t0));
	CHECK_CUDA(cudaEventCreate(&t1));
	CHECK_CUDA(cudaMalloc((void **)&buf, bytes));
	CHECK_CUDA(cudaMemset(buf, 0, bytes));
	if (o->pre_s > 0) {
		size_t count = o->min / sizeof(float) ? o->min / sizeof(float) : 1;
		int n = 100;
		float ms;

		/* the first all_reduce connects the rings: not part of the per-op time */
		for (int i = 0; i < 10; i++)
			CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, st));
		CHECK_CUDA(cudaStreamSynchronize(st));
		CHECK_CUDA(cudaEventRecord(t0, st));
		for (int i = 0; i < n; i++)
			CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, st));
		CHECK_CUDA(cudaEventRecord(t1, st));
		CHECK_CUDA(cudaEventSynchronize(t1));
		CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
		n = ms > 0 ? (int)(o->pre_s / (ms / 1e3 / n)) : n;
		agree(&n, comm, st);
		for (int i = 0; i < n; i++) {
			CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, st));
			if (i % 1000 == 999) /* keep the queue short, as a training step would */
				CHECK_CUDA(cudaStreamSynchronize(st));
		}
		CHECK_CUDA(cudaStreamSynchronize(st));
	}
	if (rank == 0)
		printf("# %d ranks; bytes time_us algbw_GBs busbw_GBs iters\n", o->nranks);
	for (size_t size = o->min; size <= o->max; size *= o->factor) {
		size_t count = size / sizeof(float) ? size / sizeof(float) : 1;
		int iters = o->iters;
		float ms;
		double us, algbw;

		for (int i = 0; i < o->warmup; i++)
			CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, st));
		CHECK_CUDA(cudaStreamSynchronize(st));
		/* one timed all_reduce sizes the run: about target_s per size, at least 5 */
		CHECK_CUDA(cudaEventRecord(t0, st));
		CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, st));
		CHECK_CUDA(cudaEventRecord(t1, st));
		CHECK_CUDA(cudaEventSynchronize(t1));
		CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
		if (ms > 0 && o->target_s / (ms / 1e3) < iters)
			iters = (int)(o->target_s / (ms / 1e3));
		if (iters < 5)
			iters = 5;
		agree(&iters, comm, st);
		CHECK_CUDA(cudaEventRecord(t0, st));
		for (int i = 0; i < iters; i++)
			CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, st));
		CHECK_CUDA(cudaEventRecord(t1, st));
		CHECK_CUDA(cudaEventSynchronize(t1));
		CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
		us = ms * 1e3 / iters;
		algbw = (double)(count * sizeof(float)) / (us * 1e-6) / 1e9;
		if (rank == 0)
			printf("%zu %.3f %.3f %.3f %d\n", count * sizeof(float), us, algbw,
			       algbw * 2.0 * (o->nranks - 1) / o->nranks, iters);
		fflush(stdout);
		if (size > o->max / o->factor)
			break;
	}
	CHECK_CUDA(cudaFree(buf));
	CHECK_NCCL(ncclCommDestroy(comm));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"nranks", 1, NULL, 'n'},
		{"min", 1, NULL, 'b'},
		{"max", 1, NULL, 'e'},
		{"factor", 1, NULL, 'f'},
		{"iters", 1, NULL, 'i'},
		{"warmup", 1, NULL, 'w'},
		{"target", 1, NULL, 't'},
		{"pre", 1, NULL, 'p'},
		{"one-gpu", 0, NULL, 'g'},
		{"help", 0, NULL, 'h'},
		{},
	};
	struct opts o = {.nranks = 2,
			 .min = 8,
			 .max = 1 << 30,
			 .factor = 4,
			 .iters = 200,
			 .warmup = 5,
			 .target_s = 0.25};
	pid_t pids[16];
	int c, failed = 0;

	while ((c = getopt_long(argc, argv, "n:b:e:f:i:w:t:p:gh", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			o.nranks = atoi(optarg);
			break;
		case 'b':
			o.min = parse_size(optarg);
			break;
		case 'e':
			o.max = parse_size(optarg);
			break;
		case 'f':
			o.factor = atoi(optarg);
			break;
		case 'i':
			o.iters = atoi(optarg);
			break;
		case 'w':
			o.warmup = atoi(optarg);
			break;
		case 't':
			o.target_s = atof(optarg);
			break;
		case 'p':
			o.pre_s = atof(optarg);
			break;
		case 'g':
			o.one_gpu = 1;
			break;
		case 'h':
			printf("Usage: busbw [--nranks N] [--min 8] [--max 1G] [--factor 4] "
			       "[--iters 200]"
			       " [--warmup 5] [--target 0.25] [--pre 0] [--one-gpu]\n");
			return 0;
		default:
			return 64;
		}
	}
	if (o.nranks < 1 || o.nranks > 16 || o.factor < 2 || o.iters < 1 || o.min > o.max) {
		fprintf(stderr, "busbw: bad options (see --help)\n");
		return 64;
	}
	snprintf(o.id_file, sizeof(o.id_file), "/tmp/busbw-%d.id", getpid());
	unlink(o.id_file);
	for (int r = 0; r < o.nranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0) {
			perror("busbw: fork");
			return 71;
		}
		if (pids[r] == 0) {
			char v[16];

			snprintf(v, sizeof(v), "%d", r);
			setenv("RANK", v, 1);
			setenv("LOCAL_RANK", v, 1);
			snprintf(v, sizeof(v), "%d", o.nranks);
			setenv("WORLD_SIZE", v, 1);
			_exit(worker(&o, r));
		}
	}
	for (int r = 0; r < o.nranks; r++) {
		int st;

		if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	unlink(o.id_file);
	return failed;
}
