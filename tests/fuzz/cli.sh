#!/bin/sh
# tests/fuzz/cli.sh -- the command-line fuzzer in make check: the kept
# command lines (tests/fuzz/regress-cli) replayed, then 400 runs drawn from
# a fixed seed (about 3 s). Under the sanitizer build this is where option
# combinations meet ASan and UBSan. make fuzz-cli runs it for
# $FUZZ_SECONDS from a fresh seed (tests/fuzz/cli_fuzz.py).
set -u
: "${REMAT:?}" "${SRCDIR:?}"
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 77; }
echo "1..2"
out=${BUILDDIR:-.}/tests/out/cli-fuzz
rm -rf "$out"
mkdir -p "$out"
if python3 "$SRCDIR/tests/fuzz/cli_fuzz.py" "$REMAT" "$SRCDIR" \
	--replay "$SRCDIR/tests/fuzz/regress-cli" >"$out/replay.log" 2>&1; then
	echo "ok 1 - $(tail -1 "$out/replay.log")"
else
	echo "not ok 1 - kept command lines"; sed 's/^/# /' "$out/replay.log"
fi
if python3 "$SRCDIR/tests/fuzz/cli_fuzz.py" "$REMAT" "$SRCDIR" --runs 400 --seed 29 \
	--seconds 600 --out "$out" >"$out/run.log" 2>&1; then
	echo "ok 2 - $(tail -1 "$out/run.log")"
else
	echo "not ok 2 - fixed-seed runs"; sed 's/^/# /' "$out/run.log"
fi
