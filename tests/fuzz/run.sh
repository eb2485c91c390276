#!/bin/sh
# tests/fuzz/run.sh BINARY NAME SRCDIR KIND -- runs one libFuzzer target for
# $FUZZ_SECONDS (default 60) seconds. Its working corpus and any crash,
# timeout or OOM file go under $FUZZ_OUT/NAME (default fuzz-out/NAME in the
# current, i.e. build, directory); the seeds come read-only from the
# source tree: the examples, the bad-input corpus and the kept inputs for
# KIND=net, the JSON corpus for KIND=json, the ONNX fixtures, bad models
# and kept inputs for KIND=onnx. -max_len is the largest seed (at least
# 4096; for onnx 400000, room for the structural mutator's growth), so no
# seed is cut.
#
# The per-input timeout: libFuzzer's -timeout is wall-clock time, and the
# run is at nice 19 on a shared machine, where a seed that takes 2 s of CPU
# alone under the sanitizers can take 10 s of wall clock: the run stopped
# on a seed, "timeout", before its first mutation (issue 29). So the
# seeds are timed first, one process each, in CPU seconds (user + system,
# GNU time; the figure is kept in $FUZZ_OUT/NAME/seed-cpu until the
# binary changes), and the timeout is $FUZZ_TIMEOUT_FACTOR (default 20)
# times the slowest seed, at least $FUZZ_TIMEOUT_FLOOR (default 30) s;
# FUZZ_TIMEOUT=S sets it outright. Memory is capped per run at
# -rss_limit_mb=2048 (CPU-independent).
#
# libFuzzer's -max_total_time is wall clock too, and includes running the
# seeds first: at nice 19 on a loaded machine, 300 seeds of 3 s of CPU
# took 70 s, and a 60 s run ended before its first mutation. So the run
# gets the same factor times the seeds' total CPU on top of FUZZ_SECONDS.
#
# A run must fuzz: libFuzzer's final stats (-print_final_stats=1) must show
# more executed units than there were inputs to start from
# (stat::number_of_executed_units), else the run failed, whatever its
# exit status.
set -u
bin=$1 name=$2 src=$3 kind=$4
out=${FUZZ_OUT:-fuzz-out}/$name
mkdir -p "$out/corpus" "$out/crashes" || exit 1
case $kind in
json) seeds="$src/tests/fuzz/corpus-checkmate $src/tests/fuzz/regress-checkmate" ;;
onnx) seeds="$src/tests/fuzz/corpus-onnx $src/tests/fuzz/regress-onnx $src/tests/onnx/bad $src/tests/onnx" ;;
*) seeds="$src/tests/fuzz/corpus $src/tests/fuzz/regress $src/tests/bad $src/examples" ;;
esac
max=4096
[ "$kind" = onnx ] && max=400000
ninputs=0
for d in "$out/corpus" $seeds; do
	for f in "$d"/*; do
		[ -f "$f" ] || continue
		ninputs=$((ninputs + 1))
		n=$(wc -c <"$f")
		[ "$n" -gt "$max" ] && max=$n
	done
done

# The slowest seed's CPU seconds, measured once per binary.
TIME=${TIME_CMD:-/usr/bin/time}
cpu_file=$out/seed-cpu
if [ -z "${FUZZ_TIMEOUT:-}" ] && { [ ! -s "$cpu_file" ] || [ "$bin" -nt "$cpu_file" ]; }; then
	if "$TIME" -f %U true >/dev/null 2>&1; then
		slow=0 total=0
		for d in $seeds; do
			for f in "$d"/*; do
				[ -f "$f" ] || continue
				"$TIME" -o "$out/time" -f '%U %S' "$bin" -runs=1 -rss_limit_mb=2048 \
					"$f" >/dev/null 2>&1
				# (the last line: GNU time may say first how the command exited)
				set -- $(tail -n 1 "$out/time" | awk -v s="$slow" -v t="$total" \
					'{ c = $1 + $2; print (c > s ? c : s), t + c }')
				slow=$1 total=$2
			done
		done
		echo "$slow $total" >"$cpu_file"
		rm -f "$out/time"
	else
		echo "run.sh: no GNU time at $TIME: the timeout is the floor" >&2
	fi
fi
set -- $(cat "$cpu_file" 2>/dev/null) 0 0
slow=$1 total=$2
k=${FUZZ_TIMEOUT_FACTOR:-20}
timeout=${FUZZ_TIMEOUT:-$(awk -v s="$slow" -v k="$k" -v f="${FUZZ_TIMEOUT_FLOOR:-30}" \
	'BEGIN { t = s * k; t = t > f ? t : f; printf "%d", t + 0.999 }')}
seconds=$(awk -v s="${FUZZ_SECONDS:-60}" -v t="$total" -v k="$k" \
	'BEGIN { printf "%d", s + t * k + 0.999 }')
echo "run.sh: $name: seeds ${total} s CPU, the slowest ${slow} s: -timeout=$timeout -max_total_time=$seconds"

log=$out/log
# shellcheck disable=SC2086
"$bin" -max_total_time="$seconds" -max_len="$max" -timeout="$timeout" \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/crashes/" \
	"$out/corpus" $seeds >"$log" 2>&1
rc=$?
cat "$log"
units=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
if [ -z "$units" ]; then
	echo "run.sh: $name: no final stats (exit status $rc): the run did not finish" >&2
	exit $((rc ? rc : 1))
fi
if [ "$units" -le "$ninputs" ]; then
	echo "run.sh: $name: $units executed units for $ninputs inputs: it never mutated" >&2
	exit $((rc ? rc : 1))
fi
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
echo "run.sh: $name: $units executed units from $ninputs inputs, ${rate:-?} exec/s"
exit $rc
