#!/bin/sh
# tests/codegen/run.sh -- end to end: every example at tiny dims, emitted at
# -O0, -O1 and -O2, compiled in host mode, run in both memory modes; the
# measured peak must equal the prediction and the gradient checksums must
# not depend on the schedule. Skips (77) until remat supports -o.
: "${REMAT:?}" "${SRCDIR:?}"
CC=${CC:-cc}
"$REMAT" --help 2>&1 | grep -q -- ' -o' || exit 77
dir=$(mktemp -d) || exit 99
trap 'rm -rf "$dir"' EXIT
tiny="-DB=2 -DS=8 -DD=16 -DH=2 -DL=2 -DV=32 -DC=4 -DF=32"
n=0 fail=0
for net in "$SRCDIR"/examples/*.net; do
	name=$(basename "$net" .net)
	ref=
	for o in 0 1 2; do
		n=$((n + 1))
		out="$dir/$name-O$o"
		defs=$(for d in $tiny; do k=${d#-D}; k=${k%%=*}; grep -q "\b$k\b" "$net" && printf '%s ' "$d"; done)
		if ! "$REMAT" -O$o $defs "$net" -o "$out.cu" 2>"$out.err" ||
		   ! $CC -x c -std=c11 -O1 -Wall -DREMAT_HOST "$out.cu" -o "$out" -lm 2>>"$out.err" ||
		   ! "$out" --tracked >"$out.t" 2>>"$out.err" || ! "$out" --arena >"$out.a" 2>>"$out.err"; then
			echo "not ok $n - $name -O$o"; sed 's/^/# /' "$out.err" | head -20; fail=1; continue
		fi
		sums=$(grep -E '^(checksum|loss)' "$out.t")
		if [ -n "$ref" ] && [ "$sums" != "$ref" ]; then
			echo "not ok $n - $name -O$o: checksums differ from -O0"; fail=1; continue
		fi
		ref=$sums
		echo "ok $n - $name -O$o"
	done
done
echo "1..$n"
exit $fail
