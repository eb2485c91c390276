#!/bin/sh
# tests/bench/gen_chain.sh N -- prints a .net file with about N ops: a
# `repeat` of a ten-op residual MLP block (matmul, add, layernorm, gelu,
# matmul, add, mul, relu, dropout, sub) on small tensors.
n=${1:?usage: gen_chain.sh N}
cat <<NET
batch B = 4;
dim D = 16;
input x : f32[B, D];
input y : f32[B, D];
def block(h) {
  param w1 : f32[D, D];
  param w2 : f32[D, D];
  param g : f32[D];
  param b : f32[D];
  a = layernorm(h @ w1 + h, g, b);
  m = relu(gelu(a) @ w2 + a) * a;
  return dropout(m, p=0.1) - h;
}
h = x;
repeat $((n / 10)) { h = block(h); }
loss = mse_loss(h, y);
output loss;
NET
