#!/bin/sh
# tests/codegen/bench_gpu.sh -- make bench-gpu: the generated program on a
# real GPU. For GPT-2 small (B=8, S=1024), LLaMA (L=4, B=1, S=2048),
# ResNet-50 (B=32) and U-Net (B=8), at -O0 and -O2, it emits the program,
# builds it with nvcc (-O2, -arch=native, cuBLAS), runs it in arena mode
# with --times, and prints one row: the step time (CUDA events), the
# program's wall time (init, step, checks), the predicted, measured and
# device peaks, the arena, and the ratio of the step to a PyTorch eager
# step on the same card (tests/bench/eager_step.py, when a CUDA build of
# torch imports: the build tree's torch-venv or python3). Exit 77 without
# nvcc or without a GPU; exit 1 when a program fails or measured ≠
# predicted.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
NVCC=${NVCC:-nvcc}
if ! command -v "$NVCC" >/dev/null 2>&1; then
	echo "bench-gpu: skipped: no nvcc"; exit 77
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "bench-gpu: skipped: no GPU (nvidia-smi -L lists none)"; exit 77
fi
out="$BUILDDIR/bench-gpu"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
py=
for p in "$BUILDDIR/torch-venv/bin/python" python3; do
	if "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
		py=$p; break
	fi
done
nvidia-smi -L | head -1
[ -n "$py" ] && echo "PyTorch eager: $("$py" -c 'import torch; print(torch.__version__)')" ||
	echo "PyTorch eager: no CUDA build of torch importable (ratio column empty)"
field() {   # field FILE KEY: a number of the program's --times JSON
	sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p" "$1" | head -1
}
printf '%-10s %-4s %10s %8s %14s %14s %14s %14s %9s %7s\n' net level step_ms wall_s \
	predicted measured device_peak arena eager_ms ratio
fails=0
while read -r name net dims; do
	eager=
	if [ -n "$py" ]; then
		# shellcheck disable=SC2086
		eager=$("$py" tests/bench/eager_step.py "$REMAT" "$net" $dims 2>"$out/$name.eager.err" |
			sed -n 's/^eager_step_ms \([0-9.]*\).*/\1/p')
	fi
	for lvl in O0 O2; do
		stem="$out/$name-$lvl"
		# shellcheck disable=SC2086
		if ! "$REMAT" -$lvl $dims -o "$stem.cu" "$net" >"$stem.report" 2>"$stem.err" ||
		   ! "$NVCC" -fmad=false -O2 -arch=native -x cu "$stem.cu" -o "$stem" -lcublas 2>>"$stem.err"; then
			echo "$name -$lvl: emit or build failed:"; sed 's/^/  /' "$stem.err" | head -5
			fails=$((fails + 1)); continue
		fi
		t0=$(date +%s.%N)
		"$stem" --arena --times "$stem.json" >"$stem.out" 2>&1
		rc=$?
		t1=$(date +%s.%N)
		dev=$(sed -n 's/.*device peak (cudaMemGetInfo, above start): \([0-9]*\) bytes/\1/p' "$stem.out")
		if [ $rc -ne 0 ] || [ ! -s "$stem.json" ]; then
			echo "$name -$lvl: the program failed (exit $rc):"; tail -5 "$stem.out" | sed 's/^/  /'
			fails=$((fails + 1)); continue
		fi
		step=$(awk -v f="$(field "$stem.json" forward_ms)" -v b="$(field "$stem.json" backward_ms)" \
			-v r="$(field "$stem.json" recompute_ms)" 'BEGIN { printf "%.3f", f + b + r }')
		ratio=
		[ -n "$eager" ] && ratio=$(awk -v s="$step" -v e="$eager" 'BEGIN { printf "%.2fx", s / e }')
		printf '%-10s %-4s %10s %8.2f %14s %14s %14s %14s %9s %7s\n' "$name" "-$lvl" "$step" \
			"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
			"$(field "$stem.json" predicted_peak)" "$(field "$stem.json" measured_peak)" \
			"${dev:--}" "$(field "$stem.json" arena)" "${eager:--}" "${ratio:--}"
	done
done <<'EOF'
gpt2 examples/gpt2.net -DB=8 -DS=1024
llama examples/llama.net -DL=4 -DB=1 -DS=2048
resnet50 examples/resnet50.net -DB=32
unet examples/unet.net -DB=8
EOF
echo "(step: forward + backward + recompute, CUDA events; wall: the whole program;"
echo " device peak: cudaMemGetInfo above the start, in arena mode; ratio: step / eager step)"
[ $fails -eq 0 ]
