#!/bin/sh
# tests/cli.sh -- command-line habits: misspelt options get a suggestion,
# sizes and names are case-blind, a bare small number is not a size, and
# flags that the chosen level or output makes moot are warned about. Each
# case gives the expected exit status, the exact stderr, and the arguments
# (all run on examples/tiny.net). Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
out="$BUILDDIR/tests/out/cli"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
net=examples/tiny.net
n=0
fails=0
check() {   # check RC STDERR ARGS...
	want_rc=$1 want_err=$2
	shift 2
	n=$((n + 1))
	"$REMAT" "$@" "$net" >"$out/$n.stdout" 2>"$out/$n.err"
	rc=$?
	printf '%s' "$want_err" >"$out/$n.want"
	[ -n "$want_err" ] && printf '\n' >>"$out/$n.want"
	if [ $rc -ne "$want_rc" ]; then
		echo "not ok $n - $*: exit status $rc, expected $want_rc"
		sed 's/^/# /' "$out/$n.err"
	elif ! diff -u "$out/$n.want" "$out/$n.err" >"$out/$n.diff"; then
		echo "not ok $n - $*: stderr differs"
		sed 's/^/# /' "$out/$n.diff"
	else
		echo "ok $n - $*"
	fi
}
try='Try '\''remat --help'\'' for more information.'
echo "1..28"
check 2 "remat: unknown option '--bugdet' (did you mean '--budget'?)
$try" --bugdet 1GiB
check 2 "remat: unknown option '--max-recompte' (did you mean '--max-recompute'?)
$try" --max-recompte=2
check 2 "remat: unknown option '--jsn' (did you mean '--json'?)
$try" --jsn
check 2 "remat: unknown option '--frobnicate'
$try" --frobnicate
check 0 "" --budget 80gb
check 0 "" --budget 80GIB
check 0 "" --max-batch 4mib
check 2 "remat: --budget 80: a size needs a unit (e.g. 80GiB, 80GB, or 80B for bytes)
$try" --budget 80
check 3 "error: no schedule fits in 80 bytes; smallest peak found: 2816 bytes (0.00 GiB)" --budget 80B
check 0 "" --budget 1048576
check 0 "" --optimizer AdamW --precision MIXED
check 0 "remat: warning: --max-recompute has no effect at -O0 (it caps -O2 and -O3)" \
	--max-recompute 2
check 0 "remat: warning: --max-recompute has no effect at -O1 (it caps -O2 and -O3)" \
	-O1 --max-recompute 2
check 0 "remat: warning: --max-recompute has no effect with --budget (a budget has no recompute cap)" \
	--budget 1MiB --max-recompute 2
check 0 "remat: warning: --top has no effect with --json (it shapes the human report)" \
	--json --top 3
check 0 "" -O2 --max-recompute 2
check 2 "remat: unknown optimizer 'lino' (did you mean 'lion'?) (sgd momentum adagrad rmsprop lion adam adamw)
$try" --optimizer lino
# --gpu reads PYTORCH_CUDA_ALLOC_CONF, as PyTorch does
PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64,expandable_segments:True
export PYTORCH_CUDA_ALLOC_CONF
check 0 "" --gpu T4
PYTORCH_CUDA_ALLOC_CONF=expandable:True
check 2 "remat: PYTORCH_CUDA_ALLOC_CONF: unknown option 'expandable'
$try" --gpu T4
PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:8
check 2 "remat: PYTORCH_CUDA_ALLOC_CONF: max_split_size_mb '8': a number of MiB above 20
$try" --gpu T4
unset PYTORCH_CUDA_ALLOC_CONF
# --gpu: a preset (did you mean), or a size; --max-batch without a size
# answers for --gpu's card (tests/one_answer.sh asks the rest)
check 2 "remat: --gpu: unknown card 'A600' (did you mean 'A6000'?) (A100-40GB A100-80GB H100-80GB H200 H20 B200 RTX4090 RTX3090 A6000 L40S L40 A10 L4 T4 V100-16GB V100-32GB, or a size such as 48GiB)
$try" --gpu A600
check 0 "" --gpu 48gib
check 2 "remat: --gpu 48: a size needs a unit (e.g. 48GiB, 48GB, or 48B for bytes)
$try" --gpu 48
check 2 "remat: --max-batch needs a SIZE, or --gpu NAME|SIZE to answer for a card
$try" --max-batch
check 0 "" --max-batch --gpu T4
# --max-input caps the source (a stream such as /dev/zero never ends):
# tiny.net is 858 bytes
check 1 "examples/tiny.net: error: larger than 857 bytes, the input cap (--max-input SIZE raises it)" \
	--max-input 857B
check 0 "" --max-input 858B
check 2 "remat: --max-input: must be at least one byte
$try" --max-input 0B
