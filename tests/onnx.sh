#!/bin/sh
# tests/onnx.sh -- the ONNX importer, for make check (TAP). Skips (77) when
# remat was built without protobuf-c. For every fixture in tests/onnx:
# imports and analyzes at -O0 and -O2; the parameter count equals the
# module's own (params.txt); --emit-net writes a .net whose analysis is the
# same bytes as the import's (report and JSON). The small fixtures also run
# in host mode (generated program) with measured = predicted at -O0 and -O2;
# ViT-B/16 runs at -O0 (about a CPU minute), the other torchvision
# fixtures take minutes there and run in `make bench`
# (tests/onnx/host.sh). The op fixtures of make_ops.py (windows, conv1d,
# folding) have the peak of their hand-written .net twins. Then: ResNet-50's -O0 peak equals
# examples/resnet50.net's at the same dims plus its running statistics, to
# the byte; running statistics are buffers; --emit-net writes defs for the
# repeated blocks; symbolic dims need
# -D; an inference export gets a note; bad files and flags give a clear
# message and exit 1: each model in bad/ (tests/onnx/make_hostile.py makes
# the hostile numbers) prints the located error bad/expect.txt gives; the
# input cap, /dev/zero and the unpacking budget; --loss beside a model's
# own 'labels'; newlines in names stay inside comments. Outputs go to $BUILDDIR/tests/out/onnx.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
CC=${CC:-cc}
dir="$SRCDIR/tests/onnx"
out="$BUILDDIR/tests/out/onnx"
if "$REMAT" --import onnx /dev/null 2>&1 | grep -q 'not built'; then
	echo "1..0 # SKIP remat was built without protobuf-c"
	exit 77
fi
rm -rf "$out"
mkdir -p "$out" || exit 99

fixtures="resnet18 resnet50 mobilenet_v2 vit_b_16 gpt2_tiny gpt2_tiny_opset14 bert_tiny llama_tiny convbn_eval mlp_dynbatch ops_windows ops_conv1d ops_fold ops_einsum"
small="gpt2_tiny bert_tiny llama_tiny convbn_eval mlp_dynbatch ops_windows ops_conv1d ops_fold ops_einsum"
# hand-written op fixtures (make_ops.py) with a .net twin of the same peak
twins="ops_windows ops_conv1d ops_fold ops_einsum"
bad=$(cd "$dir/bad" && ls *.onnx | sed 's/\.onnx$//')
echo "1..$(($(echo $fixtures | wc -w) * 5 + $(echo $small | wc -w) * 2 + 1 + $(echo $bad | wc -w) + $(echo $twins | wc -w) + 21))"
i=0
failed=0
ok() { i=$((i + 1)); echo "ok $i - $*"; }
notok() { i=$((i + 1)); failed=1; echo "not ok $i - $*"; }
peak() { sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p' "$1"; }
# remat arguments for fixture $1
args() {
	case $1 in
	mlp_dynbatch) echo "--import onnx --loss cross_entropy -Dbatch=4 $dir/$1.onnx" ;;
	*) echo "--import onnx --loss cross_entropy $dir/$1.onnx" ;;
	esac
}

