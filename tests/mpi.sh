#!/bin/sh
# tests/mpi.sh -- one rank of a data-parallel step, run as real ranks (TAP).
# Each case emits `remat --ranks N --zero Z [--offload ...] -o`, compiles it
# with mpicc -DREMAT_MPI (host mode) and runs it under `mpirun -np N`, in
# tracked and arena modes. A case passes when every rank
# - measures its peak equal to its prediction (the program exits 0 and
#   prints OK), and that prediction is remat's report for the same flags;
# - computes the loss of its own data: bit-identical to the single-process
#   program (same net and level, no --ranks) run with --data-rank R;
# - holds, after the step, the mean over the ranks of those single-process
#   gradients (the full gradient, reassembled from the shards from ZeRO 2
#   on): both checksums within 1e-4 of the larger one (the plain sum of a
#   gradient can cancel to nearly 0, where its rounding is all that is left).
# Negative controls: a program built with -DREMAT_FAULT_SUM (sums the
# gradients without averaging) must fail the gradient check; a program
# planned for 2 ranks must refuse 3, and refuse to run without MPI. When
# $NVCC is set, one program compiles as CUDA with NCCL (compile only).
# Skips (77) without mpicc and mpirun. Outputs: $BUILDDIR/tests/out/mpi,
# removed when every test passes.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
NVCC=${NVCC:-}
CC=${CC:-cc}
MPICC=${MPICC:-$(command -v mpicc)}
MPIRUN=${MPIRUN:-$(command -v mpirun)}
if [ -z "$MPICC" ] || [ -z "$MPIRUN" ]; then
	echo "1..0 # SKIP mpicc or mpirun not installed"
	exit 77
fi
# Open MPI refuses root unless told (containers, CI)
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
out="$BUILDDIR/tests/out/mpi"
rm -rf "$out"
mkdir -p "$out" || exit 99
ex="$SRCDIR/examples"
gpt2="-DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64"
llama="-DB=1 -DS=16 -DD=32 -DH=2 -DL=2 -DF=64 -DV=64"
mlp="-DB=4 -DHW=4 -DHID=16 -DK=3"
# BatchNorm running statistics: buffers, whole on every rank under ZeRO-3
mobilenet="-DB=2 -DHW=32 -DK=10"

# name | ranks | remat flags (level, dims, distribution) | example
cases="zero1-tiny|2|-O0 --zero 1|tiny
zero0-mlp|4|-O0 --zero 0 $mlp|mlp
zero2-tiny-buckets|4|-O0 --zero 2 --bucket 256B|tiny
zero2-mlp-offload|2|-O1 --zero 2 --offload optimizer $mlp|mlp
zero3-gpt2|2|-O2 --zero 3 $gpt2|gpt2
zero3-llama-offload|4|-O1 --zero 3 --offload optimizer --offload params $llama|llama
zero3-mobilenet-buffers|2|-O1 --zero 3 --offload params $mobilenet|mobilenetv2"
ncases=$(echo "$cases" | wc -l)

echo "1..$((ncases * 3 + 4))"
i=0
failed=0
ok() { i=$((i + 1)); echo "ok $i - $*"; }
notok() { i=$((i + 1)); failed=1; echo "not ok $i - $*"; }
skip() { i=$((i + 1)); echo "ok $i # SKIP $*"; }

# Runs program $1 under mpirun -np $2 with mode $3; rank r's output in $1.$3.r
mpi_run() {
	"$MPIRUN" --oversubscribe -np "$2" sh -c 'exec "$0" "$1" >"$0.$2.$OMPI_COMM_WORLD_RANK"' \
		"$1" "--$3" "$3" 2>>"$1.err" </dev/null
}

# Checksums of the mean gradient: the single-process runs $1.single.0.. of
# $2 ranks averaged, against the rank outputs $3 (a pattern); prints what
# differs, true when nothing does.
grads_match() {
	awk -v n="$2" -v ranks="$3" '
		FNR == 1 { f++ }
		f <= n && /^checksum / { name = $2; s[name] += $3 / n; w[name] += $4 / n; next }
		f > n && /checksum / {
			sub(/^rank [0-9]+: /, "")
			seen[$2] = 1
			m = abs(s[$2]) > abs(w[$2]) ? abs(s[$2]) : abs(w[$2])
			if (!($2 in s) || !close_to($3, s[$2], m) || !close_to($4, w[$2], m))
				{ print "rank output " FILENAME ": " $0 " vs mean " s[$2] " " w[$2]; bad = 1 }
		}
		function abs(x) { return x < 0 ? -x : x }
		function close_to(a, b, m) { return abs(a - b) <= 1e-4 * m + 1e-12 }
		END { for (k in s) if (!(k in seen)) { print "no checksum of " k; bad = 1 }
		      exit bad }' $(r=0; while [ $r -lt "$2" ]; do echo "$1.single.$r"; r=$((r + 1)); done) $3
}

