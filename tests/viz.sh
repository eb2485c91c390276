#!/bin/sh
# tests/viz.sh -- the pictures and exports (docs/visualize.md): golden files
# for tiny.net (-O0) and a tiny GPT-2 (-O2 under a budget) in every format,
# compared after normalising the version; SVG and HTML well-formed
# (xmllint); the trace's counters summing to --json's live_bytes at every
# step; the --memory-viz pickle loaded by python3-torch's memory_viz module
# and replayed; dot rendering the .dot; headless Chromium running the page;
# sweeps; and the error paths (no partial file, several outputs at once).
# Prints TAP; a check whose tool is missing is a SKIP. With --update,
# rewrites the golden files.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
update=no
[ "${1:-}" = "--update" ] && update=yes
out="$BUILDDIR/tests/out/viz"
gold="tests/golden/viz"
rm -rf "$out"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
PY=/usr/bin/python3
[ -x "$PY" ] || PY=
GPT="examples/gpt2.net -DB=1 -DS=16 -DD=8 -DH=2 -DL=2 -DV=32 -O2 --budget 40KiB"
i=0
ok() { i=$((i + 1)); echo "ok $i - $1"; }
notok() { i=$((i + 1)); echo "not ok $i - $1"; }
check() { # check NAME CMD...: ok when CMD succeeds
	name=$1
	shift
	if "$@" >"$out/check.log" 2>&1; then ok "$name"; else notok "$name"; sed 's/^/# /' "$out/check.log" | head -20; fi
}
skip() { i=$((i + 1)); echo "ok $i - $1 # SKIP $2"; }

# normalise FILE: the version is the only thing that may change
normalise() { sed 's/remat [0-9][0-9.]*/remat VERSION/g' "$1"; }

golden() { # golden NAME FILE
	if [ $update = yes ]; then
		cp "$2" "$gold/$1"
		ok "$1 # updated"
	elif case $1 in *.pickle) cmp "$gold/$1" "$2" ;; *) normalise "$gold/$1" | diff -u - "$2" ;; esac >"$out/$1.diff" 2>&1; then
		ok "$1 matches the golden file"
	else
		notok "$1 differs from the golden file"
		head -30 "$out/$1.diff" | sed 's/^/# /'
	fi
}

run() { # run PREFIX ARGS...: every format into $out/PREFIX.*
	p=$1
	shift
	# shellcheck disable=SC2086
	"$REMAT" "$@" --json --plot "$out/$p.svg" --html "$out/$p.html" --trace "$out/$p.trace.json" \
		--memory-viz "$out/$p.pickle" --dot "$out/$p.dot" --dot-backward --csv "$out/$p.csv" \
		>"$out/$p.report.json" 2>"$out/$p.stderr"
}

# shellcheck disable=SC2086
for p in tiny gpt2; do
	if [ $p = tiny ]; then run tiny examples/tiny.net; else run gpt2 $GPT; fi
	rc=$?
	[ $rc -eq 0 ] && ok "$p: all outputs in one run" || { notok "$p: remat exited $rc"; sed 's/^/# /' "$out/$p.stderr"; }
	for f in "$out/$p.html" "$out/$p.svg" "$out/$p.trace.json" "$out/$p.csv" "$out/$p.dot" "$out/$p.pickle"; do
		[ -f "$f" ] && normalise "$f" >"$f.norm" 2>/dev/null
	done
	for ext in svg html csv dot trace.json; do
		golden "$p.$ext" "$out/$p.$ext.norm"
	done
done
golden tiny.pickle "$out/tiny.pickle"
# --json on stdout is the same with and without the files
"$REMAT" examples/tiny.net --json >"$out/plain.json"
check "--json unchanged by the file outputs" cmp "$out/plain.json" "$out/tiny.report.json"

if command -v xmllint >/dev/null 2>&1; then
	check "SVG and HTML are well-formed XML" xmllint --noout "$out/tiny.svg" "$out/tiny.html" "$out/gpt2.svg" "$out/gpt2.html"
	check "HTML parses as HTML" xmllint --html --noout "$out/gpt2.html"
