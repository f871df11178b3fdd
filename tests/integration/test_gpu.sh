#!/bin/bash
# SPDX-License-Identifier: MIT
# The GPU as a suspect, mocked faithfully (no GPU here): a fake libnvidia-ml.so.1 exporting
# NVML's real names and struct layouts (tests/fixtures/fakenvml.c), its GPUs described by a file
# the test edits while the job runs, a process on GPU k when its environment says LOCAL_RANK=k;
# and the kernel's log as a file of /dev/kmsg records ($NCCLTRACE_KMSG: a test never writes
# "NVRM: Xid" into this machine's real log, which node monitors read). Real fake-NCCL jobs, real
# BPF, the real nccltrace-nvml helper: each rank's GPU in the dump and the report; an Xid on
# rank 1's GPU during a stall names rank 1 as gpu_error within a second of the Xid, by NVML's
# event and by the kernel's line (hostile lines ignored); throttling behind a straggler and a
# degraded link behind a stall as hypotheses, and a rank pinned to another NUMA node than its
# GPU's and its NIC's; a stray context on GPU 0 (the rank stays on NCCL's GPU), each rank's GPU from
# CUDA_VISIBLE_DEVICES and LOCAL_RANK where NVML lists no process, ranks sharing a GPU behind a
# straggler; doctor with and without NVML.
# checks: 46
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
FAKENVML=$ROOT/build/fakenvml/libnvidia-ml.so.1
HELPER=${NCCLTRACE_LIBDIR:-$ROOT/build}/nccltrace-nvml
export NCCLTRACE_CACHE_DIR=$TMP/cache
STATE=$TMP/nvml.state
export FAKENVML_STATE=$STATE
gpus() { # the three GPUs, rank 1's with EXTRA
	printf 'driver 580.95.05\ngpu 0 name=NVIDIA_H100_80GB_HBM3 util=40\ngpu 1 name=NVIDIA_H100_80GB_HBM3 util=40 %s\ngpu 2 name=NVIDIA_H100_80GB_HBM3 util=40\n' "$1" >"$STATE"
}

# hyp_is / ev_is NAME REGEX: the first finding of $f has one hypothesis / evidence line matching
hyp_is() {
	check "$1" "hypotheses: $(jq -c '.[0].hypotheses' <<<"$f")" -- \
		jqe --arg re "$2" '.[0].hypotheses | map(select(test($re))) | length == 1' <<<"$f"
}
ev_is() {
	check "$1" "evidence: $(jq -c '.[0].evidence' <<<"$f")" -- \
		jqe --arg re "$2" '.[0].evidence | map(select(test($re))) | length == 1' <<<"$f"
}

# --- the helper alone, with the fake and without NVML ---
gpus ""
out=$(NCCLTRACE_NVML=$FAKENVML "$HELPER" --once 2>&1)
check helper_gpus "helper said: $out" -- \
	test "$(grep -c '^gpu [0-2] uuid=GPU-fa4e000[0-2]-.* bus=00000000:[123]B:00.0 ' <<<"$out")" = 3
check helper_first "helper said: $(head -1 <<<"$out")" -- test "$(head -1 <<<"$out")" = "nvml 580.95.05 3"
out=$(NCCLTRACE_NVML=$TMP/none.so "$HELPER" --once 2>&1)
rc=$?
check helper_no_nvml "exit $rc: $out" -- test $rc = 0 -a "${out%% *}" = nonvml

need_fixture gpu "$NJ" "$FAKENVML" "$HELPER" || end_checks

# --- a healthy job: each rank on its GPU, by NVML's processes, in the dump and the report ---
D=$TMP/healthy.jsonl
NCCLTRACE_NVML=$FAKENVML "$NT" run -v -t 3 --dump "$D" -- "$NJ" --ranks 3 --iters 30 \
	>"$TMP/healthy.out" 2>&1
