#!/bin/sh
# tests/bench/bench_work.sh -- `make bench-work`: issue 29's bounded work on
# hostile sizes: -O2 against -O0 on chains whose every step reads one param
# (gen_shared.sh), --emit-torch against -O2 and --stages 64 on a 30k-op
# chain (gen_chain.sh), and --micro-batches up to and past its cap. Prints
# per run the exit status, CPU seconds (user + system) and peak RSS in KiB
# as /usr/bin/time measures them, and each ratio against its target
# (docs/limits.md, "Bounded work"). Figures only: it exits 0 whatever they
# are, and nothing here runs under `make check`.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
TIME=${TIME_CMD:-/usr/bin/time}
if ! "$TIME" -f %M true >/dev/null 2>&1; then
	echo "bench-work: needs GNU time at $TIME (set TIME_CMD)" >&2
	exit 77
fi
tmp=${TMPDIR:-/tmp}/remat-work.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
printf '%-52s %4s %8s %10s\n' "run" "exit" "CPU s" "RSS KiB"

# row LABEL CMD...: runs CMD (output discarded), prints its figures and
# leaves its CPU seconds in $cpu.
row() {
	label=$1; shift
	"$TIME" -o "$tmp/time" -f '%x %U %S %M' "$@" >/dev/null 2>"$tmp/err"
	set -- $(tail -n 1 "$tmp/time")
	cpu=$(awk -v u="$2" -v s="$3" 'BEGIN { printf "%.2f", u + s }')
	printf '%-52s %4s %8s %10s\n' "$label" "$1" "$cpu" "$4"
}

# ratio WHAT A B TARGET: prints A / B against the target
ratio() {
	awk -v w="$1" -v a="$2" -v b="$3" -v t="$4" 'BEGIN {
		r = a / (b > 0.01 ? b : 0.01)
		printf "  %s: %.1fx (target: within %sx)%s\n", w, r, t, (r > t ? "  OVER" : "") }'
}

for n in 50000 400000; do
	sh "$SRCDIR/tests/bench/gen_shared.sh" $n >"$tmp/shared$n.net"
	row "$n steps sharing one param, -O0" "$REMAT" -O0 "$tmp/shared$n.net"
	o0=$cpu
	row "$n steps sharing one param, -O2" "$REMAT" -O2 "$tmp/shared$n.net"
	ratio "-O2 / -O0" "$cpu" "$o0" 5
done
sh "$SRCDIR/tests/bench/gen_chain.sh" 30000 >"$tmp/chain30k.net"
row "30k-op chain, -O2" "$REMAT" -O2 "$tmp/chain30k.net"
o2=$cpu
row "30k-op chain, -O2 --emit-torch" "$REMAT" -O2 --emit-torch "$tmp/helper.py" "$tmp/chain30k.net"
ratio "--emit-torch / -O2" "$cpu" "$o2" 3
row "30k-op chain, --stages 8" "$REMAT" --stages 8 "$tmp/chain30k.net"
row "30k-op chain, --stages 64" "$REMAT" --stages 64 "$tmp/chain30k.net"
row "30k-op chain, --stages 70 (past the cap: exit 2)" "$REMAT" --stages 70 "$tmp/chain30k.net"
sh "$SRCDIR/tests/bench/gen_chain.sh" 100 >"$tmp/chain100.net"
for m in 1024 20000 65536; do
	row "100-op chain, --stages 2 --micro-batches $m" "$REMAT" --stages 2 \
		--micro-batches $m "$tmp/chain100.net"
done
