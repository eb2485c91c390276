#!/bin/sh
# tests/bench/baselines.sh -- `make bench-baselines`: issue 9's table. For
# each network, the -O0 peak, sqrt(n) checkpointing (-O1), per-def
# checkpointing, -O2 at the default cap and the lower bound, in G = 10^9
# bytes, with each baseline's recompute as a share of the forward FLOPs and
# -O2's time. Numbers come from `remat -O2 --json` (its "baselines" object).
set -u
: "${REMAT:?}" "${SRCDIR:?}"
g() { awk -v b="$1" 'BEGIN { printf "%.3f", b / 1e9 }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", b ? 100 * a / b : 0 }'; }
field() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" | head -1; }
printf '| %-42s | %7s | %14s | %14s | %7s | %7s | %6s |\n' network -O0 "sqrt(n) (rec)" "per-def (rec)" -O2 bound "-O2 s"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' -------------------------------------------- --------- ---------------- ---------------- --------- --------- --------
row() {
	label=$1; shift
	t0=$(date +%s.%N)
	"$REMAT" -O2 --json "$@" >/tmp/remat-bl.$$ 2>/dev/null || { echo "| $label | fail |"; return; }
	t1=$(date +%s.%N)
	j=/tmp/remat-bl.$$
	peak=$(field peak_bytes <"$j")
	lb=$(field lower_bound_bytes <"$j")
	fwd=$(sed -n 's/.*"flops": {"forward": \([0-9]*\).*/\1/p' "$j")
	bl=$(grep -A1 '"baselines"' "$j" | tr -d '\n')
	o0=$(echo "$bl" | sed -n 's/.*"O0": {"peak_bytes": \([0-9]*\).*/\1/p')
	sq=$(echo "$bl" | sed -n 's/.*"sqrt_n": {"peak_bytes": \([0-9]*\), "recompute": \([0-9]*\).*/\1 \2/p')
	pd=$(echo "$bl" | sed -n 's/.*"per_def": {"peak_bytes": \([0-9]*\), "recompute": \([0-9]*\).*/\1 \2/p')
	set -- $sq; sqs="-"; [ $# -eq 2 ] && sqs="$(g "$1") ($(pct "$2" "$fwd"))"
	set -- $pd; pds="-"; [ $# -eq 2 ] && pds="$(g "$1") ($(pct "$2" "$fwd"))"
	printf '| %-42s | %7s | %14s | %14s | %7s | %7s | %6.2f |\n' "$label" "$(g "$o0")" "$sqs" "$pds" \
		"$(g "$peak")" "$(g "$lb")" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
	rm -f "$j"
}
row "GPT-2 small (examples/gpt2.net)" "$SRCDIR/examples/gpt2.net"
row "LLaMA-style, 16 layers, B=8, accumulate 2" -DB=8 --accumulate 2 "$SRCDIR/examples/llama.net"
row "LLaMA-style (examples/llama.net)" "$SRCDIR/examples/llama.net"
row "1000-layer MLP relu(x @ w), B=2048 D=512" "$SRCDIR/tests/bench/mlp1000.net"
row "BERT-base (tests/bench/bert_base.net)" "$SRCDIR/tests/bench/bert_base.net"
row "ResNet-50 (examples/resnet50.net)" "$SRCDIR/examples/resnet50.net"
row "U-Net (examples/unet.net)" "$SRCDIR/examples/unet.net"
row "ViT-B/16 (examples/vit.net)" "$SRCDIR/examples/vit.net"
row "DenseNet-121 (examples/densenet.net)" "$SRCDIR/examples/densenet.net"
row "MobileNetV2 (examples/mobilenetv2.net)" "$SRCDIR/examples/mobilenetv2.net"