rc=$?
check healthy_exit "exit $rc: $(tail -3 "$TMP/healthy.out")" -- test $rc = 0
check healthy_none "findings: $(findings "$D")" -- test "$(findings "$D" | jq length)" = 0
R=$("$NT" report --json "$D")
check healthy_ranks_gpu "ranks: $(jq -c '[.ranks[] | {rank, gpu: .gpu.index, how: .gpu.how}]' <<<"$R")" -- \
	jqe '[.ranks[] | select(.rank >= 0)] | length == 3 and all(.gpu.index == .rank and .gpu.how == "nvml" and (.gpu.uuid | startswith("GPU-fa4e000")))' <<<"$R"
check healthy_bus "rank 1's bus: $(jq -r '.ranks[] | select(.rank==1) | .gpu.bus' <<<"$R")" -- \
	test "$(jq -r '.ranks[] | select(.rank==1) | .gpu.bus' <<<"$R")" = 0000:2b:00.0
check healthy_footer "footer: $("$NT" cat "$D" | tail -1 | jq -c .gpus)" -- \
	test "$("$NT" cat "$D" | tail -1 | jq -r .gpus)" = "NVML 580.95.05, 3 GPUs"
check healthy_helper_cpu "footer totals: $("$NT" cat "$D" | tail -1 | jq -c .totals)" -- \
	jqe '.totals.nvml_helper_cpu_s | type == "number" and . >= 0 and . < 30' <<<"$("$NT" cat "$D" | tail -1)"
check healthy_said "not said once: $(grep -c 'GPUs:' "$TMP/healthy.out")" -- \
	test "$(grep -c 'nccltrace: GPUs: NVML 580.95.05, 3 GPUs' "$TMP/healthy.out")" = 1

# stall NAME [nccltrace env...]: rank 1 stalls 8 s in its collective; at the fault marker + 1 s
# the function given as $XID runs (it raises the Xid); echo the time it ran
stall_xid() {
	local name=$1 D=$TMP/$1.jsonl OUT=$TMP/$1.out pid
	shift
	env "$@" "$NT" run -t 3 --dump "$D" -- ${JOBPRE:-} "$NJ" --ranks 3 --fault in-collective --fault-rank 1 \
		--fault-for 8 --timeout 40 >"$OUT" 2>&1 &
	pid=$!
	wait_for 20 grep -q 'nccljob: FAULT' "$OUT"
	sleep 1
	date +%s%N >"$TMP/$name.xid_ns"
	$XID
	wait $pid
	own_pkill "$NJ"
}

# xid_latency NAME: NAME's gpu_error opened within 1.5 s of the Xid, and not before it (bounded
# on both sides, as lib.sh's check_latency: a gpu_error that opened before the Xid was raised is
# not this Xid's)
xid_latency() {
	local t0 t1
	t0=$(cat "$TMP/$1.xid_ns" 2>/dev/null)
	t1=$(opened_ns "$TMP/$1.jsonl" gpu_error)
	check "$1_latency" "opened $(((${t1:-0} - ${t0:-0}) / 1000000)) ms after the Xid (want 0..1500; Xid at ${t0:-never}, opened at ${t1:-never})" -- \
		test -n "$t0" -a -n "$t1" -a $((${t1:-0} - ${t0:-0})) -ge 0 -a $((${t1:-0} - ${t0:-0})) -le 1500000000
}

# --- an Xid on rank 1's GPU from NVML's event: gpu_error names rank 1 at once ---
gpus ""
XID="eval echo 'xid 1 79' >>$STATE"
stall_xid nvml_xid NCCLTRACE_NVML="$FAKENVML"
D=$TMP/nvml_xid.jsonl
f=$(findings "$D")
check nvml_xid_kind "findings: $(kind_ranks "$f")" -- test "$(jq -r '.[0].kind' <<<"$f")" = gpu_error
check nvml_xid_rank "named $(culprit "$f"), the job says pid $(marker_pid "$TMP/nvml_xid.out")" -- \
	test "$(culprit "$f")" = "rank 1 pid $(marker_pid "$TMP/nvml_xid.out")"
check nvml_xid_only "other culprits: $(kind_ranks "$f")" -- \
	jqe 'map(select(.rank != 1)) | length == 0' <<<"$f"
