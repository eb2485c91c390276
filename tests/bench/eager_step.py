"""tests/bench/eager_step.py -- the time of one PyTorch eager training step
of a .net network, for make bench-gpu's "ratio to PyTorch" column.

  eager_step.py REMAT FILE.net [-D NAME=V ...] [--device cuda|cpu] [--steps N]

The network is built op by op from `remat --graph-json`, exactly as the
peer harness (tests/pytorch/harness.py) builds it, with every tensor made
on the device (torch.set_default_device), dtypes as declared. One warm-up
step, then N timed steps (default 3), each forward + backward with the
gradients dropped before it (set to None), synchronized at both ends.
Prints one line: "eager_step_ms MEDIAN device DEVICE torch VERSION".
Exit 77 when the device is not available (the caller skips the column).
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import harness  # noqa: E402  (after the path)
import torch  # noqa: E402


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def main():
    argv = sys.argv[1:]
    dev, steps = "cuda", 3
    if "--device" in argv:
        i = argv.index("--device")
        dev = argv[i + 1]
        del argv[i:i + 2]
    if "--steps" in argv:
        i = argv.index("--steps")
        steps = int(argv[i + 1])
        del argv[i:i + 2]
    if dev == "cuda" and not torch.cuda.is_available():
        print("eager_step: no CUDA device for torch %s" % torch.__version__, file=sys.stderr)
        return 77
    remat, net, defs = argv[0], argv[1], argv[2:]
    import json
    g = json.loads(harness.run_remat([remat, "--graph-json"] + defs + [net]))
    torch.set_default_device(dev)
    env, _ = harness.make_leaves(g)
    params = [v for v in env.values() if v.requires_grad]
    times = []
    for k in range(steps + 1):
        for p in params:
            p.grad = None
        sync(dev)
        t0 = time.perf_counter()
        harness.step(g, env, None)
        sync(dev)
        if k:                   # the first step warms up (allocator, cuBLAS, cuDNN)
            times.append(1000 * (time.perf_counter() - t0))
    print("eager_step_ms %.3f device %s torch %s"
          % (statistics.median(times), dev, torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
