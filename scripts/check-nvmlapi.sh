#!/bin/bash
# SPDX-License-Identifier: MIT
# check-nvmlapi.sh NVML_H: the NVML declarations of include/nvmlapi.h (nccltrace declares
# the few it uses, since the driver installs no nvml.h) against a real nvml.h (a CUDA toolkit's
# include/nvml.h): each struct's size and field offsets, the constants. Compiles, prints OK.
set -euo pipefail
H=${1:?usage: check-nvmlapi.sh NVML_H}
cd "$(dirname "$0")/.."
[ -r "$H" ] || { echo "check-nvmlapi: cannot read $H" >&2; exit 66; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/check.c" <<C
#include "$(realpath "$H")"
#include <stddef.h>
/* nccltrace's names for NVML's handles and return type, renamed so both headers coexist */
#define nvmlReturn_t nt_ret_t
#define nvmlDevice_t nt_dev_t
#define nvmlEventSet_t nt_set_t
#define nvmlDevice_st nt_dev_st
#define nvmlEventSet_st nt_set_st
#undef nvmlEventTypeDoubleBitEccError
#undef nvmlEventTypeXidCriticalError
#include "$PWD/include/nvmlapi.h"
#define SAME(a, b) _Static_assert(sizeof(a) == sizeof(b), #a)
#define OFF(a, b, f) _Static_assert(offsetof(a, f) == offsetof(b, f), #a "." #f)
SAME(nvmlPciInfo_t, nt_nvmlPciInfo_t);
OFF(nvmlPciInfo_t, nt_nvmlPciInfo_t, pciDeviceId);
OFF(nvmlPciInfo_t, nt_nvmlPciInfo_t, busId);
SAME(nvmlUtilization_t, nt_nvmlUtilization_t);
SAME(nvmlProcessInfo_t, nt_nvmlProcessInfo_t);
OFF(nvmlProcessInfo_t, nt_nvmlProcessInfo_t, usedGpuMemory);
OFF(nvmlProcessInfo_t, nt_nvmlProcessInfo_t, computeInstanceId);
SAME(nvmlEventData_t, nt_nvmlEventData_t);
OFF(nvmlEventData_t, nt_nvmlEventData_t, eventData);
OFF(nvmlEventData_t, nt_nvmlEventData_t, computeInstanceId);
_Static_assert(NVML_CLOCK_SM == 1 && NVML_VOLATILE_ECC == 0 &&
	       NVML_MEMORY_ERROR_TYPE_UNCORRECTED == 1 && NVML_FEATURE_ENABLED == 1, "enums");
_Static_assert(NT_NVLINK_ERR_REPLAY == NVML_NVLINK_ERROR_DL_REPLAY &&
	       NT_NVLINK_ERR_ECC_DATA == NVML_NVLINK_ERROR_DL_ECC_DATA &&
	       NVML_NVLINK_ERROR_DL_ECC_DATA + 1 == NVML_NVLINK_ERROR_COUNT, "NVLink counters");
_Static_assert(NVML_ERROR_NOT_SUPPORTED == 3 && NVML_ERROR_INSUFFICIENT_SIZE == 7 &&
	       NVML_ERROR_TIMEOUT == 10, "return codes");
_Static_assert(nvmlClocksThrottleReasonHwSlowdown == NVML_CLOCKS_HW_SLOWDOWN &&
	       nvmlClocksThrottleReasonSwThermalSlowdown == NVML_CLOCKS_SW_THERMAL &&
	       nvmlClocksThrottleReasonHwThermalSlowdown == NVML_CLOCKS_HW_THERMAL &&
	       nvmlClocksThrottleReasonHwPowerBrakeSlowdown == NVML_CLOCKS_HW_POWER_BRAKE &&
	       nvmlClocksThrottleReasonSwPowerCap == NVML_CLOCKS_SW_POWER_CAP, "clock reasons");
_Static_assert(NVML_DEVICE_UUID_V2_BUFFER_SIZE == 96 && NVML_DEVICE_NAME_V2_BUFFER_SIZE == 96 &&
	       NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE == 80 && NVML_NVLINK_MAX_LINKS == 18,
	       "buffer sizes");
int main(void) { return 0; }
C
cc -std=gnu11 -Wno-deprecated-declarations -c "$T/check.c" -o "$T/check.o"
echo "check-nvmlapi: OK against $H"
