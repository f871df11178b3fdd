#!/bin/bash
# SPDX-License-Identifier: MIT
# check-glibc.sh LIB...: the libraries nccltrace puts into the job must load on the GPU nodes'
# older distributions: no symbol version newer than GLIBC_2.17 (CentOS 7's; Ubuntu 20.04 has
# 2.31). Fails with the symbols that need more.
set -u
max=${GLIBC_MAX:-2.17}
bad=0
for lib in "$@"; do
	while read -r ver sym; do
		if [ "$(printf '%s\n%s\n' "$ver" "$max" | sort -V | tail -1)" != "$max" ]; then
			echo "check-glibc: $lib needs $sym@GLIBC_$ver (newer than $max)" >&2
			bad=1
		fi
	done < <(objdump -T "$lib" | sed -n 's/.*GLIBC_\([0-9.]*\)[) ]*\([^ ]*\)$/\1 \2/p')
done
exit $bad
