#!/bin/sh
# tests/parallel.sh -- data parallelism with pipeline stages and prefetch
# (docs/distributed.md), end to end: the usage errors of the combinations,
# per-rank model states of a stage against DeepSpeed's formulas, what
# --prefetch adds, and the analysis time under --ranks 8 --zero 3. The
# per-stage formulas for every stage are in tests/unit/test_distribute.c.
# Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
out="$BUILDDIR/tests/out/parallel"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); echo "not ok $n - $1"; }
try='Try '\''remat --help'\'' for more information.'

usage() {   # usage STDERR ARGS...: exit status 2 and exactly this stderr
	want=$1
	shift
	"$REMAT" "$@" examples/gpt2.net >/dev/null 2>"$out/err"
	rc=$?
	printf '%s\n%s\n' "$want" "$try" >"$out/want"
	if [ $rc -eq 2 ] && diff -u "$out/want" "$out/err" >/dev/null; then
		ok "usage: $*"
	else
		fail "usage: $*: exit $rc"
		sed 's/^/# /' "$out/err"
	fi
}

# num NAME FILE: the first integer value of "NAME": in a JSON report
num() {
	grep -o "\"$1\": [0-9]*" "$2" | head -1 | sed 's/.*: //'
}

echo "1..15"
usage "remat: --stages: the pipeline's --micro-batches replace --accumulate (give the micro-batch count with --micro-batches M)" \
	--stages 2 --ranks 2 --accumulate 2
usage "remat: --stages: the pipeline's --micro-batches replace --accumulate (give the micro-batch count with --micro-batches M)" \
	--stages 2 --accumulate 1
usage "remat: --prefetch needs --zero 3 (only sharded weights are gathered)" \
	--ranks 8 --zero 2 --prefetch 1
# the pipeline's work caps (docs/limits.md): refused before any stage is built
usage "remat: --micro-batches: 65536 micro-batches x 566 operations in examples/gpt2.net's training step pass the cap of 4194304 (see docs/limits.md)" \
	--stages 2 --micro-batches 65536
sh tests/bench/gen_chain.sh 30000 >"$out/chain30k.net"
"$REMAT" --stages 70 "$out/chain30k.net" >/dev/null 2>"$out/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "^remat: --stages: 70 stages x 60002 operations in .*chain30k.net's training step pass the cap of 4194304" "$out/err"; then
	ok "--stages 70 on a 30k-op chain: usage error"
else
	fail "--stages 70 on a 30k-op chain: exit $rc"
	sed 's/^/# /' "$out/err"
fi
usage "remat: --prefetch needs --zero 3 (only sharded weights are gathered)" --prefetch 0
usage "remat: --prefetch: expected an integer from 0 to 1048576, got 'x'" \
	--ranks 8 --zero 3 --prefetch x

# gpt2's params all have sizes divisible by 8: no shard is padded, so the
# reported stage's model states per rank are exactly DeepSpeed's terms
# (estimate_zero2/3_model_states_mem_needs, mixed-precision Adam): ZeRO 3
# 2P/N weights + 4P/N master + 4P/N gradient shard + 8P/N Adam state, for
# the P params of that stage; ZeRO 2 keeps the 2P weights whole.
for N in 2 4 8; do
	for Z in 2 3; do
		f="$out/s2-n$N-z$Z.json"
		"$REMAT" --stages 2 --ranks $N --zero $Z --json examples/gpt2.net >"$f"
		P=$(num count "$f")
		w=$((Z == 3 ? 2 * P / N : 2 * P))
		got="$(num bytes "$f") $(num master_bytes "$f") $(num grad_bytes "$f") $(num optimizer_bytes "$f")"
		want="$w $((4 * P / N)) $((4 * P / N)) $((8 * P / N))"
		if [ -n "$P" ] && [ "$got" = "$want" ] && grep -q '"ranks_per_stage": '"$N" "$f"; then
			ok "--stages 2 --ranks $N --zero $Z: model states per rank of the stage"
		else
			fail "--stages 2 --ranks $N --zero $Z: got $got, want $want (P=$P)"
		fi
	done
done

# gpt2 peaks at -O0 at the loss's backward, the head unit's first step;
# --prefetch 1 adds the next unit of the backward there, the root, whose
# tied embedding the head's backward reads next (wte and wpe: 51281 x 768
# bf16 params = 78767616 bytes); --prefetch 2 adds the last block's
# gathered weights too (7087872 bf16 params = 14175744 bytes).
for k in 0 1 2; do
	"$REMAT" --ranks 8 --zero 3 --prefetch $k --json examples/gpt2.net >"$out/pf$k.json"
done
p0=$(num peak_bytes "$out/pf0.json")
p1=$(num peak_bytes "$out/pf1.json")
p2=$(num peak_bytes "$out/pf2.json")
if [ $((p1 - p0)) -eq 78767616 ] && [ $((p2 - p1)) -eq 14175744 ]; then
	ok "--prefetch 1, 2: the root's weights, then one block's"
else
	fail "--prefetch: peaks $p0 $p1 $p2"
fi

# Analysis time: under 1 s for every example with --ranks 8 --zero 3, as
# measured by remat itself (--stats prints the wall time on stderr).
slow=
for f in examples/*.net; do
	"$REMAT" --stats --ranks 8 --zero 3 "$f" >/dev/null 2>"$out/stats" || slow="$slow $f(failed)"
	s=$(sed -n 's/^stats: \([0-9.]*\) s wall.*/\1/p' "$out/stats")
	[ -n "$s" ] && awk "BEGIN { exit !($s < 1) }" || slow="$slow $f($s s)"
done
if [ -z "$slow" ]; then
	ok "--ranks 8 --zero 3: every example under 1 s"
else
	fail "--ranks 8 --zero 3: slow:$slow"
fi
