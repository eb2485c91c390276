#!/bin/sh
# tests/fuzz/binary.sh -- the fuzzers that drive the remat binary, in make
# check: the kept command lines (tests/fuzz/regress-cli) replayed, 400
# command lines from a fixed seed (tests/fuzz/cli_fuzz.py, about 3 s), and
# 12 random names through every writer with each output parsed
# (tests/fuzz/writer_fuzz.py, about 15 s). Under the sanitizer build this
# is where option combinations and hostile names meet ASan and UBSan.
# make fuzz-cli and make fuzz-writers run them for $FUZZ_SECONDS from a
# fresh seed.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 77; }
out=${BUILDDIR:-.}/tests/out/fuzz-binary
rm -rf "$out"
mkdir -p "$out"
n=0
run() { # run LABEL LOG SCRIPT ARGS...: one TAP line, the log's last line
	label=$1 log=$out/$2
	shift 2
	n=$((n + 1))
	if python3 "$SRCDIR/tests/fuzz/$@" >"$log" 2>&1; then
		echo "ok $n - $label: $(tail -1 "$log")"
	else
		echo "not ok $n - $label"; sed 's/^/# /' "$log" | head -30
	fi
}
echo "1..3"
run "kept command lines" replay.log cli_fuzz.py "$REMAT" "$SRCDIR" \
	--replay "$SRCDIR/tests/fuzz/regress-cli"
run "command lines, seed 29" cli.log cli_fuzz.py "$REMAT" "$SRCDIR" --runs 400 --seed 29 \
	--seconds 600 --out "$out"
run "names through every writer, seed 29" writers.log writer_fuzz.py "$REMAT" "$SRCDIR" \
	--runs 12 --seed 29 --seconds 900 --out "$out"
