#!/bin/sh
# tests/gen_random_net.sh SEED -- prints a small random training network
# (.net) for the end-to-end tests: 4-14 ops over [B, D] tensors in one
# floating dtype (f16 most often, where the order of a sum shows soonest),
# with branches, skip connections, tensors read by up to four ops (so that
# their gradients get several contributions), params shared by several
# matmuls (tied weights: several contributions to a param's gradient),
# views (transposes) and normalizations. The same SEED gives the same
# network everywhere: the numbers come from the Park-Miller generator in
# integer arithmetic, not from awk's rand(), which differs between awks.
seed=${1:?usage: gen_random_net.sh SEED}
awk -v seed="$seed" '
function rnd(n) { s = (s * 48271) % 2147483647; return s % n }
# A tensor to read: one of the last three most of the time (a chain),
# else any earlier one (a skip).
function pick() { return rnd(3) ? nv - 1 - rnd(nv < 3 ? nv : 3) : rnd(nv) }
BEGIN {
	s = seed % 2147483646 + 1
	for (k = 0; k < 5; k++) rnd(2)
	dt = rnd(4); dt = dt < 2 ? "f16" : dt == 2 ? "bf16" : "f32"
	d = 2 + 2 * rnd(4)
	np = 1 + rnd(3)
	nops = 4 + rnd(11)
	printf "batch B = %d; dim D = %d;\n", 16 * (1 + rnd(4)), d
	printf "train { optimizer = %s; }\n", rnd(2) ? "adamw" : "sgd"
	printf "input x : %s[B, D];\n", dt
	for (k = 0; k < np; k++) printf "param w%d : %s[D, D];\n", k, dt
	printf "param g : %s[D]; param b : %s[D];\n", dt, dt
	# the first op reads a param, so that the loss depends on one
	printf "v1 = x @ w0;\n"
	nv = 2; v[0] = "x"; v[1] = "v1"; dep[0] = 0; dep[1] = 1
	for (i = 2; i <= nops; i++) {
		ia = pick(); ic = pick(); a = v[ia]; c = v[ic]; kind = rnd(10)
		# dep: whether the tensor depends on a param
		dep[nv] = kind < 3 || kind == 7 || dep[ia] || (kind >= 3 && kind <= 5 && dep[ic])
		if (kind < 3) e = a " @ w" rnd(np)
		else if (kind == 3) e = a " + " c
		else if (kind == 4) e = a " * " c
		else if (kind == 5) e = a " - " c
		else if (kind == 6) e = "reshape(transpose(" a ", 0, 1), [B, D])"
		else if (kind == 7) e = "layernorm(" a ", g, b)"
		else { split("gelu tanh sigmoid silu relu", f, " "); e = f[1 + rnd(5)] "(" a ")" }
		printf "v%d = %s;\n", i, e
		v[nv++] = "v" i
	}
	# the loss reads the last op and up to two others, so that every
	# branch may reach it
	e = "v" nops; any = dep[nops]
	for (k = rnd(3); k > 0; k--) { j = rnd(nv); e = e " + " v[j]; any = any || dep[j] }
	if (!any) e = e " + v1"
	printf "loss = sum(%s);\noutput loss;\n", e
}'
