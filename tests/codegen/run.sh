#!/bin/sh
# tests/codegen/run.sh -- end to end, for make check (TAP). Every example in
# examples/*.net, at its tiny -D flags (the table below, from
# examples/README.md), is emitted with `remat -o` at -O0, -O1, -O2 and under
# a --budget that forces recomputation where any schedule can lower the peak
# (0.8 x the -O0 peak; when nothing fits, the smallest peak remat reports).
# Each program is compiled in host mode (-Wall -Werror) and run in tracked
# and arena modes; a run passes when the measured peak equals the prediction
# (exit 0), the arena holds the peak, and its loss, dirgrad and gradient
# checksums agree with the -O0 tracked run (close()). Every -O2 program
# also runs under -fsanitize=address,undefined with leak checking, output
# compared but for the timing line (skipped where $CC lacks them). Further
# tests: the predicted peak of tiny.net equals the JSON report's peak_bytes
# and its arena_bytes; some schedules really recompute; and, when $NVCC is
# set, each example's -O2 program compiles as CUDA (one level per example
# as nvcc takes ~20 s a file; run in the background meanwhile), gpt2's
# linked with cuBLAS too (not run: no GPU here).
# Outputs go to $BUILDDIR/tests/out/codegen, removed when every test passes.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
CC=${CC:-cc}
NVCC=${NVCC:-}
out="$BUILDDIR/tests/out/codegen"
rm -rf "$out"
mkdir -p "$out" || exit 99

# tiny_flags EXAMPLE: its tiny -D flags (examples/README.md).
. "$SRCDIR/tests/tiny_flags.sh"

nets=$(cd "$SRCDIR/examples" && ls *.net)
nnets=$(echo "$nets" | wc -w)
echo "1..$((nnets * 6 + 7))"
i=0
nrec=0