for f in $fixtures; do
	o="$out/$f"
	for lv in 0 2; do
		if "$REMAT" -O$lv --bytes $(args $f) >"$o-O$lv.report" 2>"$o-O$lv.err" &&
		   [ -n "$(peak "$o-O$lv.report")" ]; then
			ok "$f: imports and analyzes at -O$lv (peak $(peak "$o-O$lv.report") bytes)"
		else
			notok "$f: -O$lv failed"; sed 's/^/# /' "$o-O$lv.err" | head -5
		fi
	done
	want=$(sed -n "s/^$f \([0-9]*\) [0-9]*$/\1/p" "$dir/params.txt")
	wantb=$(sed -n "s/^$f [0-9]* \([0-9]*\)$/\1/p" "$dir/params.txt")
	# convbn_eval is an inference export: BatchNorm (2 x 8 params) is
	# folded into the convolution, which gains a bias (8)
	[ "$f" = convbn_eval ] && want=$((want - 8))
	got=$(sed -n 's/^parameters: \([0-9]*\) elements.*/\1/p' "$o-O0.report")
	if [ -n "$want" ] && [ "$got" = "$want" ]; then
		ok "$f: $got parameters, as the module counts"
	else
		notok "$f: $got parameters, the module has ${want:-?}"
	fi
	gotb=$(sed -n 's/^buffers: .*(\([0-9]*\) bytes).*/\1/p' "$o-O0.report")
	if [ -n "$wantb" ] && [ "${gotb:-0}" = "$wantb" ]; then
		ok "$f: ${gotb:-0} bytes of buffers, the module's running statistics"
	else
		notok "$f: ${gotb:-0} bytes of buffers, the module has ${wantb:-?}"
	fi
	if "$REMAT" -O2 $(args $f) --emit-net "$o.net" --json >"$o.imp.json" 2>/dev/null &&
	   "$REMAT" -O2 $(echo $(args $f) | sed 's/.*--loss cross_entropy//; s/-D[^ ]*//; s/[^ ]*\.onnx$//') \
	       "$o.net" --json >"$o.net.json" 2>"$o.net.err" &&
	   cmp -s "$o.imp.json" "$o.net.json"; then
		ok "$f: --emit-net round trip gives the same bytes"
	else
		notok "$f: --emit-net round trip differs"; sed 's/^/# /' "$o.net.err" | head -5
	fi
done

# Host mode: the generated program measures the peak that remat predicts.
for f in $small; do
	for lv in 0 2; do
		s="$out/$f-host-O$lv"
		if "$REMAT" -O$lv $(args $f) -o "$s.cu" >/dev/null 2>"$s.err" &&
		   $CC -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST "$s.cu" -o "$s" -lm 2>>"$s.err" &&
		   "$s" --tracked >"$s.out" 2>>"$s.err"; then
			ok "$f: host run at -O$lv, measured = predicted"
		else
			notok "$f: host run at -O$lv"; sed 's/^/# /' "$s.err" "$s.out" 2>/dev/null | head -10
		fi
	done
done

