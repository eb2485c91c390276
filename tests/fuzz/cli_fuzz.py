"""tests/fuzz/cli_fuzz.py -- the command line fuzzed: combinations of
remat's options, with edge values, on small inputs of every format.

  cli_fuzz.py REMAT SRCDIR [--seconds N] [--cpu-seconds N] [--runs N] [--seed S]
              [--out DIR]
  cli_fuzz.py REMAT SRCDIR --replay DIR

The options and the form of their arguments come from `remat --help`, so a
new option is fuzzed as soon as it is listed. Each run draws an input
(examples/, tests/bad/, tests/onnx/, the Checkmate corpus), one to six
options and a value for each from the argument's kind (sizes, counts,
ratios, names, file paths in a scratch directory: never a device or the
input), and runs remat with a limit of LIMIT_S seconds of CPU (a loaded
machine or a sanitizer build stretches the wall clock, not the work) and
WALL_S of wall clock (a run that waits on something). A finding is an exit
status other than 0-3 (4 is remat's internal error), a signal, a
sanitizer report on stderr, or a run past a limit; its argv is written
to DIR/findings/<sha1>.args (JSON, paths relative to SRCDIR), which
--replay runs again (tests/fuzz/regress-cli holds the kept ones). Prints
runs, runs/s, the exit statuses seen, the options exercised and the
findings; exit 1 when there is a finding.
"""
import hashlib
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

