#!/bin/sh
# tests/fuzz/run.sh BINARY NAME SRCDIR KIND -- runs one libFuzzer target for
# $FUZZ_SECONDS (default 60) seconds. Its working corpus and any crash,
# timeout or OOM file go under $FUZZ_OUT/NAME (default fuzz-out/NAME in the
# current, i.e. build, directory); the seeds come read-only from the
# source tree: the examples, the bad-input corpus and the kept inputs for
# KIND=net, the JSON corpus for KIND=json. -max_len is the largest seed (at
# least 4096), so no seed is cut.
set -u
bin=$1 name=$2 src=$3 kind=$4
out=${FUZZ_OUT:-fuzz-out}/$name
mkdir -p "$out/corpus" "$out/crashes" || exit 1
if [ "$kind" = json ]; then
	seeds="$src/tests/fuzz/corpus-checkmate $src/tests/fuzz/regress-checkmate"
else
	seeds="$src/tests/fuzz/corpus $src/tests/fuzz/regress $src/tests/bad $src/examples"
fi
max=4096
for d in $seeds; do
	for f in "$d"/*; do
		[ -f "$f" ] || continue
		n=$(wc -c <"$f")
		[ "$n" -gt "$max" ] && max=$n
	done
done
# shellcheck disable=SC2086
exec "$bin" -max_total_time="${FUZZ_SECONDS:-60}" -max_len="$max" -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/crashes/" \
	"$out/corpus" $seeds
