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
# Pipeline cases (--stages K --micro-batches M, K x N ranks: world rank w
# runs stage w / N as data rank w mod N) pass when every rank measures its
# peak equal to its prediction, that prediction being its stage's in
# remat's JSON report (pipeline.stages[].peak_bytes); the last stage's
# loss of micro-batch m is bit-identical to the single-process program
# run with --data-rank m N + r; and for each data rank r the checksums of
# its stages' gradients, summed over the stages (a tied param is held by
# two), are M times the mean of the M N single-process runs' (the
# micro-batches accumulate, the N ranks average), within 1e-4. With
# --infer, the last stage's output of each micro-batch is the single
# run's, bit for bit.
# Negative controls: a program built with -DREMAT_FAULT_SUM (sums the
# gradients without averaging) must fail the gradient check; one built
# with -DREMAT_FAULT_RECV (corrupts every received activation) must fail
# the loss check; a program planned for 2 ranks must refuse 3, a pipeline
# of 2 x 2 ranks must refuse 2, and a 2-rank program must refuse to run
# without MPI. When $NVCC is set, one sharded and one pipeline program
# compile as CUDA with NCCL (compile only).
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
zero3-tiny-whole|2|-O0 --zero 3|tiny
zero3-tiny-sharded|2|-O0 --zero 3 --shard-weights always|tiny
zero3-llama-offload|4|-O1 --zero 3 --offload optimizer --offload params $llama|llama
zero3-mobilenet-buffers|2|-O1 --zero 3 --offload params $mobilenet|mobilenetv2
zero3-llama-1rank-offload|1|-O2 --zero 3 --offload optimizer $llama|llama
zero2-mlp-accumulate-each|2|-O1 --zero 2 --accumulate=2 --grad-sync each $mlp|mlp
zero3-gpt2-accumulate-last|2|-O2 --zero 3 --accumulate=2 --grad-sync last $gpt2|gpt2"
ncases=$(echo "$cases" | wc -l)
# name | stages | ranks per stage | remat flags | example
pcases="pipe-1f1b-gpt2|2|1|-O0 --micro-batches 4 $gpt2|gpt2
pipe-gpipe-gpt2|2|1|-O2 --micro-batches 3 --schedule gpipe $gpt2|gpt2
pipe-zero1-gpt2|2|2|-O1 --micro-batches 2 --zero 1 $gpt2|gpt2
pipe-zero2-gpt2-gpipe|2|2|-O0 --micro-batches 2 --schedule gpipe --zero 2 --offload optimizer $gpt2|gpt2
pipe-zero3-llama|2|2|-O2 --micro-batches 3 --zero 3 --prefetch 1 --offload params $llama|llama
pipe-zero2-llama-1rank-offload|2|1|-O1 --micro-batches 2 --zero 2 --offload optimizer $llama|llama"
npcases=$(echo "$pcases" | wc -l)

echo "1..$((ncases * 3 + npcases * 3 + 7))"
i=0
failed=0
ok() { i=$((i + 1)); echo "ok $i - $*"; }
notok() { i=$((i + 1)); failed=1; echo "not ok $i - $*"; }
skip() { i=$((i + 1)); echo "ok $i # SKIP $*"; }