run_case() {
	name=$1 np=$2 flags=$3 net=$4
	stem="$out/$name"
	# shellcheck disable=SC2086
	if ! "$REMAT" --ranks "$np" $flags -o "$stem.c" "$ex/$net.net" >"$stem.report" 2>"$stem.err" ||
	   ! "$MPICC" -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST -DREMAT_MPI "$stem.c" -o "$stem" -lm \
	     2>>"$stem.err"; then
		notok "$name: emit or mpicc failed"; sed 's/^/# /' "$stem.err" | head -20
		i=$((i + 2)); return
	fi
	want=$(sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p' "$stem.report")
	bad=
	for m in tracked arena; do
		mpi_run "$stem" "$np" $m || bad="$bad $m: mpirun failed;"
		r=0
		while [ $r -lt "$np" ]; do
			f="$stem.$m.$r"
			grep -q "^rank $r: OK$" "$f" 2>/dev/null || bad="$bad $m rank $r: not OK;"
			got=$(sed -n "s/^rank $r: measured peak: \([0-9]*\) bytes.*/\1/p" "$f" 2>/dev/null)
			pred=$(sed -n "s/^rank $r: predicted peak: \([0-9]*\) bytes/\1/p" "$f" 2>/dev/null)
			[ -n "$got" ] && [ "$got" = "$pred" ] && [ "$pred" = "$want" ] ||
				bad="$bad $m rank $r: measured ${got:-?}, predicted ${pred:-?}, report ${want:-?};"
			r=$((r + 1))
		done
	done
	if [ -z "$bad" ]; then
		ok "$name: $np ranks, each measured peak = predicted = report ($want bytes)"
	else
		notok "$name:$bad"; sed 's/^/# /' "$stem.err" | head -10
	fi
	# the single-process reference: same net and level, one rank per data rank
	# shellcheck disable=SC2086
	if ! "$REMAT" $(echo "$flags" | sed 's/--[a-z]* [0-9a-zA-Z]*//g') -o "$stem.single.c" \
	     "$ex/$net.net" >/dev/null 2>>"$stem.err" ||
	   ! "$CC" -x c -std=c11 -O1 -DREMAT_HOST "$stem.single.c" -o "$stem.single" -lm 2>>"$stem.err"; then
		notok "$name: single-process program failed"; i=$((i + 1)); return
	fi
	bad=
	r=0
	while [ $r -lt "$np" ]; do
		"$stem.single" --data-rank $r >"$stem.single.$r" || bad="$bad single $r failed;"
		a=$(sed -n 's/^loss: //p' "$stem.single.$r")
		b=$(sed -n "s/^rank $r: loss: //p" "$stem.tracked.$r")
		[ -n "$a" ] && [ "$a" = "$b" ] || bad="$bad rank $r loss $b, single $a;"
		r=$((r + 1))
	done
	if [ -z "$bad" ]; then
		ok "$name: each rank's loss is its data's single-process loss"
	else
		notok "$name:$bad"
	fi
	if diff=$(grads_match "$stem" "$np" "$stem.tracked.*"); then
		ok "$name: every rank holds the mean of the single-process gradients"
	else
		notok "$name: gradients differ"; echo "$diff" | head -5 | sed 's/^/# /'
	fi
}

echo "$cases" | {
	# nvcc takes a while: the CUDA build (ZeRO-3 with both offloads, so that
	# gathers, reduce-scatters and host buffers are all in it) compiles in the
	# background meanwhile.
	nv="$out/zero3-tiny-nv"
	if [ -n "$NVCC" ]; then
		{ "$REMAT" --ranks 2 --zero 3 --offload optimizer --offload params -o "$nv.cu" \
			"$ex/tiny.net" >/dev/null &&
		  "$NVCC" -x cu -fmad=false -DREMAT_MPI $("$MPICC" --showme:compile) -c "$nv.cu" \
			-o "$nv.o"; echo $? >"$nv.status"; } >"$nv.log" 2>&1 </dev/null &
	fi
	while IFS='|' read -r name np flags net; do
		run_case "$name" "$np" "$flags" "$net"
	done
	# the negative control: a sum where the mean belongs is caught
	stem="$out/zero2-tiny-buckets"
	if ! "$MPICC" -x c -std=c11 -O1 -DREMAT_HOST -DREMAT_MPI -DREMAT_FAULT_SUM "$stem.c" \
	     -o "$stem.fault" -lm 2>>"$stem.err" || ! mpi_run "$stem.fault" 4 tracked; then
		notok "the program with a summed reduction does not build or run"
	elif grads_match "$stem" 4 "$stem.fault.tracked.*" >"$stem.fault.diff" ||
	     ! grep -q "vs mean" "$stem.fault.diff"; then
		notok "a summed (not averaged) reduction passes the gradient check"
	else
		ok "a summed (not averaged) reduction fails the gradient check"
	fi
	stem="$out/zero1-tiny"
	if "$MPIRUN" --oversubscribe -np 3 "$stem" >"$stem.np3" 2>&1 </dev/null; then
		notok "a program planned for 2 ranks runs on 3"
	elif grep -q "planned for 2 ranks, running on 3" "$stem.np3"; then
		ok "a program planned for 2 ranks refuses 3, and says so"
	else
		notok "2 ranks on 3: no message"; sed 's/^/# /' "$stem.np3" | head -5
	fi
	if "$CC" -x c -std=c11 -O1 -DREMAT_HOST "$stem.c" -o "$stem.nompi" -lm 2>>"$stem.err" &&
	   ! "$stem.nompi" >/dev/null 2>"$stem.nompi.err" &&
	   grep -q "build it with -DREMAT_MPI" "$stem.nompi.err"; then
		ok "without -DREMAT_MPI a 2-rank program refuses to run, and says so"
	else
		notok "without -DREMAT_MPI a 2-rank program runs"
	fi
	wait
	if [ -z "$NVCC" ]; then
		skip "nvcc not found: NCCL build not compiled"
	elif [ "$(cat "$nv.status" 2>/dev/null)" = 0 ]; then
		ok "a ZeRO-3 program with offload compiles as CUDA with NCCL and MPI"
	else
		notok "nvcc failed on the ZeRO-3 program"; sed 's/^/# /' "$nv.log" | head -20
	fi
	[ $failed = 0 ] && rm -rf "$out"
	exit $failed
}