# The op fixtures import to their hand-written .net twins: the same peak at
# -O0 and -O2 (HardSwish, HardSigmoid, axis-list reductions, ceil_mode,
# asymmetric and per-axis pads, conv1d map to those ops).
for f in $twins; do
	same=1 got=
	for lv in 0 2; do
		a=$("$REMAT" -O$lv --bytes $(args $f) 2>"$out/$f-twin.err" | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p')
		b=$("$REMAT" -O$lv --bytes "$dir/$f.net" 2>>"$out/$f-twin.err" | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p')
		{ [ -n "$a" ] && [ "$a" = "$b" ]; } || same=0
		got="$got${got:+ / }${a:-?} = ${b:-?}"
	done
	if [ $same = 1 ]; then
		ok "$f: the import's peak is its .net twin's at -O0 / -O2 ($got bytes)"
	else
		notok "$f: import vs .net twin peaks: $got"; sed 's/^/# /' "$out/$f-twin.err" | head -5
	fi
done

# ViT-B/16 (batch 2, 224x224, 86.6M parameters) at -O0: the host program's
# packed matmul and unpadded (patch) convolution make this about a CPU
# minute; -O2 and the torchvision CNNs run in `make bench-onnx-host`.
s="$out/vit_b_16-host-O0"
if "$REMAT" -O0 $(args vit_b_16) -o "$s.cu" >/dev/null 2>"$s.err" &&
   $CC -x c -std=c11 -O2 -Wall -Werror -DREMAT_HOST "$s.cu" -o "$s" -lm 2>>"$s.err" &&
   "$s" --tracked >"$s.out" 2>>"$s.err"; then
	ok "vit_b_16: host run at -O0, measured = predicted ($(sed -n 's/^measured peak: //p' "$s.out"))"
else
	notok "vit_b_16: host run at -O0"; sed 's/^/# /' "$s.err" "$s.out" 2>/dev/null | head -10
fi

# Each bad model: exit 1, one located error ("FILE: error: node 'N' (Op):
# ..." where a node is at fault) holding the text bad/expect.txt gives,
# nothing on stdout and no --emit-net file.
for b in $bad; do
	want=$(sed -n "s/^$b	//p" "$dir/bad/expect.txt")
	if "$REMAT" --import onnx --infer --emit-net "$out/$b.net" "$dir/bad/$b.onnx" \
	       >"$out/$b.out" 2>"$out/$b.err"; then
		notok "bad/$b: accepted"
	elif [ $? -eq 1 ] && [ -n "$want" ] && [ "$(wc -l <"$out/$b.err")" = 1 ] &&
	     grep -qF -- "$b.onnx: error: $want" "$out/$b.err" && [ ! -s "$out/$b.out" ] &&
	     [ ! -e "$out/$b.net" ]; then
		ok "bad/$b: $(head -1 "$out/$b.err" | sed 's|^.*/||' | cut -c1-150)"
	else
		notok "bad/$b: no clear error (want: ${want:-an entry in bad/expect.txt})"
		sed 's/^/# /' "$out/$b.err" | head -3
	fi
done

# ResNet-50: the same peak as the hand-written example (same optimizer),
# but for the running statistics, which the example does not declare.
a=$("$REMAT" --bytes -DB=2 "$SRCDIR/examples/resnet50.net" | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p')
b=$("$REMAT" --bytes --optimizer momentum $(args resnet50) | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p')
rs=$(sed -n "s/^resnet50 [0-9]* \([0-9]*\)$/\1/p" "$dir/params.txt")
if [ -n "$a" ] && [ -n "$b" ] && [ -n "$rs" ] && [ "$a" = "$((b - rs))" ]; then
	ok "resnet50: -O0 peak $b bytes = examples/resnet50.net -DB=2 + $rs bytes of running statistics"
else
	notok "resnet50: -O0 peak ${b:-?} bytes, examples/resnet50.net ${a:-?}, running statistics ${rs:-?}"
fi

# GPT-2 exported at opset 14 (LayerNorm decomposed, matched back to
# layernorm) has the same peak as at opset 17 (one LayerNormalization).
a=$(peak "$out/gpt2_tiny-O0.report") b=$(peak "$out/gpt2_tiny_opset14-O0.report")
if [ -n "$a" ] && [ "$a" = "$b" ]; then
	ok "gpt2_tiny: opset 14 (decomposed LayerNorm) peak = opset 17 peak ($a bytes)"
else
	notok "gpt2_tiny: opset 14 peak ${b:-?} bytes, opset 17 ${a:-?}"
fi

# expect_fail NAME PATTERN remat-args...: exit 1, message matching PATTERN
expect_fail() {
	name=$1 pat=$2
	shift 2
	"$REMAT" "$@" >"$out/x.out" 2>"$out/x.err"
	rc=$?
	if [ $rc -eq 1 ] && grep -q -- "$pat" "$out/x.err" && [ ! -s "$out/x.out" ]; then
		ok "$name"
	else
		notok "$name (exit $rc)"; sed 's/^/# /' "$out/x.err" | head -3
	fi
}
expect_fail "a symbolic dim without -D is an error" "give its value with -Dbatch=N" \
	--import onnx --loss cross_entropy "$dir/mlp_dynbatch.onnx"
expect_fail "training without --loss asks for one" "not a scalar loss" \
	--import onnx "$dir/gpt2_tiny.onnx"
expect_fail "--loss with an unknown kind" "unknown kind 'hinge'" \
	--import onnx --loss hinge "$dir/gpt2_tiny.onnx"
expect_fail "--params with a bad regex" "bad regular expression" \
	--import onnx --loss mse --params '(' "$dir/gpt2_tiny.onnx"
expect_fail "--params making an integer input a parameter" "must be floating point" \
	--import onnx --loss mse --params 'tok' "$dir/gpt2_tiny.onnx"

# The input cap (--max-input, default 64 MiB): resnet18.onnx is 21,045
# bytes; /dev/zero never ends. protobuf-c's allocations have a budget of
# twice the file and 32 MiB: 2^19 empty nodes (two bytes each in a 1 MiB
# file, about 100 unpacked) pass it.
expect_fail "--max-input below the file's size" \
	"resnet18.onnx: error: larger than 21044 bytes, the input cap (--max-input SIZE raises it)" \
	--import onnx --infer --max-input 21044B "$dir/resnet18.onnx"
if "$REMAT" --import onnx --infer --max-input 21045B "$dir/resnet18.onnx" >/dev/null 2>"$out/x.err"; then
	ok "--max-input at the file's size reads it"
else
	notok "--max-input at the file's size"; sed 's/^/# /' "$out/x.err" | head -3
fi
expect_fail "/dev/zero stops at the default cap" \
	"/dev/zero: error: larger than 67108864 bytes, the input cap" --import onnx --infer /dev/zero
printf '\n\000' >"$out/bomb"
for k in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19; do
	cat "$out/bomb" "$out/bomb" >"$out/bomb2" && mv "$out/bomb2" "$out/bomb"
done
{ printf '\072\200\200\100'; cat "$out/bomb"; } >"$out/nodebomb.onnx"
expect_fail "2^19 empty nodes in 1 MiB: past the unpacking budget" \
	"nodebomb.onnx: error: the model unpacks to more than 35651592 bytes" \
	--import onnx --infer "$out/nodebomb.onnx"

# Newlines in the producer's name and in a block key (issue 29) stay inside
# the `#` comments of the emitted .net: no statement of theirs
if "$REMAT" --import onnx --infer --emit-net "$out/inject.net" "$dir/names_inject.onnx" \
       >/dev/null 2>"$out/x.err" &&
   ! grep -q '^param' "$out/inject.net" && [ "$(grep -c '^# ' "$out/inject.net")" = 3 ] &&
   [ "$(grep -c '   # a?param injected' "$out/inject.net")" = 2 ] &&
   "$REMAT" --infer "$out/inject.net" | grep -q '^parameters: 0 elements'; then
	ok "newlines in the producer and a block key stay in their comments"
else
	notok "names with newlines in the emitted .net"; sed 's/^/# /' "$out/x.err" | head -3
fi

# A model with its own "labels" input and "loss" value keeps them; --loss
# names its own labels_2 and loss_2
if "$REMAT" --import onnx --loss mse --emit-net "$out/clash.net" "$dir/names_clash.onnx" \
       >/dev/null 2>"$out/x.err" &&
   grep -q '^input labels : i64\[2, 4\];$' "$out/clash.net" &&
   grep -q '^input labels_2 : f32\[2, 4\];$' "$out/clash.net" &&
   grep -q '^loss_2 = mse_loss(loss, labels_2);$' "$out/clash.net" &&
   "$REMAT" "$out/clash.net" >/dev/null 2>>"$out/x.err"; then
	ok "--loss beside a model's own 'labels' and 'loss': labels_2, loss_2"
else
	notok "--loss beside a model's own 'labels' and 'loss'"; sed 's/^/# /' "$out/x.err" | head -3
fi

# -D scales a symbolic batch, and --accumulate divides it.
p4=$("$REMAT" --bytes $(args mlp_dynbatch) | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p')
p64=$("$REMAT" --bytes --import onnx --loss cross_entropy -Dbatch=64 "$dir/mlp_dynbatch.onnx" |
      sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p')
if [ -n "$p4" ] && [ -n "$p64" ] && [ "$p64" -gt "$p4" ] &&
   "$REMAT" --import onnx --loss cross_entropy -Dbatch=64 --accumulate 4 \
       "$dir/mlp_dynbatch.onnx" >/dev/null 2>"$out/acc.err"; then
	ok "-Dbatch: peak $p4 bytes at 4, $p64 at 64; --accumulate 4 runs"
else
	notok "-Dbatch / --accumulate"; sed 's/^/# /' "$out/acc.err" | head -3
fi

# An inference export imports, with a note.
if "$REMAT" $(args convbn_eval) 2>&1 >/dev/null | grep -q "looks like an inference export" &&
   ! "$REMAT" $(args resnet18) 2>&1 >/dev/null | grep -q "inference export"; then
	ok "an inference export gets a note; a training export does not"
else
	notok "the inference-export note"
fi

# --emit-net writes a def per repeated block (named by the exporter's
# node scopes) and calls it per occurrence; analyzing the file gives the
# import's bytes at -O0 and -O2 (JSON), which are the flat translation's
# (the -O0 peaks docs/onnx.md gives for ResNet-18 and GPT-2).
# defs_case NAME DEF OCCURRENCES PEAK
defs_case() {
	f=$1 def=$2 n=$3 want=$4 o="$out/defs-$1" same=1
	for lv in 0 2; do
		"$REMAT" -O$lv --import onnx --loss cross_entropy --emit-net "$o.net" --json \
			"$dir/$f.onnx" >"$o-O$lv.imp.json" 2>"$o.err" &&
		"$REMAT" -O$lv --json "$o.net" >"$o-O$lv.net.json" 2>>"$o.err" &&
		cmp -s "$o-O$lv.imp.json" "$o-O$lv.net.json" || same=0
	done
	got=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' "$o-O0.net.json" | head -1)
	if [ $same = 1 ] && [ "$(grep -c "^def $def(" "$o.net")" = 1 ] &&
	   [ "$(grep -c "^[a-zA-Z0-9_]* = $def(.*);   # " "$o.net")" = "$n" ] &&
	   grep -q "^# $n instances: " "$o.net" && [ "$got" = "$want" ]; then
		ok "$f: --emit-net writes def $def, called $n times; the same bytes at -O0 and -O2 (peak $got)"
	else
		notok "$f: defs in --emit-net (same=$same, peak ${got:-?}, want $want)"
		sed 's/^/# /' "$o.err" | head -5
	fi
}
defs_case resnet18 layer1_block 2 225289600
defs_case gpt2_tiny blocks_block 2 539904
defs_case vit_b_16 encoder_layer_block 12 1399360640
# the def's own params are declared inside it, without the instance prefix
if grep -q '^  param conv1_weight : f32\[64, 64, 3, 3\];$' "$out/defs-resnet18.net" &&
   ! grep -q '^param layer1_[01]_' "$out/defs-resnet18.net" &&
   grep -q '^param layer2_0_conv1_weight' "$out/defs-resnet18.net"; then
	ok "resnet18: a def declares its instance's params (layer2, not repeated, stays flat)"
else
	notok "resnet18: params of the def"
fi

# BatchNorm running statistics are buffers: no grad, not parameters, but
# resident: the peak is that of the model without them plus their bytes.
rs=$(sed -n "s/^resnet18 [0-9]* \([0-9]*\)$/\1/p" "$dir/params.txt")
if "$REMAT" --import onnx --loss cross_entropy --emit-net "$out/r18.net" "$dir/resnet18.onnx" >/dev/null &&
   [ "$(grep -c 'running_[a-z]* : f32\[[0-9]*\] buffer;$' "$out/r18.net")" = 36 ] &&
   grep -v ' buffer;$' "$out/r18.net" >"$out/r18-nobuf.net" &&
   a=$("$REMAT" --bytes "$out/r18.net" | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p') &&
   b=$("$REMAT" --bytes "$out/r18-nobuf.net" | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p') &&
   [ -n "$a" ] && [ -n "$b" ] && [ "$a" = "$((b + rs))" ] &&
   "$REMAT" --json "$out/r18.net" | grep -q "\"buffers\": 9600, \"buffer_bytes\": $rs,"; then
	ok "BatchNorm running statistics: 40 buffers (4 in a def called twice), not parameters, in the peak ($b + $rs = $a bytes)"
else
	notok "BatchNorm running statistics as buffers"
fi

# Buffers need no gradient (the weights beside them do).
if "$REMAT" --dump-ir "$out/r18.net" >"$out/r18.ir" 2>&1 &&
   [ "$(grep -c '^[a-z0-9_.]*running_[a-z]* op=param .* grad=no ' "$out/r18.ir")" = 40 ] &&
   [ "$(grep -c 'bn[0-9]_weight op=param .* grad=yes ' "$out/r18.ir")" = 17 ]; then
	ok "BatchNorm running statistics need no gradient"
else
	notok "BatchNorm running statistics and gradients"
fi

[ $failed -eq 0 ] && rm -rf "$out"
exit $failed
