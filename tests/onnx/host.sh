#!/bin/sh
# tests/onnx/host.sh -- make bench-onnx-host: the torchvision fixtures
# (ResNet-18/50, MobileNetV2, ViT-B/16 at batch 2, 224x224) run as generated
# host programs at -O0 and -O2; each passes when the measured peak equals
# remat's prediction. Minutes per program on one core, so not in make check
# (tests/onnx.sh runs the small fixtures). Exit 77 without ONNX support.
set -u
: "${REMAT:=./remat}" "${SRCDIR:=.}" "${BUILDDIR:=.}"
CC=${CC:-cc}
dir="$SRCDIR/tests/onnx"
out="$BUILDDIR/tests/out/onnx-host"
if "$REMAT" --import onnx /dev/null 2>&1 | grep -q 'not built'; then
	echo "remat was built without protobuf-c"; exit 77
fi
mkdir -p "$out" || exit 99
failed=0
for f in ${ONNX_HOST_FIXTURES:-resnet18 resnet50 mobilenet_v2 vit_b_16}; do
	for lv in 0 2; do
		s="$out/$f-O$lv"
		t0=$(date +%s)
		if "$REMAT" -O$lv --import onnx --loss cross_entropy "$dir/$f.onnx" -o "$s.cu" >/dev/null 2>"$s.err" &&
		   $CC -x c -std=c11 -O2 -Wall -Werror -DREMAT_HOST "$s.cu" -o "$s" -lm 2>>"$s.err" &&
		   "$s" --tracked >"$s.out" 2>>"$s.err"; then
			echo "ok - $f -O$lv: measured = predicted ($(grep -E '^predicted peak' "$s.out" | head -1)), $(($(date +%s) - t0)) s"
		else
			failed=1
			echo "not ok - $f -O$lv"; sed 's/^/# /' "$s.err" "$s.out" 2>/dev/null | tail -10
		fi
	done
done
exit $failed
