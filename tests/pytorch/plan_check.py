"""tests/pytorch/plan_check.py -- the --emit-torch helper on PyTorch >= 2.4
(issue 25, item 3), on the CPU.

  plan_check.py REMAT RUNTIME FILE.net [-D NAME=V ...]

Rebuilds the network as tests/pytorch/harness.py does, emits remat's plan
(`--runtime RUNTIME -O2 --emit-torch`) and runs one training step three
times from the same seeds: without the plan, with the plan's calls
recomputed whole, and with its selective policy
(create_selective_checkpoint_contexts, SELECTIVE forced on). The loss and
every gradient must be bit-identical to the run without the plan: a
recomputed dropout must draw the same mask. A fourth run, with the RNG
state not kept, must differ when the network has dropout, which shows that
the comparison sees a wrong mask. The helper must not warn (a warning says
its aten calls did not match the plan's). Prints one line; exit 1 on a
failure, 77 when this torch is older than 2.4.
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings
import importlib.util

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def load_policy(path):
    spec = importlib.util.spec_from_file_location("policy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def train_step(g, env, policy, seed):
    """The loss and every param gradient of one step from `seed`."""
    for v in env.values():
        v.grad = None
    torch.manual_seed(seed)
    loss = harness.step(g, env, policy).detach().clone()
    return loss, {i: v.grad.clone() for i, v in env.items() if v.grad is not None}


def same(a, b):
    la, ga = a
    lb, gb = b
    return torch.equal(la, lb) and ga.keys() == gb.keys() and all(
        torch.equal(ga[i], gb[i]) for i in ga)


def main():
    if not harness._torch_at_least(2, 4):
        print("torch %s is older than 2.4" % torch.__version__)
        return 77
    remat, runtime, net, defs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    src = open(net).read().replace("f16[", "bf16[").replace("bbf16[", "bf16[")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, os.path.basename(net))
        open(path, "w").write(src)
        g = json.loads(harness.run_remat([remat, "--graph-json"] + defs + [path]))
        py = os.path.join(tmp, "policy.py")
        harness.run_remat([remat, "--runtime", runtime, "--optimizer", "sgd", "--precision",
                           "declared", "-O2", "--emit-torch", py] + defs + [path])
        policy = load_policy(py)
    torch.set_num_threads(1)
    env, _ = harness.make_leaves(g)
    dropout = any((op["op"] == "dropout" or op["dropout"] > 0) and
                  any(op["scope"].startswith(c) for c in policy.CHECKPOINT) for op in g["ops"])
    saved = sum(d == policy.MUST_SAVE for ops in policy.POLICY.values() for _, _, d in ops)
    fails = []
    if not policy.CHECKPOINT:
        fails.append("the plan wraps no call")
    ref = train_step(g, env, None, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy.SELECTIVE = False
        whole = train_step(g, env, policy, 1)
        policy.SELECTIVE = True
        if not policy.selective_in_use():
            fails.append("the selective policy is not in use")
        sel = train_step(g, env, policy, 1)
    ours = [str(w.message) for w in caught if "remat plan" in str(w.message)]
    if ours:
        fails.append("the helper warned: " + ours[0])
    if not same(ref, whole):
        fails.append("whole calls: gradients differ")
    if not same(ref, sel):
        fails.append("selective: gradients differ")
    if dropout:
        import torch.utils.checkpoint as cp
        real = cp.checkpoint

        def forgetful(*a, **k):
            k["preserve_rng_state"] = False
            return real(*a, **k)
        cp.checkpoint = forgetful
        policy.SELECTIVE = False
        try:
            lost = train_step(g, env, policy, 1)
        finally:
            cp.checkpoint = real
        if same(ref, lost):
            fails.append("without the RNG state the gradients do not change")
    name = os.path.basename(net)
    print("%-12s --runtime %-11s torch %s: %d calls wrapped, %d ops saved, "
          "dropout in them %s: %s" % (name, runtime, torch.__version__.split("+")[0],
                              len(policy.CHECKPOINT), saved, "yes" if dropout else "no",
                              "; ".join(fails) if fails else
                              "every gradient bit-identical, whole and selective"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