xid_latency nvml_xid
ev_is nvml_xid_evidence "Xid 79 on 0000:2b:00.0, from NVML.s Xid event"
ev_is nvml_xid_gpu "GPU: rank 1 .* is on GPU 1 \\(GPU-fa4e0001-.*, 0000:2b:00.0\\), by NVML.s processes: util 40 %"
check nvml_xid_fix "hypotheses: $(jq -c '.[0].hypotheses' <<<"$f")" -- \
	jqe '.[0].hypotheses[0] | test("^Xid 79, GPU has fallen off the bus: drain the node: reset the GPU")' <<<"$f"
check nvml_xid_summary "summary: $(jq -r '.[0].summary' <<<"$f")" -- \
	jqe '.[0].summary | test("GPU 1 \\(GPU-fa4e0001-.*\\) raised Xid 79 \\(GPU has fallen off the bus\\)")' <<<"$f"

# --- no NVML: the kernel's Xid line, its GPU from NCCL's log; a user's line and junk ignored ---
K=$TMP/kmsg
: >"$K"
kmsg_xid() {
	{
		echo "3,900,100,-;NVRM: Xid (PCI:0000:2b:00): 79, pid=$(marker_pid "$TMP/kmsg_xid.out"), name=nccljob, GPU has fallen off the bus."
		# after it, in the same read: taken, any of these would be the GPU's latest Xid
		echo "12,901,101,-;NVRM: Xid (PCI:0000:2b:00): 43, pid=1, FAKEUSER written by a user"
		echo "3,902,102,-;NVRM: Xid (PCI:0000:2b:00"
		printf '3,903,103,-;NVRM: Xid (PCI:$(id)): 31, x\n'
		echo "6,904,104,-;NVRM: loading NVIDIA UNIX Open Kernel Module"
	} >>"$K"
}
XID=kmsg_xid
stall_xid kmsg_xid NCCLTRACE_NVML="$TMP/none.so" NCCLTRACE_KMSG="$K"
D=$TMP/kmsg_xid.jsonl
f=$(findings "$D")
check kmsg_xid_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "gpu_error 1"
ev_is kmsg_xid_line "Xid 79 on 0000:2b:00.0, from the kernel.s log: NVRM: Xid \\(PCI:0000:2b:00\\): 79, pid=[0-9]+, name=nccljob"
check kmsg_xid_hostile "a user's line or junk taken: $(jq -c '.[0] | .summary, .evidence' <<<"$f")" -- \
	jqe '(.[0].summary + (.[0].evidence | join(" "))) | test("FAKEUSER|Xid 43|Xid 31|\\$\\(id\\)") | not' <<<"$f"
check kmsg_xid_how "rank 1's GPU: $(jq -c '.[0].evidence | map(select(startswith("GPU:")))' <<<"$f")" -- \
	jqe '.[0].evidence | map(select(test("^GPU: rank 1 .* is on GPU 1 \\(0000:2b:00.0\\), by NCCL.s log"))) | length == 1' <<<"$f"
xid_latency kmsg_xid
check kmsg_footer "footer: $("$NT" cat "$D" | tail -1 | jq -c .gpus)" -- \
	jqe '.gpus | test("^no NVML: .*none.so")' <<<"$("$NT" cat "$D" | tail -1)"

# --- a straggler on a throttled GPU: the throttling is the first GPU hypothesis ---
gpus "throttle=0x40 sm=1100"
D=$TMP/throttle.jsonl
NCCLTRACE_NVML=$FAKENVML "$NT" run -t 3 --dump "$D" -- "$NJ" --ranks 3 --iters 24 --fault slow \
	--fault-rank 1 --fault-for 0.3 --timeout 30 >"$TMP/throttle.out" 2>&1
f=$(findings "$D")
check throttle_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "straggler 1"
hyp_is throttle_hyp "GPU 1 \\(GPU-fa4e0001-.*\\) is throttled \\(HW thermal slowdown\\): SM clock 1100 of 1980 MHz"
own_pkill "$NJ"

