#!/bin/sh
# tests/hostile.sh -- inert outputs (issue 29; docs/limits.md, "Names and
# paths in the outputs"): inputs whose paths hold quotes, a newline, "*/",
# '"""', "</script>", control bytes, a Latin-1 byte and a Python
# injection, a Checkmate graph and an ONNX model whose names hold the
# same, through every writer. Each output
# must parse in its own language (C with cc -fsyntax-only, Python with
# ast, JSON as strict UTF-8, SVG as XML, HTML as XML and as HTML, DOT with
# dot, CSV with the csv module) and hold no injected statement. Prints
# TAP; a check whose tool is missing is a SKIP.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
out="$BUILDDIR/tests/out/hostile"
rm -rf "$out"
mkdir -p "$out"
cd "$out" || exit 99      # where an injected "touch PWNED" would land
CC=${CC:-cc}
PY=$(command -v python3 || true)
XMLLINT=$(command -v xmllint || true)
DOT=$(command -v dot || true)
i=0
say() { i=$((i + 1)); echo "$1 $i - $2"; }      # say "ok"|"not ok" LABEL
skip() { say ok "$1 # SKIP $2"; }
check() { # check LABEL CMD...: ok when CMD succeeds, else its output
	label=$1
	shift
	if "$@" >"$out/check.log" 2>&1; then say ok "$label"; return; fi
	say "not ok" "$label"
	sed 's/^/# /' "$out/check.log" | head -20
}

# The checkers, in Python: each reads one file and fails loudly.
cat >"$out/parse.py" <<'EOF'
import ast, csv, io, json, pickle, sys, tokenize
kind, path = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
if kind == "py":
    text = raw.decode("utf-8")          # Python source is UTF-8
    ast.parse(text)
    # the injected call may only appear inside strings and comments
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and tok.string in ("system", "PWNED", "injected"):
            sys.exit("%s: injected name %r on line %d" % (path, tok.string, tok.start[0]))
elif kind == "json":
    json.loads(raw.decode("utf-8"))     # strict: no invalid UTF-8
elif kind == "text":                    # any UTF-8 text
    raw.decode("utf-8")
elif kind == "csv":
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert rows and all(len(r) == len(rows[0]) for r in rows), "ragged rows"
    for r in rows[1:]:
        assert not r[2][:1] in "=+-@", "formula field %r" % r[2]
elif kind == "pickle":
    pickle.loads(raw)
elif kind == "script":                  # one </script> per <script>
    t = raw.decode("utf-8")
    assert t.count("</script") == t.count("<script"), "</script> inside the script"
    assert t.count("]]>") == t.count("<![CDATA["), "]]> inside the CDATA"
EOF
py() { # py KIND FILE
	"$PY" "$out/parse.py" "$@"
}

# C: the generated program compiles (host mode), and no name became code.
c_ok() {
	$CC -x c -std=c11 -fsyntax-only -DREMAT_HOST -I"$SRCDIR/codegen" "$1" &&
	! $CC -x c -std=c11 -E -P -DREMAT_HOST -I"$SRCDIR/codegen" "$1" | grep -q injected
}

# every writer on one input; NAME labels the checks
writers() { # writers NAME INPUT [remat flags...]
	name=$1 in=$2
	shift 2
	d="$out/$name.d"
	mkdir -p "$d"
	if "$REMAT" "$@" --json "$in" >"$d/r.json" 2>"$d/err" &&
	   "$REMAT" "$@" --graph-json "$in" >"$d/g.json" 2>>"$d/err" &&
	   "$REMAT" "$@" -o "$d/p.cu" --emit-torch "$d/p.py" --html "$d/p.html" --plot "$d/p.svg" \
	            --trace "$d/t.json" --memory-viz "$d/m.pickle" --dot "$d/p.dot" --csv "$d/p.csv" \
	            "$in" >"$d/human" 2>>"$d/err"; then
		say ok "$name: every writer runs"
	else
		say "not ok" "$name: every writer runs"; sed 's/^/# /' "$d/err" | head -5
		return
	fi
	if [ -z "$PY" ]; then
		skip "$name: outputs parse" "no python3"
	else
		check "$name: --json is strict UTF-8 JSON" py json "$d/r.json"
		check "$name: --graph-json is strict UTF-8 JSON" py json "$d/g.json"
		check "$name: --trace is strict UTF-8 JSON" py json "$d/t.json"
		check "$name: --emit-torch parses, nothing injected" py py "$d/p.py"
		check "$name: --csv parses, no formula" py csv "$d/p.csv"
		check "$name: --memory-viz unpickles" py pickle "$d/m.pickle"
		check "$name: --html keeps its script closed" py script "$d/p.html"
	fi
	check "$name: -o compiles, nothing injected" c_ok "$d/p.cu"
	if [ -n "$XMLLINT" ]; then
		check "$name: --plot is XML" "$XMLLINT" --noout "$d/p.svg"
		# the sweep's title holds the path too (tiny.net's batch B)
		if grep -q '^batch B' "$in"; then
			check "$name: --sweep --plot runs" "$REMAT" "$@" --sweep B=1,2 --plot "$d/sweep.svg" "$in"
			check "$name: --sweep --plot is XML" "$XMLLINT" --noout "$d/sweep.svg"
		fi
		check "$name: --html is XML" "$XMLLINT" --noout "$d/p.html"
		check "$name: --html is HTML" "$XMLLINT" --html --noout "$d/p.html"
	else
		skip "$name: SVG and HTML parse" "no xmllint"
	fi
	if [ -n "$DOT" ]; then
		check "$name: --dot renders" "$DOT" -Tsvg -o "$d/p.dot.svg" "$d/p.dot"
	else
		skip "$name: --dot renders" "no dot"
	fi
}

