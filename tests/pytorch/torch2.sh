#!/bin/sh
# tests/pytorch/torch2.sh -- the --emit-torch helper on PyTorch >= 2.4 (issue
# 25, item 3), on the CPU, with the torch of the build tree's virtual
# environment ($TORCH_VENV, default ./torch-venv; `make torch-venv` makes
# it). Skips (77) without it or with a torch older than 2.4.
# - plan_check.py: with the plan, recomputed whole and with its selective
#   policy, every gradient is bit-identical to the run without it (the RNG
#   state is kept), and the helper's aten calls match the plan's;
# - harness.py: the step's peak under the plan, whole and selective, within
#   0.1% of PEAK_WHOLE and PEAK_SELECTIVE, on the examples without
#   attention (--runtime pytorch-cpu is 1.13's CPU model, and 2.x's CPU
#   attention differs from 1.13's: docs/runtime-pytorch.md);
# - harness.py --autocast: an f32 model whose forward runs under
#   torch.autocast("cpu", bfloat16): the peak within 0.1% of
#   `--runtime pytorch-cpu --precision mixed` (the CPU's autocast lists),
#   and every forward step's bytes a measured operator boundary's; with
#   --emit-torch (whole and selective), the peak under the plan within
#   0.1% of its prediction.
# - harness.py --infer (with and without --autocast): the forward alone, as
#   under torch.inference_mode, within 0.1% of `--infer` (autocast caches no
#   weight cast there), every forward step a measured boundary, and the
#   high-water mark of the run measured the same as inference_mode's own.
# Output is TAP.
: "${REMAT:=./remat}" "${SRCDIR:=.}" "${CC:=cc}" "${TORCH_VENV:=./torch-venv}"
PY=$TORCH_VENV/bin/python
if ! [ -x "$PY" ] || ! "$PY" -c 'import sys, torch; v = torch.__version__.split("."); sys.exit((int(v[0]), int(v[1])) < (2, 4))' 2>/dev/null; then
	echo "1..0 # SKIP no torch >= 2.4 in $TORCH_VENV (make torch-venv)"
	exit 77
fi
. "$SRCDIR/tests/pytorch/shim.sh"
ex=$SRCDIR/examples
fail=0 i=0
echo "1..46"
tap() { # tap CMD...: one TAP line from the command's last output line
	i=$((i + 1))
	if line=$("$@" 2>&1); then
		echo "ok $i - $(echo "$line" | tail -1)"
	else
		echo "not ok $i - $(echo "$line" | tail -1)"
		echo "$line" | sed 's/^/# /' | tail -20
		fail=1
	fi
}
BERT="$ex/bert.net -DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64"
LORA="$ex/lora.net -DB=2 -DS=32 -DD=32 -DH=2 -DL=2 -DV=64 -DR=4"
GPT2="$ex/gpt2.net -DB=4 -DS=64 -DD=64 -DH=4 -DL=2 -DV=512"
RESNET="$ex/resnet50.net -DB=4 -DHW=32 -DW=8 -DK=10"
UNET="$ex/unet.net -DB=2 -DHW=32 -DW=8"
DENSE="$ex/densenet.net -DB=2 -DHW=32 -DG=8 -DK=10"
MOBILE="$ex/mobilenetv2.net -DB=2 -DHW=32 -DK=10"
for rt in pytorch pytorch-cpu; do
	for net in "$BERT" "$LORA" "$GPT2" "$RESNET" "$DENSE"; do
		# shellcheck disable=SC2086
		tap "$PY" -W ignore::DeprecationWarning "$SRCDIR/tests/pytorch/plan_check.py" "$REMAT" $rt $net
	done
done
for net in "$RESNET" "$UNET" "$DENSE" "$MOBILE" "$LORA"; do
	for mode in "" "--selective"; do
		# shellcheck disable=SC2086
		tap env LD_PRELOAD="$tmp/allocshim.so" "$PY" -W ignore "$SRCDIR/tests/pytorch/harness.py" \
			"$REMAT" $net --emit-torch $mode --tol 0.001
	done
done
MLP="$ex/mlp.net -DB=4 -DHW=8 -DHID=32 -DK=10"
LLAMA="$ex/llama.net -DB=2 -DS=32 -DD=64 -DH=4 -DL=2 -DF=128 -DV=256"
for net in "$MLP" "$GPT2" "$LLAMA" "$RESNET" "$UNET" "$DENSE" "$MOBILE" "$LORA"; do
	# shellcheck disable=SC2086
	tap env LD_PRELOAD="$tmp/allocshim.so" "$PY" -W ignore "$SRCDIR/tests/pytorch/harness.py" \
		"$REMAT" $net --autocast --tol 0.001
done
for net in autocast.net attn_mask.net; do
	tap env LD_PRELOAD="$tmp/allocshim.so" "$PY" -W ignore "$SRCDIR/tests/pytorch/harness.py" \
		"$REMAT" "$SRCDIR/tests/pytorch/$net" --autocast --tol 0.001
done
for net in "$MLP" "$GPT2" "$LLAMA" "$RESNET" "$UNET" "$DENSE" "$MOBILE" "$LORA" \
	"$SRCDIR/tests/pytorch/autocast.net" "$SRCDIR/tests/pytorch/attn_mask.net"; do
	# shellcheck disable=SC2086
	tap env LD_PRELOAD="$tmp/allocshim.so" "$PY" -W ignore "$SRCDIR/tests/pytorch/harness.py" \
		"$REMAT" $net --infer --autocast --tol 0.001
done
for net in "$MLP" "$RESNET"; do
	# shellcheck disable=SC2086
	tap env LD_PRELOAD="$tmp/allocshim.so" "$PY" -W ignore "$SRCDIR/tests/pytorch/harness.py" \
		"$REMAT" $net --infer --tol 0.001
done
for net in "$GPT2" "$RESNET"; do
	for mode in "" "--selective"; do
		# shellcheck disable=SC2086
		tap env LD_PRELOAD="$tmp/allocshim.so" "$PY" -W ignore "$SRCDIR/tests/pytorch/harness.py" \
			"$REMAT" $net --emit-torch $mode --autocast --tol 0.001
	done
done
exit $fail