LIMIT_S = 60
WALL_S = 600
SANITIZER = re.compile(rb"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                       rb"runtime error:|stack-overflow|Segmentation fault")

SIZES = ["1", "0", "0B", "1B", "512", "4096", "1KiB", "1MiB", "64MiB", "1GiB", "1.5GiB",
         "80GB", "80gib", "24GiB", "1TiB", "8EiB", "9223372036854775807", "99999999999999999999",
         "-1", "-1GiB", "1e3", "1e308", "nan", "inf", "0x800", "", " ", "GiB", "1.5", "1,5GiB"]
COUNTS = ["0", "1", "2", "3", "4", "7", "8", "16", "64", "1000", "65536", "2147483647",
          "2147483648", "-1", "1.5", "", "x", "08", "+2"]
RATIOS = ["0", "0.5", "1", "1.0", "2", "inf", "-1", "nan", "1e308", "1e-308", "", "x"]
WORDS = ["", "x", "-", "--", "a" * 300, "\u00e9", "../x", "%s%n", "A100-80GB", "H200",
         "RTX4090", "h100-80gb", "B200", "48GiB", "sgd", "adamw", "lion", "mixed",
         "declared", "remat", "pytorch", "pytorch-cpu", "1f1b", "gpipe", "optimizer",
         "params", "optimizer,params", "checkmate", "onnx", "cross_entropy", "mse",
         "cross_entropy:logits", "mse:out", ".*", "(", "[a-", "weight", "0", "1", "2", "3"]
# values each option takes when it works, drawn 3 times in 4: most runs
# get past the command line and into the analysis
VALID = {
    "--optimizer": ["sgd", "momentum", "adagrad", "rmsprop", "lion", "adam", "adamw"],
    "--precision": ["declared", "mixed"], "--runtime": ["remat", "pytorch", "pytorch-cpu"],
    "--gpu": ["A100-40GB", "H200", "RTX4090", "T4", "L4", "B200", "48GiB", "24GiB"],
    "--schedule": ["1f1b", "gpipe"], "--offload": ["optimizer", "params", "optimizer,params"],
    "--zero": ["0", "1", "2", "3"], "--import": ["checkmate", "onnx"],
    "--loss": ["cross_entropy", "mse"], "--params": [".*weight.*", ".*"],
    "-d": ["shape", "plan", "liveness", "memplan", "lower,plan"],
    "--max-recompute": ["0", "0.5", "1", "inf"], "--ranks": ["1", "2", "8", "64"],
    "--stages": ["2", "3", "4"], "--micro-batches": ["1", "2", "4", "8"],
    "--accumulate": ["1", "2", "4"], "--top": ["1", "5", "20"], "--prefetch": ["0", "1", "2"],
    "--stage-blocks": ["1,1", "2,2", "1,2,1"],
    "--sweep": ["B=1,2,4", "B=1,2", "S=16,32"],
    "-D": ["B=1", "B=2", "S=16", "D=32", "L=2", "H=2"],
}
VALID_KIND = {"SIZE": ["1GiB", "64MiB", "80GB", "4096", "24GiB", "1.5GiB", "512MiB", "4MiB"],
              "N": ["1", "2", "4", "8"], "K": ["1", "2", "4"], "M": ["1", "2", "4"],
              "R": ["0", "0.5", "1", "inf"]}
PASSES = ["parse", "instantiate", "shape", "autodiff", "lower", "plan", "liveness",
          "memplan", "report", "nonsense", "shape,plan", ""]


def options(remat):
    """(flag, argument form or None) for each option `remat --help` lists."""
    text = subprocess.run([remat, "--help"], capture_output=True, text=True).stdout
    opts = []
    for line in text.splitlines():
        m = re.match(r"\s+(-[-\w]+)(?:\s+(\[?[A-Z][^\s]*))?", line)
        if not m or m.group(1) in ("--help", "--version"):
            continue
        if m.group(1) == "-O0":
            opts += [("-O%d" % k, None) for k in range(4)]
            continue
        opts.append((m.group(1), m.group(2)))
    return opts


def inputs(src):
    """(path relative to SRCDIR, extra argv) for the inputs the runs draw from."""
    got = []
    for f in ("tiny.net", "mlp.net", "lora.net"):
        got.append(("examples/" + f, []))
    for f in ("gpt2.net", "llama.net", "resnet50.net", "moe.net", "unet.net", "vit.net"):
        got.append(("examples/" + f, ["-DB=1"]))
    for d, imp in (("tests/bad", None), ("tests/fuzz/regress", None),
                   ("tests/fuzz/corpus-checkmate", "checkmate"), ("tests/onnx", "onnx")):
        full = os.path.join(src, d)
        if not os.path.isdir(full):
            continue
        for f in sorted(os.listdir(full)):
            if imp == "onnx" and not f.endswith(".onnx"):
                continue
            if imp is None and not f.endswith(".net"):
                continue
            got.append((d + "/" + f, ["--import", imp] if imp else []))
    return got


def value(rng, flag, form, scratch, k):
    """A value for flag's argument of form `form` (from --help)."""
    f = form.strip("[]")
    if rng.random() < 0.75 and (flag in VALID or f in VALID_KIND):
        return rng.choice(VALID.get(flag) or VALID_KIND[f])
    if f.startswith("FILE") or f in ("FILE.json",):
        ext = f.split(".", 1)[1] if "." in f else "out"
        return rng.choice([os.path.join(scratch, "o%d.%s" % (k, ext)),
                           os.path.join(scratch, "o%d.%s" % (k, ext)), "-",
                           os.path.join(scratch, "nodir", "x." + ext), scratch])
    if f in ("SIZE",):
        return rng.choice(SIZES)
    if f in ("N", "K", "M"):
        return rng.choice(COUNTS)
    if f == "R":
        return rng.choice(RATIOS + WORDS[18:24])
    if f == "PASS":
        return rng.choice(PASSES)
    if f.startswith("NAME=VALUE"):
        return rng.choice(["B", "S", "D", "L", "H", "x", "B", ""]) + "=" + rng.choice(COUNTS)
    if f.startswith("NAME=VALUES"):
        return rng.choice(["B", "S", "L", "D", "x"]) + "=" + rng.choice(
            ["1,2", "1,2,4,8", "1:8", "1..4", "", "0", "-1,2", ",", "1," * 50 + "1"])
    if f.startswith("N,"):
        return ",".join(rng.choice(COUNTS[:8]) for _ in range(rng.randint(1, 4)))
    return rng.choice(WORDS + COUNTS[:6] + SIZES[:8])


def one_run(rng, opts, ins, scratch):
    path, extra = rng.choice(ins)
    argv = list(extra)
    for k in range(rng.choice((1, 1, 2, 2, 3, 4, 6))):
        flag, form = rng.choice(opts)
        if form is None or (form.startswith("[") and rng.random() < 0.5):
            argv.append(flag)
        else:
            argv += [flag, value(rng, flag, form, scratch, k)]
    if rng.random() < 0.1:
        argv.append(rng.choice(["--bogus", "-Z", "-", "--budget"]))
    return argv + [path]


def cpu_limit():
    """In the child: SIGXCPU after LIMIT_S seconds of CPU, SIGKILL a
    second later."""
    resource.setrlimit(resource.RLIMIT_CPU, (LIMIT_S, LIMIT_S + 1))


def run(remat, src, argv, scratch):
    """(finding or None, exit status)."""
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    try:
        p = subprocess.run([remat] + argv, cwd=src, capture_output=True, timeout=WALL_S,
                           env=env, stdin=subprocess.DEVNULL, preexec_fn=cpu_limit)
    except subprocess.TimeoutExpired:
        return "ran past %d s of wall clock" % WALL_S, None
    if p.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return "ran past %d s of CPU" % LIMIT_S, p.returncode
    if p.returncode < 0:
        return "signal %d" % -p.returncode, p.returncode
    if p.returncode not in (0, 1, 2, 3):
        return "exit status %d: %s" % (p.returncode, p.stderr[-300:].decode(errors="replace")), \
            p.returncode
    if SANITIZER.search(p.stderr):
        return "sanitizer: " + p.stderr[:600].decode(errors="replace"), p.returncode
    return None, p.returncode


def keep(out, argv, why):
    os.makedirs(os.path.join(out, "findings"), exist_ok=True)
    blob = json.dumps(argv)
    name = hashlib.sha1(blob.encode()).hexdigest()
    with open(os.path.join(out, "findings", name + ".args"), "w") as f:
        f.write(blob + "\n")
    print("FINDING %s: %s\n  %s" % (name, why, " ".join(argv)))


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
    scratch = tempfile.mkdtemp(prefix="remat-cli-fuzz.")
    if "--replay" in arg:
        bad = 0
        files = sorted(f for f in os.listdir(arg["--replay"]) if f.endswith(".args"))
        for f in files:
            argv = json.load(open(os.path.join(arg["--replay"], f)))
            argv = [x.replace("@SCRATCH@", scratch) for x in argv]
            why, _ = run(remat, src, argv, scratch)
            if why:
                bad += 1
                print("not ok: %s: %s" % (f, why))
        print("replayed %d kept command lines, %d findings" % (len(files), bad))
        return 1 if bad else 0
    seconds = float(arg.get("--seconds", 60))
    runs = int(arg.get("--runs", 1 << 30))
    cpu_max = float(arg.get("--cpu-seconds", 0))
    rng = random.Random(int(arg.get("--seed", time.time_ns() % 1000003)))
    out = arg.get("--out", "fuzz-out/cli")
    opts, ins = options(remat), inputs(src)
    seen_rc, seen_opt, findings, n = {}, set(), 0, 0
    t0 = time.time()
    while n < runs and time.time() - t0 < seconds and (not cpu_max or cpu_used() < cpu_max):
        argv = one_run(rng, opts, ins, scratch)
        why, rc = run(remat, src, argv, scratch)
        n += 1
        seen_rc[rc] = seen_rc.get(rc, 0) + 1
        seen_opt.update(x for x in argv if x.startswith("-") and x != "-")
        if why:
            findings += 1
            keep(out, [x.replace(scratch, "@SCRATCH@") for x in argv], why)
    dt = time.time() - t0
    print("cli_fuzz: %d runs in %.0f s, %.0f s CPU (%.1f/s), exit statuses %s, %d of %d options used, "
          "%d findings" % (n, dt, cpu_used(), n / dt if dt else 0, dict(sorted(seen_rc.items(), key=str)),
                           len(seen_opt & {o for o, _ in opts}), len(opts), findings))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
