// SPDX-License-Identifier: MIT
/*
 * nccltrace-nvml: the GPUs as NVML (libnvidia-ml.so.1, the driver's) sees them, for nccltrace,
 * in a process of its own: the static nccltrace cannot dlopen, and an NVML call on a GPU that
 * fell off the bus can block for seconds, which must never stall the tracer's tick.
 *
 * It prints, one line each, words separated by spaces (a name's spaces as '_'):
 *   nvml DRIVER COUNT			 at start; "nonvml WHY" and exit 0 without NVML
 *   gpu IDX key=value...		 per GPU, at each "sample" line read from stdin
 *   pid IDX PID			 each compute process NVML lists on GPU IDX
 *   end				 the sample is whole
 *   xid IDX XID			 an Xid (or a double-bit ECC error, XID 48) event,
 *					 when NVML delivers it (checked every 100 ms)
 * and exits when stdin closes. `nccltrace-nvml --once` prints one sample and exits.
 */
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <signal.h>
#include <unistd.h>
#include "nvmlapi.h"

/* the versions every glibc has (2.34 made new ones): GPU nodes run older distributions */
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");

#define MAX_GPUS  64
#define MAX_PROCS 256

#define FN(ret, name, args) static ret(*name) args
FN(nvmlReturn_t, nvmlInit_v2, (void));
FN(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *, unsigned int));
FN(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *));
FN(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned int));
FN(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int));
FN(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t, nt_nvmlPciInfo_t *));
FN(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nt_nvmlUtilization_t *));
FN(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t, int, unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetMaxClockInfo, (nvmlDevice_t, int, unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t, unsigned long long *));
FN(nvmlReturn_t, nvmlDeviceGetCurrentClocksThrottleReasons, (nvmlDevice_t, unsigned long long *));
FN(nvmlReturn_t, nvmlDeviceGetTotalEccErrors, (nvmlDevice_t, int, int, unsigned long long *));
FN(nvmlReturn_t, nvmlDeviceGetRemappedRows,
   (nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetCurrPcieLinkGeneration, (nvmlDevice_t, unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetCurrPcieLinkWidth, (nvmlDevice_t, unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetMaxPcieLinkGeneration, (nvmlDevice_t, unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetMaxPcieLinkWidth, (nvmlDevice_t, unsigned int *));
FN(nvmlReturn_t, nvmlDeviceGetNvLinkState, (nvmlDevice_t, unsigned int, int *));
FN(nvmlReturn_t, nvmlDeviceGetNvLinkErrorCounter,
   (nvmlDevice_t, unsigned int, int, unsigned long long *));
FN(nvmlReturn_t, nvmlDeviceGetPersistenceMode, (nvmlDevice_t, int *));
FN(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,
   (nvmlDevice_t, unsigned int *, nt_nvmlProcessInfo_t *));
FN(nvmlReturn_t, nvmlEventSetCreate, (nvmlEventSet_t *));
FN(nvmlReturn_t, nvmlDeviceRegisterEvents, (nvmlDevice_t, unsigned long long, nvmlEventSet_t));
FN(nvmlReturn_t, nvmlEventSetWait_v2, (nvmlEventSet_t, nt_nvmlEventData_t *, unsigned int));

static nvmlDevice_t dev[MAX_GPUS];
static unsigned int ndev;
static nvmlEventSet_t events;

#define SYM(lib, name) (*(void **)&name = dlsym(lib, #name))

/* $NCCLTRACE_NVML: another libnvidia-ml.so.1 (a driver's in an odd place; the tests' fake) */
static const char *load(void)
{
	const char *path = getenv("NCCLTRACE_NVML");
	void *lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return dlerror();
	if (!SYM(lib, nvmlInit_v2) || !SYM(lib, nvmlDeviceGetCount_v2) ||
	    !SYM(lib, nvmlDeviceGetHandleByIndex_v2))
		return "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or "
		       "nvmlDeviceGetHandleByIndex_v2";
	/* the others are optional: a GPU or driver without one goes without that figure */
	SYM(lib, nvmlSystemGetDriverVersion);
	SYM(lib, nvmlDeviceGetUUID);
	SYM(lib, nvmlDeviceGetName);
	SYM(lib, nvmlDeviceGetPciInfo_v3);
	SYM(lib, nvmlDeviceGetUtilizationRates);
	SYM(lib, nvmlDeviceGetClockInfo);
	SYM(lib, nvmlDeviceGetMaxClockInfo);
	SYM(lib, nvmlDeviceGetCurrentClocksEventReasons);
	SYM(lib, nvmlDeviceGetCurrentClocksThrottleReasons);
	SYM(lib, nvmlDeviceGetTotalEccErrors);
	SYM(lib, nvmlDeviceGetRemappedRows);
	SYM(lib, nvmlDeviceGetCurrPcieLinkGeneration);
	SYM(lib, nvmlDeviceGetCurrPcieLinkWidth);
	SYM(lib, nvmlDeviceGetMaxPcieLinkGeneration);
	SYM(lib, nvmlDeviceGetMaxPcieLinkWidth);
	SYM(lib, nvmlDeviceGetNvLinkState);
	SYM(lib, nvmlDeviceGetNvLinkErrorCounter);
	SYM(lib, nvmlDeviceGetPersistenceMode);
	SYM(lib, nvmlDeviceGetComputeRunningProcesses_v3);
	SYM(lib, nvmlEventSetCreate);
	SYM(lib, nvmlDeviceRegisterEvents);
	SYM(lib, nvmlEventSetWait_v2);
	return NULL;
}

/* a value without spaces or '=' (NVML's names have spaces) */
static void word(char *s)
{
	for (; *s; s++)
		if (*s == ' ' || *s == '=' || *s == '\n')
			*s = '_';
}

#define OK(call) ((call) == NVML_SUCCESS)

static void sample_gpu(unsigned int i)
{
	nvmlDevice_t d = dev[i];
	char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	nt_nvmlPciInfo_t pci;
	nt_nvmlUtilization_t u;
	unsigned int a, b, c, e;
	unsigned long long r;
	int st, up = 0, known = 0;
	unsigned long long lerr = 0;
	nt_nvmlProcessInfo_t procs[MAX_PROCS];

	printf("gpu %u", i);
	if (nvmlDeviceGetUUID && OK(nvmlDeviceGetUUID(d, buf, sizeof(buf))))
		word(buf), printf(" uuid=%s", buf);
	if (nvmlDeviceGetName && OK(nvmlDeviceGetName(d, buf, sizeof(buf))))
		word(buf), printf(" name=%s", buf);
	if (nvmlDeviceGetPciInfo_v3 && OK(nvmlDeviceGetPciInfo_v3(d, &pci)))
		word(pci.busId), printf(" bus=%s", pci.busId);
	if (nvmlDeviceGetUtilizationRates && OK(nvmlDeviceGetUtilizationRates(d, &u)))
		printf(" util=%u", u.gpu);
	if (nvmlDeviceGetClockInfo && OK(nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &a)))
		printf(" sm=%u", a);
	if (nvmlDeviceGetMaxClockInfo && OK(nvmlDeviceGetMaxClockInfo(d, NVML_CLOCK_SM, &a)))
		printf(" smmax=%u", a);
	if ((nvmlDeviceGetCurrentClocksEventReasons &&
	     OK(nvmlDeviceGetCurrentClocksEventReasons(d, &r))) ||
	    (nvmlDeviceGetCurrentClocksThrottleReasons &&
	     OK(nvmlDeviceGetCurrentClocksThrottleReasons(d, &r))))
		printf(" throttle=0x%llx", r);
	if (nvmlDeviceGetTotalEccErrors &&
	    OK(nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
					   &r)))
		printf(" ecc=%llu", r);
	if (nvmlDeviceGetRemappedRows && OK(nvmlDeviceGetRemappedRows(d, &a, &b, &c, &e)))
		printf(" remap_pending=%u remap_failed=%u", c, e);
	if (nvmlDeviceGetCurrPcieLinkGeneration && OK(nvmlDeviceGetCurrPcieLinkGeneration(d, &a)) &&
	    nvmlDeviceGetCurrPcieLinkWidth && OK(nvmlDeviceGetCurrPcieLinkWidth(d, &b)))
		printf(" pcie=%ux%u", a, b);
	if (nvmlDeviceGetMaxPcieLinkGeneration && OK(nvmlDeviceGetMaxPcieLinkGeneration(d, &a)) &&
	    nvmlDeviceGetMaxPcieLinkWidth && OK(nvmlDeviceGetMaxPcieLinkWidth(d, &b)))
		printf(" pciemax=%ux%u", a, b);
	for (unsigned int l = 0; nvmlDeviceGetNvLinkState && l < NVML_NVLINK_MAX_LINKS; l++)
		if (OK(nvmlDeviceGetNvLinkState(d, l, &st))) {
			known++;
			up += st == NVML_FEATURE_ENABLED;
			for (int c = NT_NVLINK_ERR_REPLAY;
			     nvmlDeviceGetNvLinkErrorCounter && c <= NT_NVLINK_ERR_ECC_DATA; c++)
				if (OK(nvmlDeviceGetNvLinkErrorCounter(d, l, c, &r)))
					lerr += r;
		}
	if (known)
		printf(" nvlink=%d/%d nvlerr=%llu", up, known, lerr);
	if (nvmlDeviceGetPersistenceMode && OK(nvmlDeviceGetPersistenceMode(d, &st)))
		printf(" persistence=%d", st == NVML_FEATURE_ENABLED);
	printf("\n");
	a = MAX_PROCS;
	if (nvmlDeviceGetComputeRunningProcesses_v3 &&
	    OK(nvmlDeviceGetComputeRunningProcesses_v3(d, &a, procs)))
		for (unsigned int k = 0; k < a && k < MAX_PROCS; k++)
			printf("pid %u %u\n", i, procs[k].pid);
}

static void sample(void)
{
	for (unsigned int i = 0; i < ndev; i++)
		sample_gpu(i);
	printf("end\n");
	fflush(stdout);
}

static void drain_events(void)
{
	nt_nvmlEventData_t ev;

	while (events && OK(nvmlEventSetWait_v2(events, &ev, 0))) {
		unsigned int i = 0;

		while (i < ndev && dev[i] != ev.device)
			i++;
		if (i == ndev)
			continue;
		if (ev.eventType & nvmlEventTypeXidCriticalError)
			printf("xid %u %llu\n", i, ev.eventData);
		else if (ev.eventType & nvmlEventTypeDoubleBitEccError)
			printf("xid %u 48\n", i); /* Xid 48: a double-bit ECC error */
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *why = load();
	char drv[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "unknown", line[64];
	struct pollfd in = {.fd = 0, .events = POLLIN};
	int r;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (why || (r = nvmlInit_v2()) != NVML_SUCCESS ||
	    (r = nvmlDeviceGetCount_v2(&ndev)) != NVML_SUCCESS) {
		if (!why)
			snprintf(line, sizeof(line), "NVML error %d", r);
		printf("nonvml %s\n", why ? why : line);
		return 0;
	}
	if (ndev > MAX_GPUS)
		ndev = MAX_GPUS;
	for (unsigned int i = 0; i < ndev; i++)
		if (!OK(nvmlDeviceGetHandleByIndex_v2(i, &dev[i])))
			dev[i] = NULL;
	if (nvmlSystemGetDriverVersion)
		nvmlSystemGetDriverVersion(drv, sizeof(drv));
	word(drv);
	printf("nvml %s %u\n", drv, ndev);
	if (argc > 1 && !strcmp(argv[1], "--once")) {
		sample();
		return 0;
	}
	fflush(stdout);
	if (nvmlEventSetCreate && nvmlDeviceRegisterEvents && nvmlEventSetWait_v2 &&
	    OK(nvmlEventSetCreate(&events)))
		for (unsigned int i = 0; i < ndev; i++)
			nvmlDeviceRegisterEvents(dev[i],
						 nvmlEventTypeXidCriticalError |
							 nvmlEventTypeDoubleBitEccError,
						 events);
	for (;;) {
		r = poll(&in, 1, 100);
		if (r > 0) {
			if (!fgets(line, sizeof(line), stdin))
				return 0;
			if (!strncmp(line, "sample", 6))
				sample();
		}
		drain_events();
	}
}
