#!/bin/sh
# tests/zero_monotone.sh -- the per-rank peak of every example at 2 and 8
# ranks, at 1 rank with the optimizer offloaded and at 2 ranks with 2
# micro-batches accumulated, is non-increasing from ZeRO-0 to ZeRO-3 (docs/distributed.md,
# "Lifetimes") at -O0, at -O1 (sqrt(n) checkpointing) and at -O2: each
# stage only shards state or shortens a lifetime, so it never holds more
# than the stage below, and the checkpointing plans re-gather a ZeRO-3
# unit's weights for a recompute rather than keep them into the backward.
# Under every stage, -O2 is also at or below -O0 and per-def
# checkpointing (issue 27 item 3). One -O2 report gives every figure: its
# peak and the -O0, sqrt(n) and per-def lines (a line a graph has no plan
# for is left out, and so is its check). -O2's ZeRO-3 plan is never above
# the ZeRO-2 plan replayed with its gathers, one of its candidates (up to
# the version before, densenet's at 2 ranks ended 614,496 bytes above its
# ZeRO-2 plan, so -O2 was compared at 8 ranks only). No rise is accepted:
# where the weights form one gathered unit, --shard-weights auto keeps
# them whole unless sharding peaks lower (up to the version before, tiny
# and mlp rose from ZeRO-2 to 3 there, their full weights live with their
# shard, and the test let them).
# No plan is below the sharded lower bound (passes/plan/baseline.c: from
# ZeRO-2 it counts, across each step, the smaller of the gradients made
# before it and their shards, whichever order the bucket runs in).
# At 1 rank ZeRO-3 gathers nothing unless the weights are offloaded
# (dist_gathers in ir/net/net.h), so it never costs more than ZeRO-2 there.
# With --accumulate 2, --grad-sync auto keeps ZeRO-2 at or below ZeRO-1
# (up to the version before, each micro-batch reduced into persistent
# shards, and mlp, mobilenetv2, densenet and tiny rose from ZeRO-1 to 2).
# Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
out="$BUILDDIR/tests/out/zero_monotone"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
n=0

# fig FILE LEVEL: the bytes of one figure of a text report, empty if absent
fig() {
	case $2 in
	O2) sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p' "$1" ;;
	O0) sed -n 's/^  before remat (-O0): .*(\([0-9]*\) bytes).*/\1/p' "$1" ;;
	O1) sed -n 's/^  sqrt(n) checkpointing (-O1): .*(\([0-9]*\) bytes).*/\1/p' "$1" ;;
	def) sed -n 's/^  per-def checkpointing: .*(\([0-9]*\) bytes).*/\1/p' "$1" ;;
	lb) sed -n 's/^  lower bound: .*(\([0-9]*\) bytes).*/\1/p' "$1" ;;
	esac
}

nets=$(ls examples/*.net)
set -- $nets
echo "1..$(($# * 4))"
for net in $nets; do
	for cfg in 2 8 1o 2a; do
		ranks=${cfg%[oa]} off=""
		name="$(basename "$net" .net) at $ranks ranks"
		case $cfg in
		*o) off="--offload optimizer" name="$(basename "$net" .net) at 1 rank, optimizer offloaded" ;;
		*a) off="--accumulate 2" name="$name, 2 micro-batches accumulated" ;;
		esac
		bad=""
		prev0="" prev1="" prev2=""
		for z in 0 1 2 3; do
			f="$out/$(basename "$net" .net)-$cfg-$z"
			# $off is empty or two words
			# shellcheck disable=SC2086
			if ! "$REMAT" -O2 --ranks "$ranks" --zero "$z" $off "$net" >"$f" 2>"$f.err"; then
				bad="$bad; ZeRO-$z exits non-zero"
				prev0="" prev1="" prev2=""
				continue
			fi
			p2=$(fig "$f" O2)
			if [ -z "$p2" ]; then
				bad="$bad; ZeRO-$z: no peak"
				prev0="" prev1="" prev2=""
				continue
			fi
			# without a plan to make, -O2's report is the -O0 one
			p0=$(fig "$f" O0)
			[ -n "$p0" ] || p0=$p2
			p1=$(fig "$f" O1)
			pd=$(fig "$f" def)
			lb=$(fig "$f" lb)
			for p in $p0 $p1 $p2 $pd; do
				[ -z "$lb" ] || [ "$p" -ge "$lb" ] ||
					bad="$bad; ZeRO-$z a plan at $p < the lower bound $lb"
			done
			for lv in 0 1 2; do
				eval "p=\$p$lv prev=\$prev$lv"
				[ -n "$p" ] && [ -n "$prev" ] && [ "$p" -gt "$prev" ] || continue
				# --shard-weights auto decides at the level asked
				# for: the -O0 and -O1 lines of an -O2 report that
				# sharded the weights are the sharded step's, which
				# a run at that level may keep whole
				if [ "$lv" -lt 2 ] && [ "$z" -eq 3 ] &&
				   grep -q "^  gathered units     1," "$f"; then
					# shellcheck disable=SC2086
					"$REMAT" -O$lv --ranks "$ranks" --zero 3 $off "$net" >"$f.O$lv" 2>&1
					p=$(fig "$f.O$lv" O2)
					eval "p$lv=\$p"
					echo "# $name: the -O2 report's -O$lv line, sharded, is above ZeRO-2's; -O$lv itself: ${p:-none}"
					[ -n "$p" ] && [ "$p" -le "$prev" ] && continue
				fi
				bad="$bad; -O$lv ZeRO-$z ${p:-(no peak)} > ZeRO-$((z - 1)) $prev"
			done
			[ "$p2" -le "$p0" ] || bad="$bad; ZeRO-$z -O2 $p2 > -O0 $p0"
			[ -z "$pd" ] || [ "$p2" -le "$pd" ] ||
				bad="$bad; ZeRO-$z -O2 $p2 > per-def $pd"
			prev0=$p0 prev1=$p1 prev2=$p2
		done
		n=$((n + 1))
		if [ -z "$bad" ]; then
			echo "ok $n - $name: per-rank peaks non-increasing from ZeRO-0 to 3 at -O0, -O1, -O2; -O2 <= -O0, per-def; none below the bound"
		else
			echo "not ok $n - $name${bad}"
		fi
	done
done
