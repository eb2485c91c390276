#!/bin/sh
# tests/zero_monotone.sh -- the per-rank peak of every example at 2 and 8
# ranks is non-increasing from ZeRO-0 to ZeRO-3 (docs/distributed.md,
# "Lifetimes"): each stage only shards state or shortens a lifetime, so it
# never holds more than the stage below. One rise is accepted, only where
# its cause is in the report: ZeRO-2 -> 3 when the model has one gathered
# unit, whose full weights are live with their shard (FSDP holds a single
# flat parameter and its all-gathered copy the same way).
# Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
out="$BUILDDIR/tests/out/zero_monotone"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
n=0

# peak FILE: the peak's bytes in a text report
peak() {
	sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p' "$1"
}

nets=$(ls examples/*.net)
set -- $nets
echo "1..$(($# * 2))"
for net in $nets; do
	for ranks in 2 8; do
		name="$(basename "$net" .net) at $ranks ranks"
		bad=""
		prev=""
		for z in 0 1 2 3; do
			f="$out/$(basename "$net" .net)-$ranks-$z"
			if ! "$REMAT" --ranks "$ranks" --zero "$z" "$net" >"$f" 2>"$f.err"; then
				bad="$bad; ZeRO-$z exits non-zero"
				prev=""
				continue
			fi
			p=$(peak "$f")
			if [ -z "$p" ]; then
				bad="$bad; ZeRO-$z: no peak"
			elif [ -n "$prev" ] && [ "$p" -gt "$prev" ]; then
				if [ "$z" -eq 3 ] && grep -q "^  gathered units     1," "$f"; then
					echo "# $name: ZeRO-3 $p > ZeRO-2 $prev with one gathered unit"
				else
					bad="$bad; ZeRO-$z $p > ZeRO-$((z - 1)) $prev"
				fi
			fi
			prev=$p
		done
		n=$((n + 1))
		if [ -z "$bad" ]; then
			echo "ok $n - $name: per-rank peaks non-increasing from ZeRO-0 to 3"
		else
			echo "not ok $n - $name${bad}"
		fi
	done
done
