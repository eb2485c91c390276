#!/bin/sh
# tests/pytorch/check.sh -- make check-pytorch: the PyTorch peer harness on
# every example at small, activation-dominated dims. Skips (77) without
# Debian's python3-torch or a C compiler. Prints the table of the README.
# Tolerances: -O0 and the --emit-torch plan within 0.1% (issue 25), every
# example (issue 25, item 4). Output is TAP (make
# check runs it through tap-driver.sh); a missing torch skips the whole
# plan (1..0 # SKIP), and exit 77 says the same to other callers.
PY=/usr/bin/python3
: "${REMAT:=./remat}" "${SRCDIR:=.}" "${CC:=cc}"
$PY -c 'import torch' 2>/dev/null || { echo "1..0 # SKIP no python3-torch"; exit 77; }
. "$SRCDIR/tests/pytorch/shim.sh"
ex=$SRCDIR/examples
fail=0 i=0
echo "1..24"
run() {
	i=$((i + 1))
	if line=$(LD_PRELOAD=$tmp/allocshim.so $PY -W ignore "$SRCDIR/tests/pytorch/harness.py" "$REMAT" "$@" 2>&1); then
		echo "ok $i - $line"
	else
		echo "not ok $i - $line"
		fail=1
	fi
}
for mode in "--tol 0.001" "--emit-torch --tol 0.001"; do
	run $ex/tiny.net -DB=64 -DIN=64 -DHID=256 -DOUT=16 $mode
	run $ex/mlp.net -DB=64 -DHW=8 -DHID=256 -DK=32 $mode
	run $ex/gpt2.net -DB=4 -DS=64 -DD=64 -DH=4 -DL=2 -DV=512 $mode
	run $ex/llama.net -DB=2 -DS=64 -DD=64 -DH=4 -DL=2 -DF=128 -DV=512 $mode
	run $ex/resnet50.net -DB=4 -DHW=32 -DW=8 -DK=10 $mode
	run $ex/unet.net -DB=2 -DHW=32 -DW=8 $mode
	run $ex/vit.net -DB=2 -DHW=32 -DP=8 -DD=32 -DH=2 -DL=2 -DF=64 -DK=10 $mode
	run $ex/mobilenetv2.net -DB=2 -DHW=32 -DK=10 $mode
	run $ex/moe.net -DB=2 -DS=16 -DD=16 -DH=2 -DL=2 -DV=64 -DE=4 -DK=2 $mode
	run $ex/bert.net -DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64 $mode
	run $ex/densenet.net -DB=2 -DHW=32 -DG=8 -DK=10 $mode
	run $ex/lora.net -DB=2 -DS=32 -DD=32 -DH=2 -DL=2 -DV=64 -DR=4 $mode
done
exit $fail
