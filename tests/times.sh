#!/bin/sh
# tests/times.sh -- a generated program's --times FILE.json, read back by
# `remat --times`: the program writes its measured figures, remat shows
# them beside the plan's FLOPs (human and JSON), warns when the file is of
# another plan, and rejects a bad file with a located error. Host build of
# the program (cc). Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
CC=${CC:-cc}
out="$BUILDDIR/tests/out/times"
rm -rf "$out"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
net=examples/gpt2.net
dims="-DB=16 -DS=32 -DD=32 -DH=2 -DL=4 -DV=64"
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }

echo "1..13"
# shellcheck disable=SC2086
"$REMAT" -O2 $dims -o "$out/p.c" $net >/dev/null 2>"$out/emit.err" &&
	"$CC" -x c -std=c11 -O1 -DREMAT_HOST "$out/p.c" -o "$out/p" -lm 2>"$out/cc.err" &&
	"$out/p" --times "$out/t.json" >"$out/run.out" 2>&1
[ $? -eq 0 ] && ok "the -O2 program runs with --times" || bad "the -O2 program runs with --times"
if python3 - "$out/t.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
assert t["remat_times"] == 1 and t["ok"] is True, t
assert t["measured_peak"] == t["predicted_peak"] > 0, t
assert t["recompute_ms"] >= 0 and t["forward_ms"] > 0 and t["backward_ms"] > 0, t
assert t["clock"] == "host monotonic clock" and t["mode"] == "tracked", t
EOF
then ok "the --times file is JSON with the measured figures"
else bad "the --times file is JSON with the measured figures"; fi

# the human report: the measured line after flops, its rates and the peak
# shellcheck disable=SC2086
"$REMAT" -O2 $dims --times "$out/t.json" $net >"$out/h.out" 2>"$out/h.err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$out/h.err" ] &&
   grep -A1 '^flops:' "$out/h.out" | grep -q "^measured (host monotonic clock, tracked mode, $out/t.json): forward [0-9.]* ms" &&
   grep -q '^  rate: forward [0-9.]* [KMGT]*FLOP/s, backward [0-9.]* [KMGT]*FLOP/s, recompute [0-9.]* [KMGT]*FLOP/s$' "$out/h.out" &&
   grep -q '^  peak: measured .*, = predicted$' "$out/h.out"; then
	ok "the report shows the measured times, rates and peak beside the FLOPs"
else
	bad "the report shows the measured times, rates and peak beside the FLOPs"
	sed 's/^/# /' "$out/h.out" "$out/h.err" | head -20
fi
# shellcheck disable=SC2086
"$REMAT" -O2 $dims --json --times "$out/t.json" $net >"$out/j.out" 2>"$out/j.err"
if python3 - "$out/j.out" "$out/t.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
m = r["measured"]
assert m["file"] == sys.argv[2] and m["ok"] is True, m
for k in ("forward_ms", "backward_ms", "recompute_ms", "measured_peak", "predicted_peak"):
    assert abs(m[k] - t[k]) < 1e-6, k
assert m["predicted_peak"] == r["peak_bytes"], (m, r["peak_bytes"])
EOF
then ok "--json carries the measured figures"
else bad "--json carries the measured figures"; fi

# a file of another plan: a warning, the figures still shown
# shellcheck disable=SC2086
"$REMAT" -O0 $dims --times "$out/t.json" $net >"$out/o0.out" 2>"$out/o0.err"
if [ $? -eq 0 ] && grep -q "^remat: warning: $out/t.json: measured for another plan (its predicted peak is [0-9]* bytes, this plan's [0-9]*)$" "$out/o0.err" &&
   grep -q '^measured (' "$out/o0.out"; then
	ok "a file of another plan is shown with a warning"
else
	bad "a file of another plan is shown with a warning"; sed 's/^/# /' "$out/o0.err"
fi

# bad files: a located error, exit 1, nothing on stdout
check_bad() {   # check_bad NAME CONTENT EXPECTED-STDERR
	printf '%s' "$2" >"$out/$1.json"
	"$REMAT" --times "$out/$1.json" examples/tiny.net >"$out/$1.out" 2>"$out/$1.err"
	rc=$?
	if [ $rc -eq 1 ] && [ ! -s "$out/$1.out" ] && [ "$(cat "$out/$1.err")" = "$3" ]; then
		ok "bad --times file: $1"
	else
		bad "bad --times file: $1 (exit $rc)"; sed 's/^/# /' "$out/$1.err"
	fi
}
good='{"remat_times": 1, "clock": "c", "mode": "tracked", "predicted_peak": 1,
 "measured_peak": 1, "arena": 0, "forward_ms": 1, "backward_ms": 1,
 "recompute_ms": 0, "gemm_calls": 0, "ok": true}'
check_bad notjson '{"remat_times": 1,' "$out/notjson.json:1:19: error: object key (a string) expected"
check_bad other '{"nodes": []}' "$out/other.json:1:1: error: not the --times file of a program remat wrote (no \"remat_times\" key)"
check_bad missing "$(printf '%s' "$good" | sed 's/"gemm_calls": 0, //')" \
	"$out/missing.json:1:1: error: missing field 'gemm_calls'"
check_bad negative "$(printf '%s' "$good" | sed 's/"forward_ms": 1/"forward_ms": -1/')" \
	"$out/negative.json:2:48: error: 'forward_ms' must be a time of at least 0 ms"
check_bad type "$(printf '%s' "$good" | sed 's/"mode": "tracked"/"mode": 3/')" \
	"$out/type.json:1:42: error: 'mode' is number, not string"
check_bad format "$(printf '%s' "$good" | sed 's/"remat_times": 1/"remat_times": 2/')" \
	"$out/format.json:1:17: error: format 2 is not known (this remat reads format 1)"
"$REMAT" --times "$out/absent.json" examples/tiny.net >/dev/null 2>"$out/absent.err"
[ $? -eq 1 ] && grep -q "^remat: cannot open '$out/absent.json': No such file or directory$" "$out/absent.err" &&
	ok "an absent --times file" || bad "an absent --times file"
"$REMAT" --times "$out/t.json" --max-batch 1GiB examples/tiny.net >/dev/null 2>"$out/mb.err"
[ $? -eq 2 ] && grep -q "^remat: --times has no effect with --max-batch$" "$out/mb.err" &&
	ok "--times with --max-batch is a usage error" || bad "--times with --max-batch is a usage error"
[ $fails -eq 0 ]
