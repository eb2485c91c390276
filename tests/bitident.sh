#!/bin/sh
# tests/bitident.sh -- bit-identical results at every level (README,
# "Determinism"), TAP. The planner may reorder backward steps, but keeps the
# contributions to each gradient in the -O0 order (rm_acc_prev in
# passes/plan/), so that every gradient sums its terms alike. For every
# example at its tiny -D flags (tests/tiny_flags.sh), the programs of -O0,
# -O1 and -O2, and for 200 random training networks
# (tests/gen_random_net.sh, seeds 1-200: branches, skips, views, tied
# params, mostly f16), those of -O0 and -O2, are compiled in host mode and
# run (tracked mode); the loss, the directional gradient and every
# gradient checksum must be equal digit for digit. A last test checks that
# the random networks exercise what this is about: -O2 runs the backward
# steps of some of them in another order than -O0 (else every comparison
# would hold trivially). Outputs go to $BUILDDIR/tests/out/bitident,
# removed when every test passes.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
CC=${CC:-cc}
NRAND=200
out="$BUILDDIR/tests/out/bitident"
rm -rf "$out"
mkdir -p "$out" || exit 99
. "$SRCDIR/tests/tiny_flags.sh"

nets=$(cd "$SRCDIR/examples" && ls *.net)
nnets=$(echo "$nets" | wc -w)
echo "1..$((nnets + 2))"
i=0 failed=0
ok() { i=$((i + 1)); echo "ok $i - $*"; }
notok() { i=$((i + 1)); failed=1; echo "not ok $i - $*"; }

# build STEM CFLAGS REMAT-ARGS...: emits STEM.cu, compiles it and runs it,
# its results in STEM.sums and its backward steps in STEM.bwd; false (the
# reason in STEM.err) when a stage fails.
build() {
	stem=$1 cflags=$2
	shift 2
	"$REMAT" "$@" -o "$stem.cu" >/dev/null 2>"$stem.err" &&
	$CC -x c -std=c11 $cflags -DREMAT_HOST "$stem.cu" -o "$stem" -lm 2>>"$stem.err" &&
	"$stem" --tracked >"$stem.out" 2>>"$stem.err" || return 1
	grep -E '^(checksum|loss:|dirgrad:)' "$stem.out" >"$stem.sums"
	sed -n 's|^	/\* step [0-9]*: \(backward [^ ]*\).*|\1|p' "$stem.cu" >"$stem.bwd"
	# a program without a loss line or any gradient proves nothing
	grep -q '^loss:' "$stem.sums" && grep -q '^checksum' "$stem.sums"
}

# same NAME STEM-O0 STEM-OTHER...: whether every program's results equal
# the first one's; the first difference is shown.
same() {
	name=$1 ref=$2
	shift 2
	for o in "$@"; do
		if ! cmp -s "$ref.sums" "$o.sums"; then
			notok "$name: ${o##*-} differs from -O0"
			diff "$ref.sums" "$o.sums" | sed 's/^/# /' | head -6
			return 1
		fi
	done
	return 0
}

for net in $nets; do
	ex=${net%.net} bad=
	if ! flags=$(tiny_flags "$ex"); then
		notok "$ex: no tiny flags in tests/tiny_flags.sh"
		continue
	fi
	for o in 0 1 2; do
		# shellcheck disable=SC2086
		if ! build "$out/$ex-O$o" -O1 -O$o $flags "$SRCDIR/examples/$net"; then
			bad="-O$o"
			break
		fi
	done
	if [ -n "$bad" ]; then
		notok "$ex $bad: emit, compile or run failed"
		sed 's/^/# /' "$out/$ex$bad.err" | head -5
	elif same "$ex" "$out/$ex-O0" "$out/$ex-O1" "$out/$ex-O2"; then
		ok "$ex: -O0, -O1 and -O2 give the same loss, dirgrad and $(grep -c '^checksum' \
			"$out/$ex-O0.sums") gradient checksums"
	fi
done

# The random networks: one test for all of them, the first failures shown.
nbad=0 nre=0 s=1
while [ $s -le $NRAND ]; do
	st="$out/r$s"
	sh "$SRCDIR/tests/gen_random_net.sh" $s >"$st.net"
	if ! build "$st-O0" -O0 -O0 "$st.net" || ! build "$st-O2" -O0 -O2 "$st.net"; then
		nbad=$((nbad + 1))
		[ $nbad -le 3 ] && { echo "# seed $s: emit, compile or run failed"
			cat "$st-O0.err" "$st-O2.err" 2>/dev/null | grep -v warning | sed 's/^/# /' | head -5; }
	elif ! cmp -s "$st-O0.sums" "$st-O2.sums"; then
		nbad=$((nbad + 1))
		[ $nbad -le 3 ] && { echo "# seed $s: -O2 differs from -O0"
			diff "$st-O0.sums" "$st-O2.sums" | sed 's/^/# /' | head -6; }
	fi
	cmp -s "$st-O0.bwd" "$st-O2.bwd" || nre=$((nre + 1))
	s=$((s + 1))
done
if [ $nbad = 0 ]; then
	ok "$NRAND random networks: -O0 and -O2 give the same loss, dirgrad and gradient checksums"
else
	notok "$NRAND random networks: $nbad differ or fail"
fi
if [ $nre -gt 0 ]; then
	ok "-O2 reorders the backward steps of $nre of the $NRAND random networks"
else
	notok "-O2 reorders no random network's backward steps: the comparison tests nothing"
fi
[ $failed = 0 ] && rm -rf "$out"
exit 0
