#!/bin/sh
# tests/budget_sweep.sh -- --budget from 90% down to 50% of the way from
# the lower bound to the -O0 peak on the training examples: recompute
# never falls as the budget falls (a larger budget's plan is the cheapest
# that fits it), and is never above sqrt(n) or per-def checkpointing where
# their peak fits the budget (tests/bench/budget_sweep.py; issue 27).
set -u
: "${REMAT:?}" "${SRCDIR:?}"
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 77; }
cd "$SRCDIR" || exit 99
echo "1..1"
if python3 tests/bench/budget_sweep.py "$REMAT" gpt2=examples/gpt2.net llama=examples/llama.net \
	bert=examples/bert.net vit=examples/vit.net moe=examples/moe.net \
	mlp=tests/bench/mlp1000.net:-DL=200 >"${BUILDDIR:-.}/tests/budget_sweep.out" 2>&1; then
	echo "ok 1 - budget sweeps: monotone, at or below the baselines that fit"
else
	echo "not ok 1 - budget sweeps"
	sed 's/^/# /' "${BUILDDIR:-.}/tests/budget_sweep.out"
	exit 1
fi
