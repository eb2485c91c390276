"""tests/fuzz/writer_fuzz.py -- every output writer fed random names, each
output parsed back in its own language (issue 29: inert outputs).

  writer_fuzz.py REMAT SRCDIR [--seconds N] [--cpu-seconds N] [--runs N] [--seed S]
                 [--out DIR]

Each run draws a name of random bytes (no NUL; a '/' makes folders), mixed with the
pieces that break languages (quotes, backslashes, newlines, comment and
script closers, CDATA ends, control bytes, invalid and unusual UTF-8,
formula starts, a Python injection), and gives it to remat three ways:
as the input's file name (a copy of examples/tiny.net), as Checkmate node
names and graph name, and as ONNX node names and producer (through
tests/onnx/onnxpb.py and --emit-net). Every writer runs on it: --json,
--graph-json, -o, --emit-torch, --html, --plot, --trace, --memory-viz,
--dot, --csv, and --sweep --plot. The outputs must parse: JSON as strict
UTF-8, Python with ast (no injected name outside strings), CSV with rows
of one length, SVG and HTML as XML (xml.dom.minidom) with one </script>
per <script>, DOT with `dot` when installed, C with `cc -fsyntax-only`
every fifth run; a file "PWNED" must never appear. A failing name is
kept in DIR/findings/<sha1>.name (its bytes). Prints runs, runs/s and
findings; exit 1 when there is one.
"""
import ast
import csv
import hashlib
import io
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
import xml.dom.minidom

PIECES = [b'"', b"'", b"\\", b"\n", b"\r", b"\r\n", b"*/", b"/*", b'"""', b"'''",
          b"</script>", b"<script>", b"]]>", b"<![CDATA[", b"<!--", b"-->", b"&", b"&amp;",
          b"<", b">", b"\x1b[1m", b"\x7f", b"\x01", b"\t", b"\xe9", b"\xff", b"\xc3",
          b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x80\xa8", b"\xef\xbf\xbf", b"%s%n",
          b"${x}", b"=cmd|' /c calc'!A0", b"+1", b"@x", b"-2", b",", b";", b"\\N{x}", b"\\x",
          b"\\u12", b'x"; import os; os.system("touch PWNED") #', b"injected", b"\x00"[:0]]


def name(rng):
    out = b""
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.7:
            out += rng.choice(PIECES)
        else:
            out += bytes(rng.choice([b for b in range(1, 256) if b != 0x2F])
                         for _ in range(rng.randint(1, 6)))
    return out[:180] or b"x"


def check_json(raw):
    json.loads(raw.decode("utf-8"))


def check_py(raw):
    text = raw.decode("utf-8")
    ast.parse(text)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and tok.string in ("system", "PWNED", "injected"):
            raise ValueError("injected name %r on line %d" % (tok.string, tok.start[0]))


def check_csv(raw):
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    if not rows or any(len(r) != len(rows[0]) for r in rows):
        raise ValueError("ragged rows")


def check_xml(raw):
    xml.dom.minidom.parseString(raw)
    t = raw.decode("utf-8")
    if t.count("</script") != t.count("<script") or t.count("]]>") != t.count("<![CDATA["):
        raise ValueError("a script or CDATA closed early")


def check_pickle(raw):
    pickle.loads(raw)