# Hostile paths: each names a copy of tiny.net. "/" cannot be in a file
# name, so the comment closers are folders.
T="$out/in"
mkdir -p "$T"
nl='
'
esc=$(printf '\033')
ctl=$(printf '\001\002\037\177')
latin1=$(printf 'caf\351')
n=0
for p in "q\"uote'd,x.net" "new${nl}line.net" "c*/ int injected; /*x/t.net" \
         "t\"\"\"import injected\"\"\"\\N\\x\\u.net" "h</script><b>]]>&amp;/t.net" \
         "ctl${ctl}${esc}[1m.net" "${latin1}.net" \
         "x\"; import os; os.system(\"touch PWNED\") #.net" "=cmd|' calc'!A0.net"; do
	n=$((n + 1))
	mkdir -p "$(dirname "$T/$p")"
	cp "$SRCDIR/examples/tiny.net" "$T/$p"
	writers "path$n" "$T/$p"
	[ -e "$out/PWNED" ] && say "not ok" "path$n: a name ran a command"
done

# A Checkmate graph whose graph and node names are hostile (--json only).
cat >"$out/cm.json" <<'EOF'
{"directed": true, "graph": {"name": "g\"</script>\n]]>"},
 "nodes": [{"id": 0, "name": "a\"</script>\n*/\u0001", "cost_cpu": 1, "cost_ram": 4},
           {"id": 1, "name": "=b,\"c\"\r\n\u007f\u00e9", "cost_cpu": 2, "cost_ram": 8}],
 "links": [{"source": 0, "target": 1}]}
EOF
if "$REMAT" --import checkmate --json "$out/cm.json" >"$out/cm.out" 2>"$out/cm.err"; then
	if [ -n "$PY" ]; then check "checkmate: --json is strict UTF-8 JSON" py json "$out/cm.out"
	else skip "checkmate: --json parses" "no python3"; fi
else
	say "not ok" "checkmate: --json runs"; sed 's/^/# /' "$out/cm.err" | head -5
fi
cp "$out/cm.json" "$T/${latin1}\"<script>.json"
if "$REMAT" --import checkmate --json "$T/${latin1}\"<script>.json" >"$out/cm2.out" 2>"$out/cm.err" &&
   [ -n "$PY" ]; then
	check "checkmate: a Latin-1 path in --json is strict UTF-8" py json "$out/cm2.out"
else
	say "not ok" "checkmate: hostile path"; sed 's/^/# /' "$out/cm.err" | head -5
fi

# An ONNX model whose node names and producer are hostile,
# built with the tests' own protobuf writer: --emit-net keeps them in its
# comments, and every writer takes the import.
if [ -n "$PY" ]; then
	"$PY" - "$SRCDIR/tests/onnx" "$out/h.onnx" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from onnxpb import FLOAT, model, node, value_info
bad = "\"</script>*/\"\"\"\x01\x1b]]>\nparam injected : f32[9];\n"
m = model([node("Relu", ["x"], ["r"], name="/a" + bad + "blocks.0/Relu"),
           node("Relu", ["r"], ["y"], name="/a" + bad + "blocks.1/Relu")],
          [value_info("x", FLOAT, [2, 4])], [value_info("y", FLOAT, [2, 4])],
          producer=("p" + bad).encode() + b"caf\xe9")
open(sys.argv[2], "wb").write(m)
EOF
	if "$REMAT" --import onnx --infer --emit-net "$out/h.net" "$out/h.onnx" >/dev/null 2>"$out/onnx.err"; then
		if ! grep -q '^param' "$out/h.net" && py text "$out/h.net" &&
		   "$REMAT" --infer "$out/h.net" | grep -q '^parameters: 0 elements'; then
			say ok "onnx: hostile names stay in the comments of --emit-net"
		else
			say "not ok" "onnx: --emit-net injected"; sed 's/^/# /' "$out/h.net" | head -8
		fi
		writers onnx "$out/h.net" --infer
	else
		say "not ok" "onnx: hostile names import"; sed 's/^/# /' "$out/onnx.err" | head -5
	fi
else
	skip "onnx: hostile names" "no python3"
fi
[ -e "$out/PWNED" ] && say "not ok" "a name ran a command"
echo "1..$i"
