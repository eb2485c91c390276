#!/bin/sh
# tests/bench/bench_analysis.sh -- `make bench-analysis`: frontend and -O0
# analysis speed. Prints wall time and peak RSS for generated graphs of 10k,
# 100k and 1M ops (parse + instantiate + shape inference via --dump-ir, and
# the whole analysis to JSON), for 300k ops written one statement each
# (gen_ops.sh), and for the real-size examples.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
tmp=${TMPDIR:-/tmp}/remat-bench.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
printf '%-34s %10s %12s\n' "case" "seconds" "peak RSS KiB"
row() {
	label=$1; shift
	s=$("$REMAT" --stats "$@" 2>&1 >/dev/null | sed -n 's/^stats: \([0-9.]*\) s wall, \([0-9]*\) KiB.*/\1 \2/p')
	set -- $s
	printf '%-34s %10s %12s\n' "$label" "${1:-fail}" "${2:-}"
}
for n in 10000 100000 1000000; do
	sh "$SRCDIR/tests/bench/gen_chain.sh" $n >"$tmp/chain$n.net"
	row "frontend+shapes, $n ops" --dump-ir "$tmp/chain$n.net"
	row "-O0 to JSON, $n ops" --json "$tmp/chain$n.net"
done
# issue 15's target: 300k one-statement ops in < 1 s and < 100 MB at -O0
sh "$SRCDIR/tests/bench/gen_ops.sh" 300000 >"$tmp/ops300k.net"
row "-O0, 300k statements" "$tmp/ops300k.net"
row "-O2, 300k statements" -O2 "$tmp/ops300k.net"
for ex in gpt2 resnet50 unet llama; do
	[ -f "$SRCDIR/examples/$ex.net" ] || continue
	row "-O0 $ex" "$SRCDIR/examples/$ex.net"
	row "-O2 $ex" -O2 "$SRCDIR/examples/$ex.net"
done