# --- a stall on a GPU whose link trained narrower: said, with the command that shows it; its
# NVLinks' error counters rise by 480 during the stall: the dump has the rise ---
gpus "pcie=4x8 nvlink=18/18 nvlerr=20"
XID="eval gpus 'pcie=4x8 nvlink=18/18 nvlerr=500'"
stall_xid link NCCLTRACE_NVML="$FAKENVML"
f=$(findings "$TMP/link.jsonl")
check link_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "stall 1"
hyp_is link_hyp "PCIe link of GPU 1 .* runs at Gen4 x8 of its Gen5 x16.*lspci -vvs 0000:2b:00.0"
check link_healthy_gpu "a healthy rank's GPU blamed: $(jq -c '.[0].hypotheses' <<<"$f")" -- \
	jqe '.[0].hypotheses | map(select(test("GPU [02] "))) | length == 0' <<<"$f"
got=$("$NT" cat "$TMP/link.jsonl" | jq -s '[.[] | select(.type=="snapshot") | .procs[] | select(.rank==1) | .gpu.nvlink_err_new // 0] | max')
check link_nvlink_errors "rank 1's GPU's NVLink errors in the dump: $got, want 480 (500 - the first sample's 20)" -- \
	test "$got" = 480

# --- every rank has a stray context on GPU 0 too (a CUDA call before set_device): rank 1 is
# still on GPU 1, NCCL's; an Xid on GPU 1 names it ---
gpus ""
XID="eval echo 'xid 1 79' >>$STATE"
JOBPRE="env FAKENVML_EXTRA=0" stall_xid stray NCCLTRACE_NVML="$FAKENVML"
f=$(findings "$TMP/stray.jsonl")
check stray_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "gpu_error 1"
ev_is stray_also "^GPU: NVML lists rank 1 .* on GPU 0 too: a second CUDA context"
R=$("$NT" report --json "$TMP/stray.jsonl")
check stray_ranks "ranks: $(jq -c '[.ranks[] | {rank, gpu: .gpu.index}]' <<<"$R")" -- \
	jqe '[.ranks[] | select(.rank >= 0)] | length == 3 and all(.gpu.index == .rank)' <<<"$R"

# --- NVML sees no process of the job (another pid namespace) and NCCL logs no busId
# (NCCL_DEBUG=WARN): each rank's GPU from CUDA_VISIBLE_DEVICES, entry LOCAL_RANK, a UUID's
# prefix or an index ---
printf 'procs none\n' >>"$STATE"
D=$TMP/envmap.jsonl
NCCLTRACE_NVML=$FAKENVML "$NT" run -t 3 --dump "$D" -- env NCCL_DEBUG=WARN \
	CUDA_VISIBLE_DEVICES=GPU-fa4e0002,0,1 "$NJ" --ranks 3 --iters 30 >"$TMP/envmap.out" 2>&1
R=$("$NT" report --json "$D")
check envmap_ranks "ranks: $(jq -c '[.ranks[] | {rank, gpu: .gpu.index, how: .gpu.how}]' <<<"$R")" -- \
	jqe '[.ranks[] | select(.rank >= 0) | [.rank, .gpu.index, .gpu.how]] | sort == [[0, 2, "env"], [1, 0, "env"], [2, 1, "env"]]' <<<"$R"
gpus ""

# --- a straggler whose GPU every rank shares (no set_device: NCCL and NVML put all on GPU 0) ---
D=$TMP/shared.jsonl
NCCLTRACE_NVML=$FAKENVML "$NT" run -t 3 --dump "$D" -- env FAKENVML_GPUS=0 FAKENCCL_CUDA_DEV=0 \
	"$NJ" --ranks 3 --iters 24 --fault slow --fault-rank 1 --fault-for 0.3 --timeout 30 \
	>"$TMP/shared.out" 2>&1
f=$(findings "$D")
check shared_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "straggler 1"
hyp_is shared_hyp "rank 1 shares GPU 0 \\(GPU-fa4e0000-.*\\) with ranks 0, 2: they take turns on it.*set_device\\(LOCAL_RANK\\)"
ev_is shared_env "^GPU: rank 1 .* runs on GPU 0, but its CUDA_VISIBLE_DEVICES and LOCAL_RANK point at GPU 1"
own_pkill "$NJ"

