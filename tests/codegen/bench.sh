#!/bin/sh
# tests/codegen/bench.sh -- emit + host compile time and file size for
# GPT-2 small (examples/gpt2.net at its declared dims).
: "${REMAT:=./remat}" "${SRCDIR:=.}"
CC=${CC:-cc}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
t0=$(date +%s.%N)
"$REMAT" -O2 "$SRCDIR/examples/gpt2.net" -o "$dir/gpt2.cu" || exit 1
t1=$(date +%s.%N)
$CC -x c -std=c11 -O1 -DREMAT_HOST -c "$dir/gpt2.cu" -o "$dir/gpt2.o" -lm || exit 1
t2=$(date +%s.%N)
echo "gpt2: $(wc -c <"$dir/gpt2.cu") bytes, emit $(echo "$t1 - $t0" | bc) s, cc -O1 $(echo "$t2 - $t1" | bc) s"
