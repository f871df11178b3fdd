#!/bin/bash
# SPDX-License-Identifier: MIT
# nccltrace doctor on real environments: this shell's, a command's (its env prefix, torchrun's
# --master-port), the ranks of a real trace dump, a port really held, the real interfaces and
# the real NCCL library's names; what sudo's env_reset drops, read from a real ancestor; and a
# host's PCI tree (ACS, links, the IOMMU) laid out as the kernel's.
# checks: 47
. "$(dirname "$0")/lib.sh"

NJ=$ROOT/build/nccljob
clean_env=(env -i "PATH=$PATH" "HOME=/root")

# --- a clean environment: exit 0 ---
out=$("${clean_env[@]}" "$NT" doctor 2>&1)
rc=$?
check clean_exit "exit $rc: $out" -- test $rc -eq 0
check clean_says "$out" -- grep -q "^no problems in this shell" <<<"$out"

# --- typos, folklore, PyTorch's names, bad values, a missing interface: one line each ---
out=$("${clean_env[@]}" NCCL_SOCKET_IFNAMES=lo NCCL_SOCKET_TIMEOUT=5 NCCL_IB_TIMEOUT=abc \
	NCCL_ASYNC_ERROR_HANDLING=1 NCCL_SOCKET_IFNAME=nosuchif "$NT" doctor 2>&1)
rc=$?
check problems_exit "exit $rc" -- test $rc -eq 1
check typo_closest "$out" -- grep -qE '^error +NCCL_SOCKET_IFNAMES=lo: NCCL does not read NCCL_SOCKET_IFNAMES .* -> did you mean NCCL_SOCKET_IFNAME\?$' <<<"$out"
check myth_socket_timeout "$out" -- grep -qE '^warning +NCCL_SOCKET_TIMEOUT=5: NCCL has no socket or connect timeout' <<<"$out"
check pytorch_name "$out" -- grep -qE '^warning +NCCL_ASYNC_ERROR_HANDLING=1: .* -> use TORCH_NCCL_ASYNC_ERROR_HANDLING$' <<<"$out"
check bad_int "$out" -- grep -qE '^error +NCCL_IB_TIMEOUT=abc: .*not an integer' <<<"$out"
check no_interface "$out" -- grep -qE "^error +NCCL_SOCKET_IFNAME=nosuchif: no local interface starts with 'nosuchif'" <<<"$out"
check summary_line "$out" -- grep -qE '^5 problems \(3 errors\)' <<<"$out"
# the real interface is fine
out=$("${clean_env[@]}" NCCL_SOCKET_IFNAME=lo "$NT" doctor 2>&1)
check real_interface "exit $?: $out" -- test $? -eq 0

# names come from the real library when there is one
lib=
command -v nvcc >/dev/null &&
	lib=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")/lib/libnccl.so.2
if [ -n "$lib" ] && [ -r "$lib" ]; then
	out=$(env -i "PATH=$PATH" NCCL_IB_TIMOUT=3 "$NT" doctor --json)
	check names_from_library "$(jq -r .names_from <<<"$out")" -- \
		jqe '(.names_from | test("^NCCL 2\\.[0-9.]+ at .*libnccl.so.2$")) and .names_registry_api == false' <<<"$out"
	check json_problem "$out" -- \
		jqe '.errors == 1 and .problems[0].variable == "NCCL_IB_TIMOUT" and .problems[0].fix == "did you mean NCCL_IB_TIMEOUT?"' <<<"$out"
else
	skip_n 2 names_from_library "no CUDA toolkit's libnccl.so.2 next to nvcc here (${lib:-no nvcc on PATH})"
