#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo: a 4-rank TCP ring (build/ringjob) under nccltrace; rank 1 stops making progress
# 4 s in and sleeps 8 s. nccltrace names it within the stall threshold (3 s) + 1 s, then the
# post-mortem report of the dump is printed.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: loading BPF programs needs root: run as root or with sudo" >&2
	exit 77
fi
DUMP=build/demo-$(date +%Y%m%d-%H%M%S).jsonl
set -x
build/nccltrace run --stall-threshold 3 --dump "$DUMP" -- \
	build/ringjob --ranks 4 --duration 16 --stall-rank 1 --stall-after 4 --stall-for 8 --stall-mode sleep
build/nccltrace report "$DUMP"
