#!/bin/sh
# tests/bench/gen_ops.sh N -- prints a .net file with an input and N chained
# elementwise ops, one statement and one name each (v1 .. vN: `u8` is a
# dtype keyword): issue 15's "300k-op file", the per-statement cost of the
# frontend without `repeat` to share it.
n=${1:?usage: gen_ops.sh N}
echo "input x : f32[4, 16];"
echo "v1 = relu(x);"
awk -v n="$n" 'BEGIN { for (i = 2; i <= n; i++) printf "v%d = relu(v%d);\n", i, i - 1 }'
echo "output v$n;"
