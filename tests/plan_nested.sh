#!/bin/sh
# tests/plan_nested.sh -- -O2 with no recompute cap (and BERT at the
# default cap) on chains whose activations dominate: the nested chain DP (passes/plan/remat_chain.c,
# docs/planner.md step 2) recomputes checkpoints from checkpoints, so the
# peak stays near the lower bound (with what lives across its step,
# docs/planning.md). Fails when the peak over the bound regresses past the
# stated limit (issue 27; measured when written: ViT B=256 1.030, LLaMA-7B
# shape B=16 1.004; before the nested DP 1.294 and 1.017 of this bound;
# BERT at the default cap 1.021, 1.050 before the nested DP's second
# background, chain_background_own, and its trimmed plans, nest_trim).
# Under ZeRO-3 the bound is the sharded one, with the gradient shards a
# bucket may have made before the step (baseline.c, bucket_across): LLaMA
# at 2 ranks meets it exactly (1.042 of the bound without that term), GPT-2
# at 8 ranks ends at 1.007 at the default cap (1.013 before nested plans
# were trimmed under data parallelism), LLaMA at 8 ranks at 1.040 (1.050
# before the nested pools' best 4, not 2, were reordered) and ViT at 8
# ranks at 1.071 without a cap (1.468 of the old bound); with the final
# reordering's long recompute chains (docs/planner.md, step 6), 1.021 and
# 1.061.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
cd "$SRCDIR" || exit 99
echo "1..7"
i=0
fails=0
check() { # check LIMIT CAP NAME ARGS...
	limit=$1 cap=$2 name=$3
	shift 3
	i=$((i + 1))
	out=$("$REMAT" -O2 --max-recompute "$cap" "$@" 2>&1)
	peak=$(printf '%s\n' "$out" | sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p')
	lb=$(printf '%s\n' "$out" | sed -n 's/^  lower bound: .*(\([0-9]*\) bytes).*/\1/p')
	if [ -z "$peak" ] || [ -z "$lb" ]; then
		echo "not ok $i - $name: no peak or lower bound in the report"
		printf '%s\n' "$out" | sed 's/^/# /'
		fails=$((fails + 1))
		return
	fi
	ratio=$(awk -v p="$peak" -v l="$lb" 'BEGIN { printf "%.4f", p / l }')
	if awk -v r="$ratio" -v m="$limit" 'BEGIN { exit !(r <= m) }'; then
		echo "ok $i - $name: peak $peak / bound $lb = $ratio <= $limit"
	else
		echo "not ok $i - $name: peak $peak / bound $lb = $ratio > $limit"
		fails=$((fails + 1))
	fi
}
check 1.05 inf "ViT B=256" examples/vit.net -DB=256
check 1.01 inf "LLaMA-7B shape B=16" examples/llama.net -DD=4096 -DH=32 -DL=32 \
	-DF=11008 -DS=4096 -DB=16
check 1.025 1 "BERT at the default cap" examples/bert.net
check 1.0 1 "LLaMA, 2 ranks, ZeRO-3, default cap" examples/llama.net --ranks 2 --zero 3
check 1.01 1 "GPT-2, 8 ranks, ZeRO-3, default cap" examples/gpt2.net --ranks 8 --zero 3
check 1.025 inf "LLaMA, 8 ranks, ZeRO-3" examples/llama.net --ranks 8 --zero 3
check 1.065 inf "ViT, 8 ranks, ZeRO-3" examples/vit.net --ranks 8 --zero 3
[ "$fails" -eq 0 ]
