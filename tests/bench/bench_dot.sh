#!/bin/sh
# tests/bench/bench_dot.sh -- `make bench-dot`: seconds of `remat --dot`
# and of Graphviz's `dot -Tsvg` on it, for GPT-2 (examples/gpt2.net) and a
# T5-style encoder-decoder (tests/bench/t5.net, 12 + 12 layers), forward
# only and with --dot-backward, collapsed (the default) and --dot-full
# (every call, as --dot drew before issue 28). The target is 10 s for both
# together; Graphviz gets LIMIT seconds (default 60) and the row says
# "> LIMIT" when it runs out. Figures only: it exits 0 whatever they are.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
LIMIT=${LIMIT:-60}
if ! command -v dot >/dev/null 2>&1; then
	echo "bench-dot: needs graphviz's dot" >&2
	exit 77
fi
tmp=${TMPDIR:-/tmp}/remat-dot.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT

secs() { # secs CMD...: wall seconds of CMD, or "> LIMIT" when it timed out
	t0=$(date +%s.%N)
	timeout "$LIMIT" "$@" >/dev/null 2>&1
	rc=$?
	t1=$(date +%s.%N)
	if [ $rc -eq 124 ]; then echo "> $LIMIT"
	else awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; fi
}

printf '%-8s %-26s %6s %10s %10s\n' "network" "flags" "nodes" "remat s" "dot s"
for net in examples/gpt2.net tests/bench/t5.net; do
	for flags in "" "--dot-backward" "--dot-full" "--dot-full --dot-backward"; do
		# shellcheck disable=SC2086
		r=$(secs "$REMAT" "$SRCDIR/$net" --dot "$tmp/g.dot" $flags)
		n=$(grep -c '^  [ftb][0-9]* \[' "$tmp/g.dot")
		d=$(secs dot -Tsvg "$tmp/g.dot" -o "$tmp/g.svg")
		printf '%-8s %-26s %6s %10s %10s\n' "$(basename "$net" .net)" "${flags:-(collapsed)}" \
			"$n" "$r" "$d"
	done
done