fi
# NCCL 2.30.4 on exports ncclParamGetAllParameterKeys, whose registry holds only the parameters
# moved into it (9 in 2.30.7): the names still come from the library's strings, and doctor says
# why. A library of its own: NCCL_* strings, the version string, the exported function
{
	for i in $(seq 1 60); do echo "const char *n$i = \"NCCL_FAKE_PARAM_$i\";"; done
	echo 'const char *nt = "NCCL_IB_TIMEOUT", *ver = "NCCL version 2.30.7+cuda13.0";'
	echo 'int ncclParamGetAllParameterKeys(const char ***t, int *n) { *t = 0; *n = 0; return 0; }'
} >"$TMP/lib230.c"
mkdir -p "$TMP/nccl230"
if cc -shared -fPIC -o "$TMP/nccl230/libnccl.so.2" "$TMP/lib230.c" 2>"$TMP/cc.err"; then
	out=$(env -i "PATH=/usr/bin:/bin" NCCL_IB_TIMOUT=3 "$NT" doctor --nccl-lib "$TMP/nccl230/libnccl.so.2" --json)
	check registry_api_json "$(jq -c '{names_from, names_registry_api, fix: .problems[0].fix}' <<<"$out")" -- \
		jqe '(.names_from | test("^NCCL 2.30.7 at .*nccl230/libnccl.so.2$")) and .names_registry_api == true and .problems[0].fix == "did you mean NCCL_IB_TIMEOUT?"' <<<"$out"
	out=$(env -i "PATH=/usr/bin:/bin" "$NT" doctor --nccl-lib "$TMP/nccl230/libnccl.so.2" 2>&1)
	check registry_api_said "$out" -- \
		grep -q "its ncclParamGetAllParameterKeys lists only the parameters moved into NCCL's new registry" <<<"$out"
else
	skip_n 2 registry_api "no C compiler to build a library: $(head -1 "$TMP/cc.err")"
fi
out=$(env -i "PATH=/usr/bin:/bin" NCCL_IB_TIMOUT=3 "$NT" doctor --nccl-lib /nonexistent --json)
check builtin_table "$(jq -r .names_from <<<"$out")" -- \
	jqe '(.names_from | test("built-in NCCL 2.28.9 table")) and .problems[0].fix == "did you mean NCCL_IB_TIMEOUT?"' <<<"$out"

# --- NCCL_IB_GID_INDEX against the HCA's GID table (a sysfs tree as the kernel lays it out:
# there is no HCA here) ---
mkhca() { # DEV LINK_LAYER: GIDs 0-3 (v1, v2 link-local; v1, v2 IPv4-mapped), 4 empty
	local d=$TMP/sys/class/infiniband/$1/ports/1
	mkdir -p "$d/gids" "$d/gid_attrs/types"
	echo "$2" >"$d/link_layer"
	for i in 0 1 2 3 4; do
		case $i in
		0 | 1) echo fe80:0000:0000:0000:0202:c9ff:fe00:0001 >"$d/gids/$i" ;;
		2 | 3) echo 0000:0000:0000:0000:0000:ffff:0a00:0001 >"$d/gids/$i" ;;
		4) echo 0000:0000:0000:0000:0000:0000:0000:0000 >"$d/gids/$i" ;;
		esac
		[ $i -lt 4 ] && { [ $((i % 2)) = 0 ] && echo "IB/RoCE v1" || echo "RoCE v2"; } >"$d/gid_attrs/types/$i"
	done
}
mkhca mlx5_0 Ethernet
mkhca mlx5_1 InfiniBand
gid() { "${clean_env[@]}" NCCLTRACE_SYSFS=$TMP/sys "$@" "$NT" doctor 2>&1; }
out=$(gid env NCCL_IB_GID_INDEX=4)
check gid_empty "$out" -- grep -qE '^error +NCCL_IB_GID_INDEX=4: mlx5_0 port 1 has no GID 4: .*IBV_WC_RETRY_EXC_ERR' <<<"$out"
out=$(gid env NCCL_IB_GID_INDEX=2)
check gid_v1 "$out" -- grep -qE '^warning +NCCL_IB_GID_INDEX=2: GID 2 of mlx5_0 is IB/RoCE v1, while NCCL_IB_ROCE_VERSION_NUM is 2 by default' <<<"$out"
# fine: doctor says so (a check that it says nothing about the GID would pass on no output)
out=$(gid env NCCL_IB_GID_INDEX=3)
check gid_v2_fine "$out" -- grep -q '^no problems in this shell' <<<"$out"
out=$(gid env NCCL_IB_GID_INDEX=2 NCCL_IB_ROCE_VERSION_NUM=1)
check gid_v1_wanted "$out" -- grep -q '^no problems in this shell' <<<"$out"
out=$(gid env NCCL_IB_GID_INDEX=4 NCCL_IB_HCA=mlx5_1:1)
check gid_ib_link "$out" -- grep -qE '^info +NCCL_IB_GID_INDEX=4: mlx5_1 is InfiniBand: NCCL addresses its QPs by LID' <<<"$out"
out=$("${clean_env[@]}" NCCLTRACE_SYSFS=$TMP/nosys NCCL_IB_GID_INDEX=4 "$NT" doctor 2>&1)
check gid_no_hca "$out" -- grep -q '^no problems in this shell' <<<"$out"

