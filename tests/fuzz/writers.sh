#!/bin/sh
# tests/fuzz/writers.sh -- the writer fuzzer in make check: 12 names from
# a fixed seed, each through every writer as a path, Checkmate names and
# ONNX names, every output parsed (tests/fuzz/writer_fuzz.py; about 15 s).
# make fuzz-writers runs it for $FUZZ_SECONDS from a fresh seed.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 77; }
echo "1..1"
out=${BUILDDIR:-.}/tests/out/writer-fuzz
rm -rf "$out"
mkdir -p "$out"
if python3 "$SRCDIR/tests/fuzz/writer_fuzz.py" "$REMAT" "$SRCDIR" --runs 12 --seed 29 \
	--seconds 900 --out "$out" >"$out/run.log" 2>&1; then
	echo "ok 1 - $(tail -1 "$out/run.log")"
else
	echo "not ok 1 - writer fuzz"; sed 's/^/# /' "$out/run.log" | head -30
fi