else
	skip "SVG and HTML are well-formed XML" "no xmllint"
	skip "HTML parses as HTML" "no xmllint"
fi

# the checks of one run's outputs (run PREFIX above)
check_trace() { # check_trace PREFIX
	check "$1: trace counters sum to live_bytes at every step; one slice per step" "$PY" - "$out/$1.trace.json" "$out/$1.report.json" <<'PYEOF'
import json, sys
tr = json.load(open(sys.argv[1]))["traceEvents"]
sched = json.load(open(sys.argv[2]))["schedule"]
cur, byts, slices = {}, {}, 0
for e in tr:
    if e["ph"] == "C":
        cur.setdefault(e["ts"], {})[e["name"]] = e["args"]["bytes"]
    elif e["ph"] == "X":
        slices += 1
        assert e["args"]["op"] == sched[e["ts"]]["op"], e
assert slices == len(sched), (slices, len(sched))
assert len({n for v in cur.values() for n in v}) == 8
state = {}
for s, step in enumerate(sched):
    state.update(cur.get(s, {}))
    assert sum(state.values()) == step["live_bytes"], (s, state, step)
    assert min(state.values()) >= 0, (s, state)
PYEOF
}
check_csv() { # check_csv PREFIX
	check "$1: csv totals equal live_bytes and the categories (none negative) sum to them" "$PY" - "$out/$1.csv" "$out/$1.report.json" <<'PYEOF'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sched = json.load(open(sys.argv[2]))["schedule"]
assert len(rows) == len(sched)
cats = ["params", "master", "optimizer", "param_grads", "inputs", "activations", "gradients", "temporaries"]
for r, s in zip(rows, sched):
    assert int(r["total"]) == s["live_bytes"] == sum(int(r[c]) for c in cats), r
    assert min(int(r[c]) for c in cats) >= 0, r
    assert r["op"] == s["op"] and r["kind"] == s["kind"]
PYEOF
}
check_memviz() { # check_memviz PREFIX
	check "$1: memory_viz loads the pickle; the trace replays to the peak" "$PY" - "$out/$1.pickle" "$out/$1.report.json" <<'PYEOF'
import json, pickle, sys
from torch.cuda import _memory_viz as mv
snap = pickle.load(open(sys.argv[1], "rb"))
rep = json.load(open(sys.argv[2]))
st = mv.stats(snap["segments"])            # asserts the blocks tile the segment
assert st["total_size"].value == rep["arena_bytes"], st
mv.segments(snap["segments"], format_flamegraph=lambda s: s)
mv.memory(snap["segments"], format_flamegraph=lambda s: s)
assert st["active_allocated"].value == rep["peak_bytes"], (st, rep["peak_bytes"])
live, cur, peak, step = {}, 0, 0, -1
for e in snap["device_traces"][0]:
    assert e["frames"][0]["filename"].endswith(".net") and e["frames"][0]["line"] >= 0
    if e["action"] == "alloc":
        assert all(not (a < e["addr"] + e["size"] and e["addr"] < a + n) for a, n in live.items())
        live[e["addr"]] = e["size"]; cur += e["size"]
    else:
        assert e["action"] == "free_completed" and live.pop(e["addr"]) == e["size"]; cur -= e["size"]
    peak = max(peak, cur)
assert peak == rep["peak_bytes"], (peak, rep["peak_bytes"])
PYEOF
}
HAVE_MEMVIZ=no
[ -n "$PY" ] && "$PY" -c 'import torch.cuda._memory_viz' >/dev/null 2>&1 && HAVE_MEMVIZ=yes

if [ -n "$PY" ]; then
	for p in tiny gpt2; do
		check_trace $p
	done
	check_csv gpt2
else
	skip "tiny: trace counters" "no /usr/bin/python3"
	skip "gpt2: trace counters" "no /usr/bin/python3"
	skip "csv totals" "no /usr/bin/python3"
fi

if [ $HAVE_MEMVIZ = yes ]; then
	for p in tiny gpt2; do
		check_memviz $p
	done
else
	skip "tiny: memory_viz loads the pickle" "no python3-torch"
	skip "gpt2: memory_viz loads the pickle" "no python3-torch"