# --- the job pinned to CPU 1, NUMA node 1 of a sysfs of its own, its GPUs on node 0 ---
if [ "$(nproc)" -ge 2 ]; then
	N=$TMP/numasys
	for n in 0 1; do
		mkdir -p "$N/devices/system/node/node$n"
		echo "$n" >"$N/devices/system/node/node$n/cpulist"
	done
	for b in 1b 2b 3b; do
		G=$N/devices/pci0000:$b/0000:$b:00.0
		mkdir -p "$G" "$N/bus/pci/devices"
		echo 0x10de >"$G/vendor"
		echo 0x030200 >"$G/class"
		echo 0 >"$G/numa_node"
		ln -sfn "../../../devices/pci0000:$b/0000:$b:00.0" "$N/bus/pci/devices/0000:$b:00.0"
	done
	mkdir -p "$N/class/net/lo/device" # NCCL's socket NIC (NCCL_SOCKET_IFNAME=lo) on node 0
	echo 0 >"$N/class/net/lo/device/numa_node"
	gpus ""
	XID=true
	JOBPRE="taskset -c 1" stall_xid numa NCCLTRACE_NVML="$FAKENVML" NCCLTRACE_SYSFS="$N"
	f=$(findings "$TMP/numa.jsonl" | jq -c 'map(select(.kind != "config"))')
	check numa_kind "findings: $(kind_ranks "$f")" -- test "$(kind_ranks "$f")" = "stall 1"
	hyp_is numa_hyp "rank 1 may run only on the CPUs of NUMA node 1, but GPU 1 .* is on node 0.*numactl --cpunodebind=0"
	hyp_is numa_nic "is on node 0, and so is its NIC lo \\(NCCL.s network\\)"
	got=$("$NT" cat "$TMP/numa.jsonl" | jq -sc '[.[] | select(.type=="state") | .state.procs[] | select(.rank==1 and .nic != null) | [.nic, .nic_numa, .cpu_numa]] | unique')
	check numa_dump "rank 1's NIC, its node and the rank's in the dump: $got" -- test "$got" = '[["lo",0,1]]'
else
	skip_n 4 numa "one CPU here: a rank cannot be pinned away from another node's"
fi

# --- doctor: the host's GPUs through NVML; without NVML, said and no failure ---
gpus "throttle=0x40 sm=1100 nvlink=16/18"
out=$(NCCLTRACE_NVML=$FAKENVML "$NT" doctor 2>&1)
check doctor_gpus "doctor: $(grep GPU <<<"$out")" -- \
	test "$(grep -c '^info *GPU [0-2] 0000:[123]b:00.0: NVIDIA H100 80GB HBM3, GPU-fa4e000[0-2]-' <<<"$out")" = 3
check doctor_throttle "doctor: $(grep GPU <<<"$out")" -- \
	grep -q '^warning GPU 1 throttle 0x40: GPU 1 is slowed down by its hardware now.*1100 of 1980 MHz' <<<"$out"
check doctor_nvlink "doctor: $(grep GPU <<<"$out")" -- \
	grep -q '^warning GPU 1 NVLink 16/18: 2 of the 18 NVLinks of GPU 1 are down' <<<"$out"
# an NVIDIA GPU in the PCI tree (a sysfs of its own), NVML not there
G=$TMP/sys/devices/pci0000:1b/0000:1b:00.0
mkdir -p "$G" "$TMP/sys/bus/pci/devices"
echo 0x10de >"$G/vendor"
echo 0x030200 >"$G/class"
ln -sfn ../../../devices/pci0000:1b/0000:1b:00.0 "$TMP/sys/bus/pci/devices/0000:1b:00.0"
out=$(NCCLTRACE_SYSFS=$TMP/sys NCCLTRACE_NVML=$TMP/none.so "$NT" doctor 2>&1)
rc=$?
check doctor_no_nvml "exit $rc: $(grep GPU <<<"$out")" -- \
	grep -q '^info *GPU NVML absent: no NVML: .*none.so' <<<"$out"
check doctor_no_nvml_rc "exit $rc" -- test $rc = 0
end_checks