# --- the host's PCI tree, laid out as the kernel's (bus/pci/devices links into devices/, each
# bridge's config space with its ACS capability): a GPU and an RDMA NIC behind one switch under
# a root port, the GPU's switch port redirecting P2P, its link at x8 of x16, an IOMMU in
# translation; then the same fixed; then a GPU on another root port, ACS on above it ---
# pcidev ROOT TREEPATH VENDOR CLASS [WIDTH MAX ACSCTRL RDMA]
pcidev() {
	local sys=$1 path=$2 bdf=${2##*/} d=$1/devices/$2
	mkdir -p "$d" "$sys/bus/pci/devices"
	echo "$3" >"$d/vendor"
	echo "$4" >"$d/class"
	echo 0 >"$d/numa_node"
	[ -n "${5:-}" ] && echo "$5" >"$d/current_link_width" && echo "$6" >"$d/max_link_width"
	head -c 4096 /dev/zero >"$d/config"
	if [ -n "${7:-}" ]; then # the ACS extended capability at 0x100: ID 0x000d, control at +6
		printf "\x0d\x00\x01\x00\x00\x00\x$(printf %02x "$7")\x00" |
			dd of="$d/config" bs=1 seek=256 conv=notrunc status=none
	fi
	[ -n "${8:-}" ] && mkdir -p "$d/infiniband/$8"
	ln -sfn "../../../devices/$path" "$sys/bus/pci/devices/$bdf"
}
# pcitree SYS GPU_ACS WIDTH: the switch's tree; the GPU's port's ACS control and link width
pcitree() {
	local R=pci0000:40/0000:40:01.1 U=pci0000:40/0000:40:01.1/0000:41:00.0
	pcidev "$1" $R 0x8086 0x060400 16 16 12
	pcidev "$1" $U 0x10b5 0x060400 16 16
	pcidev "$1" $U/0000:42:08.0 0x10b5 0x060400 16 16 "$2"
	pcidev "$1" $U/0000:42:08.0/0000:43:00.0 0x10de 0x030200 "$3" 16
	pcidev "$1" $U/0000:42:10.0 0x10b5 0x060400 16 16 1
	pcidev "$1" $U/0000:42:10.0/0000:44:00.0 0x15b3 0x020700 16 16 "" mlx5_0
}
pcitree "$TMP/pci1" 12 8
mkdir -p "$TMP/pci1/class/iommu/dmar0" "$TMP/proc1" "$TMP/proc2"
echo "BOOT_IMAGE=/vmlinuz quiet intel_iommu=on" >"$TMP/proc1/cmdline"
pci() { "${clean_env[@]}" NCCLTRACE_SYSFS=$1 NCCLTRACE_PROCFS=$2 "$NT" doctor 2>&1; }
out=$(pci "$TMP/pci1" "$TMP/proc1")
rc=$?
check pci_acs "exit $rc: $out" -- bash -c 'test "$1" -eq 1 &&
	grep -qE "^warning ACS 0000:42:08.0 RR,CR: ACS redirect is on at the switch port 0000:42:08.0, between GPU 0000:43:00.0 and mlx5_0 \(0000:44:00.0\): .*NVIDIA/nccl issues .* -> disable ACS on it \(setpci -s 0000:42:08.0 ECAP_ACS\+0x6.w=0000" <<<"$2" &&
	! grep -qE "ACS 0000:4(0:01.1|2:10.0)" <<<"$2"' _ $rc "$out"
check pci_link "$out" -- grep -qE '^warning PCIe 0000:43:00.0 x8: the PCIe link of GPU 0000:43:00.0 runs at x8 of its x16' <<<"$out"
check pci_iommu "$out" -- grep -qE '^warning IOMMU translating: the IOMMU translates DMA .* -> boot with iommu=pt' <<<"$out"
check pci_seen "$out" -- grep -qE '^info +PCI 1 GPU, 1 RDMA: 1 NVIDIA GPU and 1 RDMA device in the PCI tree' <<<"$out"
# fixed: ACS off at the port, the link at x16, the IOMMU in passthrough
pcitree "$TMP/pci2" 0 16
mkdir -p "$TMP/pci2/class/iommu/dmar0"
echo "BOOT_IMAGE=/vmlinuz quiet intel_iommu=on iommu=pt" >"$TMP/proc2/cmdline"
out=$(pci "$TMP/pci2" "$TMP/proc2")
check pci_fixed "$out" -- grep -q '^no problems in this shell' <<<"$out"
# a GPU on its own root port, ACS on there: its P2P crosses the root complex anyway
pcidev "$TMP/pci3" pci0000:80/0000:80:01.0 0x8086 0x060400 16 16 12
pcidev "$TMP/pci3" pci0000:80/0000:80:01.0/0000:81:00.0 0x10de 0x030200 16 16
pcidev "$TMP/pci3" pci0000:c0/0000:c0:01.0 0x8086 0x060400 16 16 12
pcidev "$TMP/pci3" pci0000:c0/0000:c0:01.0/0000:c1:00.0 0x15b3 0x020700 16 16 "" mlx5_1
out=$(pci "$TMP/pci3" "$TMP/proc2")
check pci_root_ports "$out" -- bash -c '! grep -q "^warning ACS" <<<"$1" && grep -q "^no problems in this shell" <<<"$1"' _ "$out"

# --- a command's environment: its env prefix; torchrun's --master-port on a port in use ---
# the command inherits this shell's NCCL_P2P_DISABLE=yes, a value doctor reports ...
out=$("${clean_env[@]}" NCCL_P2P_DISABLE=yes "$NT" doctor -- env NCCL_SHM_DISABLE=0 true 2>&1)
check cmd_prefix_inherited "$out" -- grep -qE '^error +NCCL_P2P_DISABLE=yes: .*not 0 or 1' <<<"$out"
# ... unless its env prefix unsets it
out=$("${clean_env[@]}" NCCL_P2P_DISABLE=yes "$NT" doctor -- env -u NCCL_P2P_DISABLE NCCL_SHM_DISABLE=yes true 2>&1)
rc=$?
check cmd_prefix "exit $rc: $out" -- test $rc -eq 1
check cmd_prefix_value "$out" -- grep -qE '^error +NCCL_SHM_DISABLE=yes: .*not 0 or 1' <<<"$out"
check cmd_prefix_unset "$out" -- bash -c '! grep -q NCCL_P2P_DISABLE <<<"$1"' _ "$out"
port=$((20000 + RANDOM % 20000))
perl -MIO::Socket::INET -e '$s=IO::Socket::INET->new(LocalPort=>$ARGV[0],Listen=>1) or die; sleep 30' \
	"$port" &
holder=$!
for _ in $(seq 50); do grep -q ":$(printf %04X "$port") " /proc/net/tcp && break; sleep 0.1; done
out=$("${clean_env[@]}" "$NT" doctor -- torchrun --master-port "$port" --nproc_per_node 2 x.py 2>&1)
rc=$?
check port_in_use "exit $rc: $out" -- grep -qE "^error +MASTER_PORT=$port: MASTER_PORT $port is already in use" <<<"$out"
out=$("${clean_env[@]}" "$NT" doctor -- env MASTER_ADDR=127.0.0.1 "MASTER_PORT=$port" true 2>&1)
check port_in_use_env "$out" -- grep -q "MASTER_PORT $port is already in use" <<<"$out"
out=$("${clean_env[@]}" "$NT" doctor -- torchrun "--master_port=$port" x.py 2>&1)
check port_in_use_equals "$out" -- grep -qE "^error +MASTER_PORT=$port: MASTER_PORT $port is already in use" <<<"$out"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
out=$("${clean_env[@]}" "$NT" doctor -- torchrun "--master_port=$port" x.py 2>&1)
rc=$?
check port_free "exit $rc: $out" -- test $rc -eq 0 -a "${out%%;*}" = "no problems in the command's environment"

# --- sudo's env_reset: a variable of the invoking user's shell that did not come along ---
out=$(NCCL_SOCKET_IFNAME=lo MASTER_PORT=29555 bash -c \
	'env -u NCCL_SOCKET_IFNAME -u MASTER_PORT SUDO_UID=$(id -u) SUDO_USER=$(id -un) "$1" doctor; true' \
	_ "$NT" 2>&1)
check sudo_lost "$out" -- grep -qE '^warning +NCCL_SOCKET_IFNAME=lo: NCCL_SOCKET_IFNAME is set in your shell \(pid [0-9]+\) but not here: .* -> sudo -E' <<<"$out"
check sudo_lost_master "$out" -- grep -q "MASTER_PORT is set in your shell" <<<"$out"

# --- usage errors: 64 and one line ---
out=$("$NT" doctor --bogus 2>&1)
rc=$?
check usage_exit "exit $rc: $out" -- error_is 64 $rc "$out"
out=$("$NT" doctor "$TMP/missing.jsonl" 2>&1)
rc=$?
check missing_dump "exit $rc: $out" -- error_is 66 $rc "$out"
printf '{"nccltrace":1}\n{not json\n' >"$TMP/corrupt.jsonl"
out=$("$NT" doctor "$TMP/corrupt.jsonl" 2>&1)
rc=$?
check corrupt_dump "exit $rc: $out" -- error_is 66 $rc "$out"

# --- every rank of a real dump: a setting one rank has on its own ---
need_bpf dump_ranks || end_checks
D=$TMP/ranks.jsonl
NCCL_SOCKET_IFNAME=lo "$NT" run --dump "$D" -- "$NJ" --ranks 3 --iters 2 --import-delay 0.1 \
	>/dev/null 2>&1
out=$("$NT" doctor "$D" 2>&1)
rc=$?
check dump_clean "exit $rc: $out" -- test $rc -eq 0
check dump_ranks_counted "$out" -- grep -q "no problems in 3 ranks of 1 dump" <<<"$out"
# run checks the host before the launch too: the ACS port a config finding, in the dump and on
# stderr, with the host's evidence and no setting
PD=$TMP/pcirun.jsonl
out=$("${clean_env[@]}" NCCLTRACE_SYSFS=$TMP/pci1 NCCLTRACE_PROCFS=$TMP/proc1 "$NT" run --no-tui \
	--dump "$PD" -- true 2>&1)
f=$("$NT" report --json "$PD" | jq -c '[.findings[] | select(.kind == "config" and (.summary | startswith("ACS 0000:42:08.0 RR,CR: ACS redirect")))]')
# jqe: no findings at all (a report that failed, an empty $f) is no pass
fok=$(jqe 'length == 1 and (.[0].evidence[0] | startswith("this host'"'"'s PCI tree")) and
	(.[0].settings | length == 0)' <<<"$f" && echo yes || echo no)
check pci_run_config "stderr: $(grep CONFIG <<<"$out"); findings: $f (one, the host's evidence, no setting: $fok)" -- bash -c '
	grep -q "^nccltrace: CONFIG warning ACS 0000:42:08.0 RR,CR: ACS redirect is on" <<<"$1" &&
	[ "$2" = yes ]' _ "$out" "$fok"
# the same dump with rank 2's environment edited: differences and a duplicate rank show
jq -c 'if .type=="rank" and .rank==2 then .env.NCCL_SOCKET_IFNAME="eth7" | .env.NCCL_IB_TIMOUT="3" else . end' \
	"$D" >"$TMP/edited.jsonl"
out=$("$NT" doctor --json "$TMP/edited.jsonl")
rc=$?
check dump_problems_exit "exit $rc" -- test $rc -eq 1
check dump_difference "$out" -- jqe '.problems | map(select(.variable=="NCCL_SOCKET_IFNAME" and (.what | test("differs across ranks: .*rank 2 eth7")))) | length == 1' <<<"$out"
check dump_rank_typo "$out" -- jqe '.problems | map(select(.variable=="NCCL_IB_TIMOUT" and .rank==2)) | length == 1' <<<"$out"

# a rank started by hand: RANK and WORLD_SIZE without the rendezvous's address and port
out=$("${clean_env[@]}" RANK=1 WORLD_SIZE=2 MASTER_ADDR=10.0.0.1 "$NT" doctor --json -- python3 train.py)
check master_port_missing "$out" -- jqe '.problems | map(select(.what | test("RANK and WORLD_SIZE are set but MASTER_PORT is not"))) | length == 1' <<<"$out"
end_checks