# Runs program $1 under mpirun -np $2 with mode $3; rank r's output in $1.$3.r
# (a one-rank program does not prefix its lines with "rank 0: "; they get
# it here, so that every case is read the same way)
mpi_run() {
	"$MPIRUN" --oversubscribe -np "$2" sh -c 'exec "$0" "$1" >"$0.$2.$OMPI_COMM_WORLD_RANK"' \
		"$1" "--$3" "$3" 2>>"$1.err" </dev/null || return 1
	[ "$2" -gt 1 ] || sed -i '/^rank 0: /!s/^/rank 0: /' "$1.$3.0"
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

# Runs program $1 on $2 ranks in both modes and appends to $bad what
# differs on each rank w: not OK, or measured peak, prediction and the
# report's peak (printed by the command $3 given w) not all equal.
check_ranks() {
	for m in tracked arena; do
		mpi_run "$1" "$2" $m || bad="$bad $m: mpirun failed;"
		w=0
		while [ $w -lt "$2" ]; do
			f="$1.$m.$w"
			want=$($3 $w)
			grep -q "^rank $w: OK$" "$f" 2>/dev/null || bad="$bad $m rank $w: not OK;"
			got=$(sed -n "s/^rank $w: measured peak: \([0-9]*\) bytes.*/\1/p" "$f" 2>/dev/null)
			pred=$(sed -n "s/^rank $w: predicted peak: \([0-9]*\) bytes/\1/p" "$f" 2>/dev/null)
			[ -n "$got" ] && [ "$got" = "$pred" ] && [ "$pred" = "$want" ] ||
				bad="$bad $m rank $w: measured ${got:-?}, predicted ${pred:-?}, report ${want:-?};"
			w=$((w + 1))
		done
	done
}

# The single-process reference of case $1 (flags $2, example $3): the same
# net and level without the distribution flags, as $1.single; false when
# remat or the compiler fails. A flag written --name=value stays (the
# accumulation cases' --accumulate=2: the same micro-batch shapes).
build_single() {
	# shellcheck disable=SC2086
	"$REMAT" $(echo "$2" | sed 's/--[a-z-]* [0-9a-zA-Z]*//g') -o "$1.single.c" \
	     "$ex/$3.net" >/dev/null 2>>"$1.err" &&
	"$CC" -x c -std=c11 -O1 -DREMAT_HOST "$1.single.c" -o "$1.single" -lm 2>>"$1.err"
}

# the report's peak (every rank the same) and a stage's, for check_ranks
report_peak() { sed -n 's/^peak: .*(\([0-9]*\) bytes).*/\1/p' "$stem.report"; }
stage_peak() {
	tr -d '\n' <"$stem.json" |
	sed -n "s/.*{\"stage\": $(($1 / N)),[^}]*\"peak_bytes\": \([0-9]*\).*/\1/p"
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
	want=$(report_peak)
	bad=
	check_ranks "$stem" "$np" report_peak
	if [ -z "$bad" ]; then
		ok "$name: $np ranks, each measured peak = predicted = report ($want bytes)"
	else
		notok "$name:$bad"; sed 's/^/# /' "$stem.err" | head -10
	fi
	# the single-process reference: one rank per data rank
	if ! build_single "$stem" "$flags" "$net"; then
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

# Data rank r's gradient checksums summed over the stages (the rank
# outputs $1.tracked.w, w = s N + r, of $2 stages of $3 ranks) against M
# ($4) times the mean of the M N single-process runs $1.single.0..; prints
# what differs, true when nothing does.
pipe_grads_match() {
	bad=0
	r=0
	while [ $r -lt "$3" ]; do
		files=$(s=0; while [ $s -lt "$2" ]; do echo "$1.tracked.$((s * $3 + r))"; s=$((s + 1)); done)
		singles=$(d=0; while [ $d -lt $(($4 * $3)) ]; do echo "$1.single.$d"; d=$((d + 1)); done)
		# shellcheck disable=SC2086
		awk -v n="$(($4 * $3))" -v m="$4" -v r="$r" '
			FNR == 1 { f++ }
			f <= n && /^checksum / { s[$2] += m * $3 / n; w[$2] += m * $4 / n; next }
			f > n && /checksum / { sub(/^rank [0-9]+: /, ""); gs[$2] += $3; gw[$2] += $4 }
			function abs(x) { return x < 0 ? -x : x }
			function close_to(a, b, mm) { return abs(a - b) <= 1e-4 * mm + 1e-12 }
			END {
				for (k in s) {
					mm = abs(s[k]) > abs(w[k]) ? abs(s[k]) : abs(w[k])
					if (!(k in gs)) { print "data rank " r ": no checksum of " k; bad = 1 }
					else if (!close_to(gs[k], s[k], mm) || !close_to(gw[k], w[k], mm)) {
						print "data rank " r ": " k " " gs[k] " " gw[k] " vs " s[k] " " w[k]; bad = 1
					}
				}
				exit bad
			}' $singles $files || bad=1
		r=$((r + 1))
	done
	return $bad
}

# Loss of every micro-batch on the last stage's ranks (outputs $2.w)
# against the single runs $1.single.d; $3 stages, $4 ranks, $5 M. Prints
# what differs.
pipe_losses_match() {
	r=0
	while [ $r -lt "$4" ]; do
		w=$((($3 - 1) * $4 + r))
		m=0
		while [ $m -lt "$5" ]; do
			a=$(sed -n 's/^loss: //p' "$1.single.$((m * $4 + r))")
			b=$(sed -n "s/^rank $w: loss of micro-batch $m: //p" "$2.$w")
			[ -n "$a" ] && [ "$a" = "$b" ] || echo "rank $w micro-batch $m: loss ${b:-?}, single ${a:-?}"
			m=$((m + 1))
		done
		r=$((r + 1))
	done
}

run_pipe() {
	name=$1 K=$2 N=$3 flags=$4 net=$5
	np=$((K * N))
	M=$(echo "$flags" | sed -n 's/.*--micro-batches \([0-9]*\).*/\1/p')
	stem="$out/$name"
	# shellcheck disable=SC2086
	if ! "$REMAT" --stages "$K" --ranks "$N" $flags --json -o "$stem.c" "$ex/$net.net" \
	     >"$stem.json" 2>"$stem.err" ||
	   ! "$MPICC" -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST -DREMAT_MPI "$stem.c" -o "$stem" -lm \
	     2>>"$stem.err"; then
		notok "$name: emit or mpicc failed"; sed 's/^/# /' "$stem.err" | head -20
		i=$((i + 2)); return
	fi
	bad=
	check_ranks "$stem" "$np" stage_peak
	if [ -z "$bad" ]; then
		ok "$name: $K stages x $N ranks, each measured peak = predicted = its stage's report"
	else
		notok "$name:$bad"; sed 's/^/# /' "$stem.err" | head -10
	fi
	# the single-process reference: one run per data rank
	if ! build_single "$stem" "$flags" "$net"; then
		notok "$name: single-process program failed"; i=$((i + 1)); return
	fi
	d=0
	while [ $d -lt $((M * N)) ]; do
		"$stem.single" --data-rank $d >"$stem.single.$d" 2>>"$stem.err"
		d=$((d + 1))
	done
	diff=$(pipe_losses_match "$stem" "$stem.tracked" "$K" "$N" "$M")
	if [ -z "$diff" ]; then
		ok "$name: the last stage's loss of each micro-batch is its data's single-process loss"
	else
		notok "$name: losses differ"; echo "$diff" | head -5 | sed 's/^/# /'
	fi
	if diff=$(pipe_grads_match "$stem" "$K" "$N" "$M"); then
		ok "$name: each data rank's gradients, summed over stages, are the single runs' over M micro-batches"
	else
		notok "$name: gradients differ"; echo "$diff" | head -5 | sed 's/^/# /'
	fi
}

echo "$cases" | {
	# nvcc takes a while: the CUDA builds (ZeRO-3 with both offloads, so that
	# gathers, reduce-scatters and host buffers are all in it, and a 2-stage
	# pipeline of 2 ZeRO-3 ranks, with its sends and receives) compile in
	# the background meanwhile.
	nv="$out/zero3-tiny-nv"
	if [ -n "$NVCC" ]; then
		# shellcheck disable=SC2086
		{ "$REMAT" --ranks 2 --zero 3 --offload optimizer --offload params -o "$nv.cu" \
			"$ex/tiny.net" >/dev/null &&
		  "$REMAT" --stages 2 --ranks 2 --zero 3 $gpt2 -o "$nv.pipe.cu" "$ex/gpt2.net" >/dev/null &&
		  "$NVCC" -x cu -fmad=false -DREMAT_MPI $("$MPICC" --showme:compile) -c "$nv.cu" \
			-o "$nv.o" &&
		  "$NVCC" -x cu -fmad=false -DREMAT_MPI $("$MPICC" --showme:compile) -c "$nv.pipe.cu" \
			-o "$nv.pipe.o"; echo $? >"$nv.status"; } >"$nv.log" 2>&1 </dev/null &
	fi
	while IFS='|' read -r name np flags net; do
		run_case "$name" "$np" "$flags" "$net"
	done
	while IFS='|' read -r name K N flags net; do
		run_pipe "$name" "$K" "$N" "$flags" "$net"
	done <<EOF
$pcases
EOF
	# inference through 2 stages: each micro-batch's output on the last
	# stage is the single-process program's on that micro-batch's data
	stem="$out/pipe-infer-gpt2"
	bad=
	# shellcheck disable=SC2086
	if "$REMAT" --infer --stages 2 --micro-batches 2 $gpt2 -o "$stem.c" "$ex/gpt2.net" >/dev/null \
	     2>"$stem.err" &&
	   "$MPICC" -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST -DREMAT_MPI "$stem.c" -o "$stem" -lm \
	     2>>"$stem.err" &&
	   "$REMAT" --infer $gpt2 -o "$stem.single.c" "$ex/gpt2.net" >/dev/null 2>>"$stem.err" &&
	   "$CC" -x c -std=c11 -O1 -DREMAT_HOST "$stem.single.c" -o "$stem.single" -lm 2>>"$stem.err" &&
	   mpi_run "$stem" 2 tracked; then
		for w in 0 1; do
			grep -q "^rank $w: OK$" "$stem.tracked.$w" || bad="$bad rank $w not OK;"
		done
		for m in 0 1; do
			a=$("$stem.single" --data-rank $m | sed -n 's/^checksum loss: //p')
			b=$(sed -n "s/^rank 1: checksum mb$m:loss: //p" "$stem.tracked.1")
			[ -n "$a" ] && [ "$a" = "$b" ] || bad="$bad micro-batch $m: ${b:-?} vs ${a:-?};"
		done
	else
		bad=" emit, build or run failed"
	fi
	if [ -z "$bad" ]; then
		ok "pipe-infer-gpt2: 2 stages, measured = predicted, each micro-batch's output as the single run's"
	else
		notok "pipe-infer-gpt2:$bad"; sed 's/^/# /' "$stem.err" | head -10
	fi
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
	# a corrupted activation on its way to the next stage is caught
	stem="$out/pipe-1f1b-gpt2"
	if ! "$MPICC" -x c -std=c11 -O1 -DREMAT_HOST -DREMAT_MPI -DREMAT_FAULT_RECV "$stem.c" \
	     -o "$stem.fault" -lm 2>>"$stem.err" || ! mpi_run "$stem.fault" 2 tracked; then
		notok "the pipeline with a corrupted receive does not build or run"
	elif [ -z "$(pipe_losses_match "$stem" "$stem.fault.tracked" 2 1 4)" ]; then
		notok "a corrupted received activation passes the loss check"
	else
		ok "a corrupted received activation fails the loss check"
	fi
	stem="$out/pipe-zero1-gpt2"
	if "$MPIRUN" --oversubscribe -np 2 "$stem" >"$stem.np2" 2>&1 </dev/null; then
		notok "a pipeline planned for 2 x 2 ranks runs on 2"
	elif grep -q "planned for 4 ranks, running on 2: mpirun -np 4 (2 pipeline stages x 2 ranks)" \
	     "$stem.np2"; then
		ok "a pipeline planned for 2 stages x 2 ranks refuses 2 ranks, and says so"
	else
		notok "2 x 2 ranks on 2: no message"; sed 's/^/# /' "$stem.np2" | head -5
	fi
	stem="$out/zero1-tiny"
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
		ok "a ZeRO-3 program with offload and a 2-stage pipeline compile as CUDA with NCCL and MPI"
	else
		notok "nvcc failed on the ZeRO-3 or the pipeline program"; sed 's/^/# /' "$nv.log" | head -20
	fi
	[ $failed = 0 ] && rm -rf "$out"
	exit $failed
}
