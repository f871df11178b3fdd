/* SPDX-License-Identifier: MIT */
/*
 * The few parts of NVML (libnvidia-ml.so.1, which comes with NVIDIA's driver) that nccltrace
 * uses, declared as NVML's public API documents them (nvml.h is not installed with the driver).
 * Each layout was checked against CUDA 13.0's nvml.h and the driver 580's library (docs/gpu.md).
 * The exported names are the versioned ones nvml.h maps its API to (nvmlInit -> nvmlInit_v2).
 */
#ifndef NT_NVMLAPI_H
#define NT_NVMLAPI_H

typedef int nvmlReturn_t; /* NVML_SUCCESS 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_SUCCESS		     0
#define NVML_ERROR_NOT_SUPPORTED     3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT	     10

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE	       96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE	       96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS		       18

#define NVML_CLOCK_SM			   1 /* nvmlClockType_t */
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1 /* nvmlMemoryErrorType_t */
#define NVML_VOLATILE_ECC		   0 /* nvmlEccCounterType_t: since the driver loaded */
#define NVML_FEATURE_ENABLED		   1 /* nvmlEnableState_t */

/* nvmlNvLinkErrorCounter_t: data link replays, recoveries, CRC (flit, data) and ECC errors */
#define NT_NVLINK_ERR_REPLAY   0
#define NT_NVLINK_ERR_ECC_DATA 4 /* the last */

#define nvmlEventTypeDoubleBitEccError 0x2ULL
#define nvmlEventTypeXidCriticalError  0x8ULL

/* nvmlClocksEventReason* (nvmlClocksThrottleReason* before CUDA 12.2) */
#define NVML_CLOCKS_GPU_IDLE	    0x1ULL
#define NVML_CLOCKS_APP_SETTING	    0x2ULL
#define NVML_CLOCKS_SW_POWER_CAP    0x4ULL
#define NVML_CLOCKS_HW_SLOWDOWN	    0x8ULL
#define NVML_CLOCKS_SYNC_BOOST	    0x10ULL
#define NVML_CLOCKS_SW_THERMAL	    0x20ULL
#define NVML_CLOCKS_HW_THERMAL	    0x40ULL
#define NVML_CLOCKS_HW_POWER_BRAKE  0x80ULL
#define NVML_CLOCKS_DISPLAY_SETTING 0x100ULL

/* nvmlPciInfo_t, filled by nvmlDeviceGetPciInfo_v3 */
typedef struct {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:3B:00.0" */
} nt_nvmlPciInfo_t;

/* nvmlUtilization_t */
typedef struct {
	unsigned int gpu, memory; /* percent of the last sample period */
} nt_nvmlUtilization_t;

/* nvmlProcessInfo_v2_t (= nvmlProcessInfo_t), filled by nvmlDeviceGetComputeRunningProcesses_v3 */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nt_nvmlProcessInfo_t;

/* nvmlEventData_t, filled by nvmlEventSetWait_v2 */
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData; /* the Xid for nvmlEventTypeXidCriticalError (999: unknown) */
	unsigned int gpuInstanceId, computeInstanceId;
} nt_nvmlEventData_t;

#endif /* NT_NVMLAPI_H */
