"""tests/bench/budget_sweep.py -- --budget from 90% down to 50% of the way
from the lower bound to the -O0 peak, on training networks: the peak and
the recompute (as a fraction of the forward FLOPs) at each budget, beside
the simple baselines that fit under it (sqrt(n) and per-def
checkpointing). Part of make bench-baselines.

  budget_sweep.py REMAT NAME=FILE.net[:-DX=V,...] ...

Prints one row per budget, and "FAIL" where a budget recomputes less than
the larger one before it (whose plan then was not the cheapest that fits)
or more than a baseline whose peak fits it; exit 1 if any row fails.
"""
import json
import resource
import subprocess
import sys


def run(remat, net, defs, extra):
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = ru.ru_utime + ru.ru_stime
    out = subprocess.run([remat, "--json"] + defs + extra + [net], check=True,
                         capture_output=True, text=True).stdout
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return json.loads(out), ru.ru_utime + ru.ru_stime - t


def main():
    remat = sys.argv[1]
    bad = 0
    print("%-10s %5s %14s %14s %9s %9s %9s %7s" % ("net", "way", "budget", "peak", "recompute",
                                                   "sqrt_n", "per_def", "cpu_s"))
    for spec in sys.argv[2:]:
        name, rest = spec.split("=", 1)
        net, _, dims = rest.partition(":")
        defs = dims.split(",") if dims else []
        base, _ = run(remat, net, defs, ["-O0"])
        o2, _ = run(remat, net, defs, ["-O2"])
        fwd = o2["flops"]["forward"]
        lo, hi = o2["lower_bound_bytes"], base["peak_bytes"]
        prev = None
        for way in (90, 80, 70, 60, 50):
            budget = lo + (hi - lo) * way // 100
            r, cpu = run(remat, net, defs, ["--budget", str(budget)])
            rc = r["flops"]["recompute"] / fwd
            bl = r["baselines"]
            notes = []
            if prev is not None and rc + 1e-9 < prev:
                notes.append("FAIL: less recompute than the larger budget")
            for k in ("sqrt_n", "per_def"):
                b = bl.get(k)
                if b and b["peak_bytes"] <= budget and r["flops"]["recompute"] > b["recompute"]:
                    notes.append("FAIL: above %s" % k)

            def show(k):
                b = bl.get(k)
                if not b:
                    return "-"
                return "%.3f%s" % (b["recompute"] / fwd, "" if b["peak_bytes"] <= budget else "*")
            print("%-10s %4d%% %14d %14d %9.3f %9s %9s %7.2f %s" % (
                name, way, budget, r["peak_bytes"], rc, show("sqrt_n"), show("per_def"), cpu,
                " ".join(notes)))
            bad += bool(notes)
            prev = rc
    print("(recompute: fraction of the forward FLOPs; a baseline marked * does not fit the budget)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
