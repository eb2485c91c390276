#!/bin/sh
# tests/bench/gen_shared.sh N -- prints a .net file of N chained steps that
# all read one param (`h = h * w`, a repeat): issue 29's shared-param
# chain, whose -O2 plan scanned the param's users per node.
n=${1:?usage: gen_shared.sh N}
cat <<NET
input x : f32[4, 16];
param w : f32[4, 16];
h = x;
repeat $n { h = h * w; }
loss = sum(h);
output loss;
NET
