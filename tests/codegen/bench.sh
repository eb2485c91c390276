#!/bin/sh
# tests/codegen/bench.sh -- `make bench-codegen`: for GPT-2 small and
# ResNet-50 at their real dims (-O2) and generated chains of 10k and 100k
# ops (tests/bench/gen_chain.sh, -O0), the time `remat -o` takes to analyze
# and emit, the size of the program, the host compile time
# (cc -x c -std=c11 -O1 -DREMAT_HOST -c) and, when $NVCC is set, the CUDA
# compile time (nvcc -fmad=false -x cu -c). The chains are compiled for the
# host only, and the 100k-op program (~100 MB of C) not at all: the 10k one
# takes gcc about a minute and a half, and nvcc runs out of memory on it. Nothing is run: real sizes are far too
# slow on a CPU.
set -u
: "${REMAT:=./remat}" "${SRCDIR:=.}"
CC=${CC:-cc}
NVCC=${NVCC:-}
dir=${TMPDIR:-/tmp}/remat-bench-codegen.$$
mkdir -p "$dir" || exit 1
trap 'rm -rf "$dir"' EXIT

now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{ printf "%.2f", $2 - $1 }'; }

# row LABEL COMPILE remat-arguments...; COMPILE: all, host or none
row() {
	label=$1 compile=$2
	shift 2
	cu="$dir/$label.cu" cc=- nv=-
	t0=$(now)
	"$REMAT" "$@" -o "$cu" >/dev/null 2>"$dir/err" || { echo "$label: remat failed"; cat "$dir/err"; return; }
	t1=$(now)
	if [ "$compile" != none ]; then
		$CC -x c -std=c11 -O1 -DREMAT_HOST -c "$cu" -o "$dir/$label.o" && cc=$(secs "$t1" "$(now)")
		if [ -n "$NVCC" ] && [ "$compile" = all ]; then
			t2=$(now)
			"$NVCC" -fmad=false -x cu -c "$cu" -o "$dir/$label.cu.o" && nv=$(secs "$t2" "$(now)")
		fi
	fi
	steps=$(sed -n '1s/.*: \([0-9]*\) steps.*/\1/p' "$cu")
	printf '%-16s %8s %12s %10s %10s %10s\n' "$label" "$steps" "$(wc -c <"$cu")" \
		"$(secs "$t0" "$t1")" "$cc" "$nv"
	rm -f "$cu" "$dir/$label.o" "$dir/$label.cu.o"
}

printf '%-16s %8s %12s %10s %10s %10s\n' case steps bytes "emit s" "cc -O1 s" "nvcc s"
row gpt2-O2 all -O2 "$SRCDIR/examples/gpt2.net"
row resnet50-O2 all -O2 "$SRCDIR/examples/resnet50.net"
for n in 10000 100000; do
	sh "$SRCDIR/tests/bench/gen_chain.sh" $n >"$dir/chain$n.net"
	compile=none
	[ $n -le 10000 ] && compile=host
	row "chain$n-O0" $compile "$dir/chain$n.net"
done
