#!/bin/bash
# SPDX-License-Identifier: MIT
# The rooms of user/ depend only on the rooms before them (docs/internals.md, "How it works"):
#   util -> trace -> model -> nccl -> diagnose -> present -> cmd
# A header of a later room included from an earlier one is a call back up: this fails on it.
# Private headers (*_priv.h, diagnose/rules.h) are for their own room only. user/plugin/ (the
# libraries nccltrace puts into the job) includes none of user/.
set -u
cd "$(dirname "$0")/.."
order=(util trace model nccl diagnose present cmd)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && echo "$i" && return; done; echo 99; }
bad=0
for f in user/*/*.[ch]; do
	room=$(basename "$(dirname "$f")")
	# the libraries put into the job stand alone: include/ only
	if [ "$room" = plugin ]; then
		if grep -q '^#include "[a-z]*/' "$f"; then
			echo "check-layers: $f (loaded into the job) includes a user/ header"
			bad=1
		fi
		continue
	fi
	r=$(rank "$room")
	while read -r inc; do
		iroom=${inc%%/*}
		ir=$(rank "$iroom")
		if [ "$ir" -gt "$r" ]; then
			echo "check-layers: $f ($room) includes $inc: $iroom comes after $room"
			bad=1
		fi
		case "$inc" in
		*_priv.h | diagnose/rules.h)
			if [ "$iroom" != "$room" ]; then
				echo "check-layers: $f includes $inc, private to $iroom/"
				bad=1
			fi
			;;
		esac
	done < <(sed -n 's/^#include "\([a-z]*\/[^"]*\)".*/\1/p' "$f")
done
[ $bad -eq 0 ] && echo "check-layers: user/ rooms depend only on earlier rooms"
exit $bad
