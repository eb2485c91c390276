#!/bin/sh
# tests/bench/bench_repro.sh -- `make bench-repro`: issue 15's hardening
# reproducers (and issue 29's: input size, ONNX), each of which must give a clear error or a correct answer in
# under 1 s of CPU and 100 MB (10^8 bytes: 97,656 KiB) of peak memory. Prints, per reproducer, the
# exit status, CPU seconds (user + system) and peak RSS as /usr/bin/time
# measures them, and marks OVER any that passes a target. Figures only, as
# the other benchmarks: it exits 0 whatever they are (so `make bench` runs
# on), and nothing here runs under `make check`.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
TIME=${TIME_CMD:-/usr/bin/time}
if ! "$TIME" -f %M true >/dev/null 2>&1; then
	echo "bench-repro: needs GNU time at $TIME (set TIME_CMD)" >&2
	exit 77
fi
tmp=${TMPDIR:-/tmp}/remat-repro.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
over=0
printf '%-44s %4s %8s %10s\n' "reproducer" "exit" "CPU s" "RSS KiB"

# row LABEL CMD...: runs CMD (output discarded) and prints its figures.
row() {
	label=$1; shift
	"$TIME" -o "$tmp/time" -f '%x %U %S %M' "$@" >/dev/null 2>"$tmp/err"
	set -- $(tail -n 1 "$tmp/time")
	cpu=$(awk -v u="$2" -v s="$3" 'BEGIN { printf "%.2f", u + s }')
	flag=
	if awk -v c="$cpu" 'BEGIN { exit !(c >= 1.0) }' || [ "$4" -ge 97657 ]; then
		flag=" OVER"
		over=$((over + 1))
	fi
	printf '%-44s %4s %8s %10s%s\n' "$label" "$1" "$cpu" "$4" "$flag"
}

net() {  # net NAME: writes stdin to $tmp/NAME.net
	cat >"$tmp/$1.net"
}

# ---------------------------------------------------------------- expansion
printf 'input x : f32[2];\nrepeat 9223372036854775807 { }\noutput x;\n' | net rep63
row "repeat 9223372036854775807 { }" "$REMAT" "$tmp/rep63.net"
printf 'input x : f32[2];\nrepeat 4294967296 { }\noutput x;\n' | net rep32
row "repeat 4294967296 { }" "$REMAT" "$tmp/rep32.net"
printf 'input x : f32[2];\nh = x;\nrepeat 1_000_000_000 { h = h; }\noutput h;\n' | net reph
row "repeat 1_000_000_000 { h = h; }" "$REMAT" "$tmp/reph.net"
printf 'input x : f32[2];\nh = x;\nrepeat 1_000_000_000 { h = relu(h); }\noutput h;\n' |
	net represent
row "repeat 1_000_000_000 { h = relu(h); }" "$REMAT" "$tmp/represent.net"
row "twenty defs calling the previous twice" "$REMAT" "$SRCDIR/tests/bad/expand-def-doubling.net"
# The tensor cap (2^24) sits above the expansion cap (2^22 units, three
# per iteration here: docs/limits.md), which is what a file meets first:
# 1398099 iterations are the most accepted (1.4M ops), one more is refused.
printf 'input x : f32[2];\nh = x;\nrepeat 1398100 { h = relu(h); }\noutput h;\n' | net capbad
printf 'input x : f32[2];\nh = x;\nrepeat 1398099 { h = relu(h); }\noutput h;\n' | net capok
row "expansion cap + 1 (error)" "$REMAT" "$tmp/capbad.net"
row "expansion cap, 1.4M ops, -O0" "$REMAT" "$tmp/capok.net"

# ---------------------------------------------------------------- size
for n in 10000 100000; do
	awk -v n=$n 'BEGIN { print "input x : f32[4];"; for (i = 0; i < n; i++) print "output x;" }' |
		net outs$n
	row "$n 'output x;' lines" "$REMAT" --infer "$tmp/outs$n.net"
done
awk 'BEGIN { print "param w : f32[4];"; print "input x : f32[4];"
	for (i = 0; i < 300000; i++) printf "v%d = x * w;\n", i
	print "l = sum(x * w);"; print "output l;" }' | net unused
row "300k unused ops (warnings)" "$REMAT" "$tmp/unused.net"
row "300k unused ops, -O2" "$REMAT" -O2 "$tmp/unused.net"
sh "$SRCDIR/tests/bench/gen_ops.sh" 300000 >"$tmp/ops300k.net"
row "300k statements, -O0" "$REMAT" "$tmp/ops300k.net"
row "300k statements, -O2" "$REMAT" -O2 "$tmp/ops300k.net"
awk 'BEGIN { print "input x : f32[4];"; printf "y = concat("
	for (i = 0; i < 100000; i++) printf "x, "
	print "x, axis=0);"; print "output y;" }' | net cat
row "codegen of a concat of 100001 inputs" "$REMAT" --infer -o "$tmp/cat.cu" "$tmp/cat.net"
printf 'input x : u8[4611686018427387904];\ny = relu(x);\nz = relu(y);\noutput z;\n' | net huge
row "two live u8[2^62] tensors" "$REMAT" "$tmp/huge.net"
row "--max-batch 9e18" "$REMAT" --max-batch 9000000000000000000 "$SRCDIR/examples/tiny.net"
for j in cost-total-overflow cost-ram-total-overflow all-cost-ram-zero; do
	row "checkmate $j" "$REMAT" --import checkmate -O2 \
		"$SRCDIR/tests/fuzz/regress-checkmate/$j.json"