fi

# Every picture under both PyTorch runtimes. Their out-of-place gradient
# sums (docs/runtime-pytorch.md, rule 3) count one phase of the step, not
# every live tensor; moe, resnet50 and bert have steps whose peak phase
# frees the dying inputs, and the categories must still sum to live_bytes.
for rt in pytorch pytorch-cpu; do
	for net in "gpt2 -DB=1 -DS=16 -DD=8 -DH=2 -DL=2 -DV=32 -O2" \
		"moe -DB=2 -DS=16 -DD=16 -DH=2 -DL=2 -DV=64 -DE=4 -DK=2" \
		"resnet50 -DB=2 -DHW=32 -DW=4 -DK=10 -O2" "bert -DB=2 -DS=16 -DD=16 -DH=2 -DL=2 -DV=64"; do
		p=$rt-${net%% *}
		# shellcheck disable=SC2086
		run $p --runtime $rt examples/${net%% *}.net ${net#* }
		rc=$?
		[ $rc -eq 0 ] && ok "$p: all outputs in one run" || { notok "$p: remat exited $rc"; sed 's/^/# /' "$out/$p.stderr"; }
		if [ -n "$PY" ]; then
			check_trace $p
			check_csv $p
		else
			skip "$p: trace counters and csv" "no /usr/bin/python3"
		fi
		[ $HAVE_MEMVIZ = yes ] && check_memviz $p
		command -v xmllint >/dev/null 2>&1 &&
			check "$p: SVG and HTML are well-formed XML" xmllint --noout "$out/$p.svg" "$out/$p.html"
	done
done

if command -v dot >/dev/null 2>&1; then
	check "dot -Tsvg renders the graphs" sh -c "dot -Tsvg '$out/tiny.dot' >'$out/tiny.dot.svg' && dot -Tsvg '$out/gpt2.dot' >'$out/gpt2.dot.svg'"
else
	skip "dot -Tsvg renders the graphs" "no graphviz"
fi

chrome=
for c in chromium chromium-browser google-chrome; do command -v $c >/dev/null 2>&1 && { chrome=$c; break; }; done
if [ -n "$chrome" ]; then
	timeout 60 $chrome --headless --no-sandbox --disable-gpu --dump-dom "file://$out/gpt2.html" >"$out/gpt2.dom" 2>/dev/null
	check "Chromium runs the page: every section, the chart and its script" sh -c "
		for want in 'id=\"summary\"' 'id=\"timeline\"' 'id=\"peak-tensors\"' 'id=\"layers\"' \
			'id=\"plan\"' 'id=\"baselines\"' 'class=\"cat\"' 'id=\"baseline\"' 'id=\"budget\"' \
			'class=\"recompute\"' 'data-ready=\"1\"'; do
			grep -q \"\$want\" '$out/gpt2.dom' || { echo \"missing \$want\"; exit 1; }
		done"
	# hover: a synthetic mouse move over the chart fills the tooltip
	sed 's|</body>|<script>var r=document.querySelector("#chart svg").getBoundingClientRect();document.querySelector("#chart svg").dispatchEvent(new MouseEvent("mousemove",{clientX:r.left+r.width*0.4,clientY:r.top+r.height/2}));</script></body>|' \
		"$out/gpt2.html" >"$out/hover.html"
	timeout 60 $chrome --headless --no-sandbox --disable-gpu --dump-dom "file://$out/hover.html" >"$out/hover.dom" 2>/dev/null
	check "Chromium: hovering the chart shows the step, its op and line, the live tensors" sh -c "
		grep -o '<div id=\"tip\"[^>]*>.*' '$out/hover.dom' >'$out/tip.txt' &&
		! grep -q 'id=\"tip\" hidden' '$out/tip.txt' && grep -q '<b>step [0-9]' '$out/tip.txt' &&
		grep -q ', line [0-9]' '$out/tip.txt' && grep -q 'largest live tensors' '$out/tip.txt'"
else
	skip "Chromium runs the page" "no chromium"
	skip "Chromium: hovering the chart" "no chromium"
fi

# sweeps
"$REMAT" examples/tiny.net --sweep B=2048..65536*2 --max-batch 4MiB --plot "$out/sweep.svg" >"$out/sweep.txt" 2>&1
golden tiny-sweep.txt "$out/sweep.txt"
golden tiny-sweep.svg "$out/sweep.svg"
"$REMAT" examples/tiny.net --sweep B=4:12:4,16 >"$out/sweep2.txt" 2>&1
check "--sweep A:B:K and lists" sh -c "awk 'NR>2{print \$1}' '$out/sweep2.txt' | tr '\n' ' ' | grep -qx '4 8 12 16 '"
badrc=0
for bad in 'B=' 'B=8..4*2' 'B=8..64' 'B=8..64*1' 'B=8,,16' 'B=0' '=8' 'B=1..1000000+1' 'B=8:4'; do
	"$REMAT" examples/tiny.net --sweep "$bad" >/dev/null 2>"$out/bad.err"
	rc=$?
	if [ $rc -ne 2 ] || ! grep -q 'remat: --sweep' "$out/bad.err"; then
		echo "# --sweep $bad: exit $rc, expected 2 with a message"
		badrc=1
	fi
done
check "bad --sweep values: exit 2 with a message" test $badrc -eq 0
"$REMAT" examples/tiny.net --sweep NOPE=8 >/dev/null 2>"$out/nope.err"
check "--sweep over an unknown dim: exit 1" sh -c "[ $? -eq 1 ] && grep -q \"no dim or batch named 'NOPE'\" '$out/nope.err'"

# no partial files
"$REMAT" examples/tiny.net --plot "$out/no/such/dir/x.svg" >/dev/null 2>"$out/nodir.err"
check "unwritable path: exit 1, message" sh -c "[ $? -eq 1 ] && grep -q 'cannot write' '$out/nodir.err'"
(trap '' XFSZ; ulimit -f 8; "$REMAT" examples/gpt2.net --html "$out/big.html" --csv "$out/big.csv" >/dev/null 2>"$out/big.err")
rc=$?
check "a failed write (file size limit): exit 1, no file, no temporary" sh -c \
	"[ $rc -eq 1 ] && [ ! -e '$out/big.html' ] && ! ls '$out'/big.html.tmp* >/dev/null 2>&1"
"$REMAT" --import checkmate tests/golden/tiny.json --plot "$out/x.svg" >/dev/null 2>&1
check "the pictures need a .net file: usage error" sh -c "[ $? -eq 2 ] && [ ! -e '$out/x.svg' ]"
"$REMAT" examples/tiny.net --sweep B=8 --json >/dev/null 2>&1
check "--sweep with --json: usage error" test $? -eq 2
"$REMAT" examples/tiny.net --max-batch 1GiB --plot "$out/mb.svg" >/dev/null 2>&1
check "--max-batch with a file output: usage error" sh -c "[ $? -eq 2 ] && [ ! -e '$out/mb.svg' ]"
"$REMAT" examples/tiny.net --budget 100B --plot "$out/unmet.svg" >/dev/null 2>&1
check "budget unmet: exit 3 and no picture" sh -c "[ $? -eq 3 ] && [ ! -e '$out/unmet.svg' ]"

# the progress line: on a terminal only
"$REMAT" -O2 examples/gpt2.net --max-batch 20GiB >/dev/null 2>"$out/progress.err"
check "no progress line when stderr is not a terminal" test ! -s "$out/progress.err"
if command -v script >/dev/null 2>&1; then
	REMAT_PROGRESS_DELAY=0 script -qc "'$REMAT' -O2 examples/gpt2.net --max-batch 20GiB" /dev/null >"$out/progress.tty" 2>&1
	check "a progress line on a terminal, erased before the answer" sh -c \
		"grep -q 'remat: --max-batch: analyzing B=' '$out/progress.tty' && tr '\\r' '\\n' <'$out/progress.tty' | grep -q '^.\\[Kmax batch B = '"
else
	skip "a progress line on a terminal" "no script(1)"
fi
echo "1..$i"