failed=0
ok() { i=$((i + 1)); echo "ok $i - $*"; }
notok() { i=$((i + 1)); failed=1; echo "not ok $i - $*"; }
field() { sed -n "s/^$1: \([0-9-]*\).*/\1/p" "$2"; }
jfield() { tr ',' '\n' <"$2" | sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" | head -1; }
sums() { grep -E '^(checksum|loss:|dirgrad:)' "$1"; }
# Whether the results in $1 and $2 agree: the same lines, each number
# within 1e-5 of the other, relatively. The levels are bit-identical
# (tests/bitident.sh holds them to that); the tolerance serves the
# comparison of the fast host kernels with the plain ones below, which sum
# a matmul's per-head calls in another order. With $3 = line, each number within 1e-5 of its
# line's numbers together: a gradient's sum may cancel to near 0 while its
# weighted sum does not.
close() {
	sums "$1" >"$1.sums"; sums "$2" >"$2.sums"
	[ "$(wc -l <"$1.sums")" = "$(wc -l <"$2.sums")" ] || return 1
	paste -d '|' "$1.sums" "$2.sums" | awk -F '|' -v line="${3:-}" '
	function abs(v) { return v < 0 ? -v : v }
	function num(v) { return v ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ }
	{
		n = split($1, x, " "); m = split($2, y, " ")
		if (n != m) bad = 1
		scale = 0
		for (k = 1; k <= n; k++)
			if (num(x[k]) && num(y[k])) scale += abs(x[k]) + abs(y[k])
		for (k = 1; k <= n; k++) {
			if (x[k] == y[k]) continue
			tol = line == "line" ? scale : abs(x[k]) + abs(y[k])
			if (!num(x[k]) || abs(x[k] - y[k]) > 1e-5 * tol)
				bad = 1
		}
	}
	END { exit bad }'
}

# Emits, compiles and runs one program; $1 = test name, $2 = file stem,
# the rest: remat arguments. Compares with $ref when it is set.
run_one() {
	name=$1 stem=$2
	shift 2
	if ! "$REMAT" "$@" -o "$stem.cu" >"$stem.report" 2>"$stem.err"; then
		notok "$name: remat failed"; sed 's/^/# /' "$stem.err" | head -10; return 1
	fi
	if ! $CC -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST "$stem.cu" -o "$stem" -lm \
	     2>>"$stem.err"; then
		notok "$name: host compile failed"; sed 's/^/# /' "$stem.err" | head -20; return 1
	fi
	for m in tracked arena; do
		if ! "$stem" --$m >"$stem.$m" 2>>"$stem.err"; then
			notok "$name: --$m: measured peak differs from the prediction"
			sed 's/^/# /' "$stem.err" "$stem.$m" | grep -v checksum | head -20
			return 1
		fi
	done
	pred=$(field "predicted peak" "$stem.arena") arena=$(field arena "$stem.arena")
	if [ -z "$pred" ] || [ -z "$arena" ] || [ "$arena" -lt "$pred" ]; then
		notok "$name: arena ${arena:-?} bytes < peak ${pred:-?} bytes"; return 1
	fi
	if [ "$(sums "$stem.tracked")" != "$(sums "$stem.arena")" ]; then
		notok "$name: tracked and arena results differ"; return 1
	fi
	if [ -n "${ref:-}" ] && ! close "$stem.tracked" "$ref"; then
		notok "$name: results differ from -O0"
		diff "$ref" "$stem.tracked" | grep -E '^[<>] (checksum|loss|dirgrad)' | sed 's/^/# /' | head -10
		return 1
	fi
	rec=$(grep -c '^	/\* step [0-9]*: recompute ' "$stem.cu")
	[ "$rec" -gt 0 ] && nrec=$((nrec + 1))
	ok "$name (peak $pred B, arena $arena B, $rec recompute steps)"
}

# Everything first at -O2 so that nvcc can start on those files at once.
for net in $nets; do
	ex=${net%.net}
	flags=$(tiny_flags "$ex") || flags=UNKNOWN
	[ "$flags" = UNKNOWN ] && continue
	# shellcheck disable=SC2086
	"$REMAT" -O2 $flags "$SRCDIR/examples/$net" -o "$out/$ex-nv.cu" >/dev/null 2>&1
done
if [ -n "$NVCC" ]; then
	(for net in $nets; do
		ex=${net%.net}
		# gpt2 (its matmuls on cuBLAS, f16 on the tensor cores): a program
		if [ $ex = gpt2 ]; then link="-o $out/$ex-nv -lcublas"; else link="-c -o $out/$ex-nv.o"; fi
		# shellcheck disable=SC2086
		if [ -f "$out/$ex-nv.cu" ] &&
		   "$NVCC" -fmad=false -x cu "$out/$ex-nv.cu" $link >"$out/$ex-nv.log" 2>&1; then
			echo ok >"$out/$ex-nv.status"
		else
			echo fail >"$out/$ex-nv.status"
		fi
	done) &
	nvpid=$!
fi

for net in $nets; do
	ex=${net%.net}
	if ! flags=$(tiny_flags "$ex"); then
		for l in -O0 -O1 -O2 --budget; do
			notok "$ex $l: no tiny flags in tests/codegen/run.sh"
		done
		continue
	fi
	ref=
	for o in 0 1 2; do
		# shellcheck disable=SC2086
		run_one "$ex -O$o" "$out/$ex-O$o" -O$o $flags "$SRCDIR/examples/$net" || o=fail
		[ $o = 0 ] && ref="$out/$ex-O0.tracked"
	done
	# A budget below the -O0 peak, or the smallest peak remat can reach.
	peak=$(field "predicted peak" "$out/$ex-O0.tracked")
	budget=$(( ${peak:-0} * 4 / 5 ))
	# shellcheck disable=SC2086
	# (sizes in plain bytes say "B": a bare number under 1 MiB is refused)
	"$REMAT" --budget ${budget}B $flags "$SRCDIR/examples/$net" >/dev/null 2>"$out/$ex-b.probe"
	low=$(sed -n 's/.*smallest peak found: \([0-9]*\) bytes.*/\1/p' "$out/$ex-b.probe")
	[ -n "$low" ] && budget=$low
	# shellcheck disable=SC2086
	run_one "$ex --budget $budget" "$out/$ex-budget" --budget ${budget}B $flags \
		"$SRCDIR/examples/$net"
done

# Wide calls (tests/codegen/wide.net): a concat of 8 inputs, a custom op of
# 10 arguments, at -O0 and -O2 with the same results.
ref=
run_one "wide.net -O0" "$out/wide-O0" -O0 "$SRCDIR/tests/codegen/wide.net" &&
	ref="$out/wide-O0.tracked"
run_one "wide.net -O2" "$out/wide-O2" -O2 "$SRCDIR/tests/codegen/wide.net"

# The program predicts exactly what the JSON report says.
t="$out/tiny-json"
if "$REMAT" --json "$SRCDIR/examples/tiny.net" -o "$t.cu" >"$t.json" 2>"$t.err" &&
   $CC -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST "$t.cu" -o "$t" -lm 2>>"$t.err" &&
   "$t" --arena >"$t.out" 2>>"$t.err"; then
	jp=$(jfield peak_bytes "$t.json") ja=$(jfield arena_bytes "$t.json")
	pp=$(field "predicted peak" "$t.out") pa=$(field arena "$t.out")
	if [ -n "$jp" ] && [ "$jp" = "$pp" ] && [ "$ja" = "$pa" ] && [ "$ja" -ge "$jp" ]; then
		ok "tiny.net: program predicts peak_bytes $jp and arena_bytes $ja of --json"
	else
		notok "tiny.net: JSON peak ${jp:-?} arena ${ja:-?}, program ${pp:-?} ${pa:-?}"
	fi
else
	notok "tiny.net --json -o"; sed 's/^/# /' "$t.err" | head -10
fi

if [ $nrec -gt 0 ]; then
	ok "recomputation exercised: $nrec schedules with recompute steps"
else
	notok "no schedule recomputes anything: the tiny sizes test nothing"
fi

# Every example's -O2 program under AddressSanitizer, UBSan and the leak
# checker, in both modes: no report, no leak, and the full output (flushed
# before exit) equal to the plain build's. Skipped where $CC lacks them.
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
if printf 'int main(void){return 0;}\n' >"$out/san.c" &&
   $CC $san "$out/san.c" -o "$out/san" 2>/dev/null && "$out/san" 2>/dev/null; then
	have_san=yes
else
	have_san=no
fi
for net in $nets wide.net; do
	ex=${net%.net} stem="$out/${net%.net}-O2"
	if [ $have_san = no ]; then
		ok "$ex -O2 under ASan+UBSan+LSan # SKIP $CC lacks the sanitizers"
		continue
	fi
	# shellcheck disable=SC2086
	if ! $CC -x c -std=c11 -O1 -g -Wall -Werror -DREMAT_HOST $san "$stem.cu" -o "$stem-san" \
	     -lm 2>"$stem-san.err"; then
		notok "$ex -O2: sanitized compile failed"; sed 's/^/# /' "$stem-san.err" | head -10
		continue
	fi
	bad=
	for m in tracked arena; do
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
			"$stem-san" --$m >"$stem-san.$m" 2>>"$stem-san.err" || bad="$bad $m:exit"
		[ "$(grep -v '^time ' "$stem-san.$m")" = "$(grep -v '^time ' "$stem.$m")" ] ||
			bad="$bad $m:output"
	done
	if [ -z "$bad" ]; then
		ok "$ex -O2 under ASan+UBSan+LSan: clean, no leak, same output"
	else
		notok "$ex -O2 under ASan+UBSan+LSan:$bad"; sed 's/^/# /' "$stem-san.err" | head -20
	fi
done

# The host's fast kernels (matmuls as calls of the GEMM interface,
# implicit-GEMM convolutions) sum in the plain kernels' order, except where a
# matmul's summed axes are not one strided axis (a reshape of permuted
# heads) and its calls add into an f32 result in turn: the -O2 programs of
# the examples with matmuls and convolutions (strided, 1x1, depthwise),
# built with -DRT_NAIVE (the plain kernels), print the same loss, dirgrad
# and checksums within rounding (tests/unit/test_gemm checks each matmul
# form bit for bit where the order is the same).
bad=
for ex in gpt2 resnet50 mobilenetv2 unet moe bert llama lora; do
	stem="$out/$ex-O2"
	[ -f "$stem.cu" ] && [ -f "$stem.tracked" ] || { bad="$bad $ex(missing)"; continue; }
	if $CC -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST -DRT_NAIVE "$stem.cu" \
	       -o "$stem-naive" -lm 2>"$stem-naive.err" &&
	   "$stem-naive" --tracked >"$stem-naive.tracked" 2>>"$stem-naive.err" &&
	   close "$stem-naive.tracked" "$stem.tracked" line &&
	   [ "$(sums "$stem.tracked" | wc -l)" -gt 2 ]; then
		:
	else
		bad="$bad $ex"
	fi
done
if [ -z "$bad" ]; then
	ok "host fast kernels = plain kernels (-DRT_NAIVE) within rounding: gpt2 resnet50 mobilenetv2 unet moe bert llama lora"
else
	notok "host fast kernels differ from the plain ones:$bad"
fi

# A source path with "*/", a quote and a newline is embedded safely.
odd="$out/we*/ird \"dir
"
mkdir -p "$odd" && cp "$SRCDIR/examples/tiny.net" "$odd/t.net"
if "$REMAT" -o "$out/odd.cu" "$odd/t.net" >/dev/null 2>"$out/odd.err" &&
   $CC -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST "$out/odd.cu" -o "$out/odd" -lm \
	2>>"$out/odd.err" && "$out/odd" >/dev/null 2>>"$out/odd.err"; then
	ok "a path with '*/', a quote and a newline: the program compiles and runs"
else
	notok "a path with '*/', a quote and a newline"; sed 's/^/# /' "$out/odd.err" | head -10
fi

[ -n "$NVCC" ] && wait "$nvpid"
for net in $nets; do
	ex=${net%.net}
	if [ -z "$NVCC" ]; then
		ok "$ex -O2: nvcc compile # SKIP no nvcc"
	elif [ "$(cat "$out/$ex-nv.status" 2>/dev/null)" = ok ] && [ $ex = gpt2 ]; then
		ok "$ex -O2: compiles with nvcc and links with cuBLAS"
	elif [ "$(cat "$out/$ex-nv.status" 2>/dev/null)" = ok ]; then
		ok "$ex -O2: compiles with nvcc"
	else
		notok "$ex -O2: nvcc failed"; sed 's/^/# /' "$out/$ex-nv.log" 2>/dev/null | head -10
	fi
done
[ $failed = 0 ] && rm -rf "$out"
exit 0