done
row "--top 2147483648" "$REMAT" --top 2147483648 "$SRCDIR/examples/tiny.net"

# ---------------------------------------------------------------- output files
cp "$SRCDIR/examples/tiny.net" "$tmp/model.net"
row "-o model.net model.net" "$REMAT" -o "$tmp/model.net" "$tmp/model.net"
row "-o /dev/null" "$REMAT" -o /dev/null "$tmp/model.net"
ln -s "$tmp/model.net" "$tmp/link.net"
row "-o through a symlink to the input" "$REMAT" -o "$tmp/link.net" "$tmp/model.net"

# ---------------------------------------------------------------- odd sources
: | net empty
row "empty file" "$REMAT" "$tmp/empty.net"
row "comment-only file" "$REMAT" "$SRCDIR/tests/bad/comment-only.net"
awk 'BEGIN { printf "input x : f32[4];\ny = relu(x);\n"; printf "output "
	for (i = 0; i < 1048576; i++) printf "a"; print ";" }' | net longid
row "1 MB identifier" "$REMAT" "$tmp/longid.net"
awk 'BEGIN { printf "input x : f32[4];\ny = x"
	for (i = 0; i < 262144; i++) printf " + x"; print ";"; print "output y;" }' | net longline
row "1 MB line" "$REMAT" "$tmp/longline.net"
for f in nul-byte crlf-line-endings cr-line-endings utf8-identifier real-literal-out-of-range; do
	row "$f" "$REMAT" "$SRCDIR/tests/bad/$f.net"
done
row "--budget 0x800" "$REMAT" --budget 0x800 "$SRCDIR/examples/tiny.net"
row "-D B=-0" "$REMAT" -DB=-0 "$SRCDIR/examples/tiny.net"

# ---------------------------------------------------------------- input size
# (issue 29) a stream that never ends, and one of 600 MB, stop at the cap
row "/dev/zero as .net" "$REMAT" /dev/zero
row "/dev/zero as ONNX" "$REMAT" --import onnx --infer /dev/zero
row "a 600 MB stream as .net (stdin)" sh -c 'head -c 600000000 /dev/zero | "$0" -' "$REMAT"

# ---------------------------------------------------------------- ONNX
# (issue 29) the importer's work on large and hostile models
# (tests/bench/gen_onnx.py; needs python3), and the hostile numbers of
# tests/onnx/bad (each a located error)
if command -v python3 >/dev/null 2>&1; then
	for k in "sigmoids 40000" "sigmoids 80000" "names 10000" "names 20000" \
	         "blocks 40000" "bnblocks 4000" "where 20000" "nodebomb 4000000"; do
		set -- $k
		python3 "$SRCDIR/tests/bench/gen_onnx.py" $1 $2 >"$tmp/$1$2.onnx"
		row "ONNX: $2 $1" "$REMAT" --import onnx --infer "$tmp/$1$2.onnx"
	done
fi
for f in gather-15-axes expand-negative expand-huge constantofshape-huge conv-pads \
         conv-dilations fold-budget too-many-attributes; do
	row "ONNX: bad/$f" "$REMAT" --import onnx --infer "$SRCDIR/tests/onnx/bad/$f.onnx"
done

# ---------------------------------------------------------------- bounded work
# (issue 29) -O2 against -O0 on chains whose every step reads one param,
# --emit-torch against -O2 and --stages on a 30k-op chain, --micro-batches
# up to and past the pipeline's cap (docs/limits.md, "Bounded work"): each
# ratio is printed against its target; the large runs pass 1 s by design.
# ratio WHAT A B TARGET: A / B against the target
ratio() {
	awk -v w="$1" -v a="$2" -v b="$3" -v t="$4" 'BEGIN {
		r = a / (b > 0.01 ? b : 0.01)
		printf "  %s: %.1fx (target: within %sx)%s\n", w, r, t, (r > t ? "  OVER" : "") }'
}
for k in 50000 400000; do
	sh "$SRCDIR/tests/bench/gen_shared.sh" $k >"$tmp/shared$k.net"
	row "$k steps sharing one param, -O0" "$REMAT" -O0 "$tmp/shared$k.net"
	o0=$cpu
	row "$k steps sharing one param, -O2" "$REMAT" -O2 "$tmp/shared$k.net"
	ratio "-O2 / -O0" "$cpu" "$o0" 5
done
sh "$SRCDIR/tests/bench/gen_chain.sh" 30000 >"$tmp/chain30k.net"
row "30k-op chain, -O2" "$REMAT" -O2 "$tmp/chain30k.net"
o2=$cpu
row "30k-op chain, -O2 --emit-torch" "$REMAT" -O2 --emit-torch "$tmp/helper.py" "$tmp/chain30k.net"
ratio "--emit-torch / -O2" "$cpu" "$o2" 3
row "30k-op chain, --stages 8" "$REMAT" --stages 8 "$tmp/chain30k.net"
row "30k-op chain, --stages 64" "$REMAT" --stages 64 "$tmp/chain30k.net"
row "30k-op chain, --stages 70 (the cap: exit 2)" "$REMAT" --stages 70 "$tmp/chain30k.net"
sh "$SRCDIR/tests/bench/gen_chain.sh" 100 >"$tmp/chain100.net"
for m in 1024 20000 65536; do
	row "100-op chain, --stages 2 --micro-batches $m" "$REMAT" --stages 2 \
		--micro-batches $m "$tmp/chain100.net"
done

echo "$over over the target (1 s CPU, 10^8 bytes)"
