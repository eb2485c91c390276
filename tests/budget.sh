#!/bin/sh
# tests/budget.sh -- --budget agrees with -O2 through the command line
# (issue 9): on tiny GPT-2, BERT and LLaMA a budget of exactly the -O2 peak
# fits (exit 0, peak <= budget), a larger one never recomputes more, and
# a budget below every peak exits 3 naming the smallest peak in bytes and
# GiB, with nothing on stdout. Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
cd "$SRCDIR" || exit 99
i=0
ok() { i=$((i + 1)); echo "ok $i - $1"; }
bad() { i=$((i + 1)); echo "not ok $i - $1"; }
num() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" | head -1; }
echo "1..12"
for case in "examples/gpt2.net -DB=2 -DS=16 -DD=32 -DH=2 -DL=4 -DV=64" \
            "tests/bench/bert_base.net -DB=2 -DS=16 -DD=32 -DH=2 -DL=3 -DV=64" \
            "examples/llama.net -DB=2 -DS=16 -DD=32 -DH=2 -DL=4 -DF=64 -DV=64"; do
	# shellcheck disable=SC2086
	set -- $case
	name=$1
	p=$("$REMAT" -O2 --json "$@" | num peak_bytes)
	out=$("$REMAT" --budget "${p}B" --json "$@")
	rc=$?
	got=$(echo "$out" | num peak_bytes)
	rec=$(echo "$out" | sed -n 's/.*"recompute": \([0-9]*\)}.*/\1/p' | head -1)
	if [ $rc -eq 0 ] && [ "$got" -le "$p" ]; then ok "$name: budget = -O2 peak $p fits"
	else bad "$name: budget = -O2 peak $p: exit $rc, peak $got"; fi
	out2=$("$REMAT" --budget "$((p * 2))B" --json "$@")
	rec2=$(echo "$out2" | sed -n 's/.*"recompute": \([0-9]*\)}.*/\1/p' | head -1)
	if [ "$rec2" -le "$rec" ]; then ok "$name: twice the budget recomputes no more"
	else bad "$name: twice the budget recomputes $rec2 > $rec"; fi
	"$REMAT" --budget 1B "$@" >"${TMPDIR:-/tmp}/remat-budget.$$" 2>"${TMPDIR:-/tmp}/remat-budget.$$.err"
	rc=$?
	msg=$(cat "${TMPDIR:-/tmp}/remat-budget.$$.err")
	if [ $rc -eq 3 ] && [ ! -s "${TMPDIR:-/tmp}/remat-budget.$$" ]; then ok "$name: budget 1 exits 3"
	else bad "$name: budget 1: exit $rc"; fi
	if echo "$msg" | grep -q '^error: no schedule fits in 1 bytes; smallest peak found: [0-9]* bytes ([0-9.]* GiB)$'; then
		ok "$name: the message names the smallest peak in bytes and GiB"
	else bad "$name: message '$msg'"; fi
	rm -f "${TMPDIR:-/tmp}/remat-budget.$$" "${TMPDIR:-/tmp}/remat-budget.$$.err"
done