class Run:
    def __init__(self, remat, src, scratch, cc, dot):
        self.remat, self.src, self.scratch, self.cc, self.dot = remat, src, scratch, cc, dot

    def remat_ok(self, argv, cwd):
        p = subprocess.run([self.remat] + argv, cwd=cwd, capture_output=True, timeout=120)
        if p.returncode != 0:
            raise ValueError("remat %s: exit %d: %s" % (" ".join(map(repr, argv[:-1])),
                                                      p.returncode, p.stderr[-300:]))
        return p.stdout

    def writers(self, path, extra, cwd, full):
        d = os.path.join(cwd, "o")
        os.makedirs(d, exist_ok=True)
        check_json(self.remat_ok(extra + ["--json", path], cwd))
        check_json(self.remat_ok(extra + ["--graph-json", path], cwd))
        self.remat_ok(extra + ["-o", d + "/p.cu", "--emit-torch", d + "/p.py", "--html",
                               d + "/p.html", "--plot", d + "/p.svg", "--trace", d + "/t.json",
                               "--memory-viz", d + "/m.pickle", "--dot", d + "/p.dot",
                               "--csv", d + "/p.csv", path], cwd)
        for f, check in (("p.py", check_py), ("p.html", check_xml), ("p.svg", check_xml),
                         ("t.json", check_json), ("m.pickle", check_pickle),
                         ("p.csv", check_csv)):
            try:
                check(open(os.path.join(d, f), "rb").read())
            except Exception as e:
                raise ValueError("%s: %s" % (f, e))
        if "--infer" not in extra:
            self.remat_ok(extra + ["--sweep", "B=1,2", "--plot", d + "/s.svg", path], cwd)
            check_xml(open(d + "/s.svg", "rb").read())
        if self.dot:
            p = subprocess.run([self.dot, "-Tsvg", "-o", d + "/p.dot.svg", d + "/p.dot"],
                               capture_output=True, timeout=60)
            if p.returncode:
                raise ValueError("dot: %s" % p.stderr[-300:])
        if full and self.cc:
            p = subprocess.run([self.cc, "-x", "c", "-std=c11", "-fsyntax-only", "-DREMAT_HOST",
                                d + "/p.cu"], capture_output=True, timeout=120)
            if p.returncode:
                raise ValueError("cc: %s" % p.stderr[-300:])
            p = subprocess.run([self.cc, "-x", "c", "-std=c11", "-E", "-P", "-DREMAT_HOST",
                                d + "/p.cu"], capture_output=True, timeout=120)
            if b"injected" in p.stdout:
                raise ValueError("cc -E: 'injected' outside a comment")
        shutil.rmtree(d)

    def one(self, nm, k):
        cwd = tempfile.mkdtemp(dir=self.scratch)
        try:
            # the input's file name
            path = os.path.join(os.fsencode(cwd), b"in", nm.replace(b"..", b"._") + b".net")
            os.makedirs(os.path.dirname(path), exist_ok=True)    # a "/" piece is a folder
            shutil.copy(os.path.join(self.src, "examples", "tiny.net"), path)
            self.writers(os.fsdecode(path), [], cwd, k % 5 == 0)
            # Checkmate names
            s = nm.decode("utf-8", "surrogateescape").encode("utf-8", "surrogatepass")
            s = s.decode("utf-8", "replace")
            g = {"directed": True, "graph": {"name": s},
                 "nodes": [{"id": 0, "name": s, "cost_cpu": 1, "cost_ram": 4},
                           {"id": 1, "name": s[::-1], "cost_cpu": 2, "cost_ram": 8}],
                 "links": [{"source": 0, "target": 1}]}
            cm = os.path.join(cwd, "g.json")
            open(cm, "w").write(json.dumps(g))
            check_json(self.remat_ok(["--import", "checkmate", "--json", cm], cwd))
            # ONNX names and producer, through --emit-net and every writer
            sys.path.insert(0, os.path.join(self.src, "tests", "onnx"))
            from onnxpb import FLOAT, model, node, value_info
            nd = nm.decode("latin-1")
            m = model([node("Relu", ["x"], ["r"], name="/a" + nd + "blocks.0/Relu"),
                       node("Relu", ["r"], ["y"], name="/a" + nd + "blocks.1/Relu")],
                      [value_info("x", FLOAT, [2, 4])], [value_info("y", FLOAT, [2, 4])],
                      producer=nm)
            ox = os.path.join(cwd, "h.onnx")
            open(ox, "wb").write(m)
            self.remat_ok(["--import", "onnx", "--infer", "--emit-net", cwd + "/h.net", ox], cwd)
            if b"\nparam" in open(cwd + "/h.net", "rb").read():
                raise ValueError("--emit-net: a name started a statement")
            self.writers(cwd + "/h.net", ["--infer"], cwd, False)
            if os.path.exists(os.path.join(cwd, "PWNED")):
                raise ValueError("a name ran a command")
        finally:
            shutil.rmtree(cwd, ignore_errors=True)


def cpu_used():
    """CPU seconds (user + system) of this process and the remat runs it
    waited for: --cpu-seconds bounds a run by CPU, which a loaded machine
    does not stretch as it does the wall clock."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main():
    a = sys.argv[1:]
    remat, src = os.path.abspath(a[0]), os.path.abspath(a[1])
    arg = {k: a[i + 1] for i, k in enumerate(a) if k.startswith("--") and i + 1 < len(a)}
    seconds, runs = float(arg.get("--seconds", 60)), int(arg.get("--runs", 1 << 30))
    cpu_max = float(arg.get("--cpu-seconds", 0))
    rng = random.Random(int(arg.get("--seed", time.time_ns() % 1000003)))
    out = arg.get("--out", "fuzz-out/writers")
    scratch = tempfile.mkdtemp(prefix="remat-writer-fuzz.")
    r = Run(remat, src, scratch, shutil.which(os.environ.get("CC", "cc")), shutil.which("dot"))
    n = bad = 0
    t0 = time.time()
    while n < runs and time.time() - t0 < seconds and (not cpu_max or cpu_used() < cpu_max):
        nm = name(rng)
        try:
            r.one(nm, n)
        except Exception as e:
            bad += 1
            os.makedirs(os.path.join(out, "findings"), exist_ok=True)
            h = hashlib.sha1(nm).hexdigest()
            open(os.path.join(out, "findings", h + ".name"), "wb").write(nm)
            print("FINDING %s: %r: %s" % (h, nm, e))
        n += 1
    dt = time.time() - t0
    shutil.rmtree(scratch, ignore_errors=True)
    print("writer_fuzz: %d names in %.0f s, %.0f s CPU (%.2f/s), every writer each, %d findings"
          % (n, dt, cpu_used(), n / dt if dt else 0, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
