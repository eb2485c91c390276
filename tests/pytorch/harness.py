"""tests/pytorch/harness.py -- the PyTorch peer harness (issue 16).

Rebuilds a .net network in PyTorch op by op from `remat --graph-json` (no
hand-copied models), runs one training step on the CPU, and measures the
bytes of live tensor storage after every aten op (operator boundaries),
counted by allocshim.so (LD_PRELOAD) and sampled from a TorchDispatchMode.
It compares that peak with `remat --runtime pytorch-cpu --json`.

Run by tests/pytorch/check.sh, which builds the shim and sets LD_PRELOAD:
  harness.py REMAT FILE.net [-D NAME=V ...] [--emit-torch [--selective]] [--autocast] [--infer] [--tol R]
Prints one line per network; exit 1 when the difference exceeds --tol.

Conventions of the translation (docs/runtime-pytorch.md):
- Python references die at a tensor's last forward use (an ideal eager
  program); inputs, params and the loss are held through the step.
- f16 runs as bf16 (the same bytes: CPU PyTorch 1.13 lacks f16 matmul).
- Ops PyTorch 1.13 has no kernel for (fused attention, rmsnorm) run as
  autograd.Functions that save what ops.md lists; their internals are one
  operator (no sample inside, one sample at the end of forward/backward).
  Under PyTorch >= 2, attention is F.scaled_dot_product_attention, what
  users write.
- A custom op runs as an autograd.Function that makes its declared output
  (its first argument broadcast to it when it can, else a fill), saves
  what it declares, and gives every floating input that needs grad a
  gradient of its shape.
- The optimizer is sgd and precision declared: no optimizer state.
- --autocast: precision mixed as PyTorch users train it (PyTorch >= 2.4):
  every floating param and input is f32 and the forward runs under
  torch.autocast("cpu", dtype=torch.bfloat16), the backward outside it;
  compared with `--precision mixed`, which models the CPU's autocast lists.
- --infer: the forward alone, as under torch.inference_mode() (with
  --autocast, inside torch.autocast too); inputs, params and the net's
  outputs are held; compared with `remat --infer`. It runs under
  torch.no_grad() with autocast's cache off, which allocates what
  inference_mode does (autocast caches no weight cast there) while a
  TorchDispatchMode still sees every aten op: under inference_mode it sees
  composite ops (cross_entropy_loss, layer_norm) whole, so the boundaries
  inside them, where the log-probs or the statistics are live, go unsampled.
  Then it runs the forward again under torch.inference_mode itself, with
  autocast's defaults, and checks that the two runs' high-water marks
  (every allocation counted, kernels' own scratch buffers too, which remat
  does not model) are the same.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

DT = {"f64": torch.float64, "f32": torch.float32, "bf16": torch.bfloat16,
      "f16": torch.bfloat16, "i64": torch.int64, "i32": torch.int32,
      "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}



def _torch_at_least(major, minor):
    v = torch.__version__.split("+")[0].split(".")
    return (int(v[0]), int(v[1])) >= (major, minor)


TORCH2 = _torch_at_least(2, 0)
AUTOCAST = False        # --autocast
INFER = False           # --infer

# the allocation shim (LD_PRELOAD): only the measuring main() needs it
_lib = ctypes.CDLL(None)
if hasattr(_lib, "shim_bytes"):
    _lib.shim_bytes.restype = ctypes.c_longlong
    _lib.shim_max.restype = ctypes.c_longlong


class Meter(TorchDispatchMode):
    """Samples live tensor bytes after every aten op."""

    def __init__(self):
        super().__init__()
        self.peak = 0
        self.quiet = 0
        self.trace = []         # every sample, in order
        self.base = 0

    def sample(self):
        b = _lib.shim_bytes()
        if b > self.peak:
            self.peak = b
        self.trace.append(b - self.base)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not self.quiet:
            self.sample()
            if os.environ.get("HARNESS_TRACE"):
                print("  %-40s %d" % (func, _lib.shim_bytes() - self.base))
        return out


METER = None


class _Opaque:
    """One operator: no samples inside, one at the end."""

    def __enter__(self):
        if METER:
            METER.quiet += 1

    def __exit__(self, *a):
        if METER:
            METER.quiet -= 1


def _end_sample():
    if METER and not METER.quiet:
        METER.sample()
        if os.environ.get("HARNESS_TRACE"):
            print("  %-40s %d" % ("(end of a custom Function)", _lib.shim_bytes() - METER.base))


def _scores(q, k, mask, causal):
    """Scaled f32 scores with the mask and the causal cut applied; k and v
    heads repeat for grouped-query attention."""
    s = (q.float() @ k.float().transpose(-1, -2)) * q.shape[-1] ** -0.5
    if mask is not None:
        if mask.dtype.is_floating_point:
            s = s + mask.float()
        else:
            s.masked_fill_(mask == 0, float("-inf"))
    if causal:
        S, T = s.shape[-2], s.shape[-1]
        s.masked_fill_(torch.ones(S, T, dtype=torch.bool).triu(T - S + 1), float("-inf"))
    return s


def _heads(x, h):
    return x if x.shape[1] == h else x.repeat_interleave(h // x.shape[1], 1)


class Attention(torch.autograd.Function):
    """Fused attention, flash-style: saves q, k, v, out, lse (f32), the
    mask and, with dropout, the u8 dropout mask (ops.md)."""

    @staticmethod
    def forward(ctx, q, k, v, mask, causal, p):
        dmask = None
        with _Opaque():
            h = q.shape[1]
            s = _scores(q, _heads(k, h), mask, causal)
            lse = torch.logsumexp(s, -1)
            pr = torch.exp(s - lse.unsqueeze(-1))
            del s
            if p > 0:
                dmask = (torch.rand_like(pr) >= p).to(torch.uint8)
                pr = pr * dmask / (1 - p)
            out = (pr @ _heads(v, h).float()).to(q.dtype)
            del pr
        # lse is saved too (not a ctx attribute, which would live as long
        # as the graph rather than until this node's backward has run)
        ctx.save_for_backward(q, k, v, out, lse, mask, dmask)
        ctx.causal, ctx.p = causal, p
        _end_sample()
        return out

    @staticmethod
    def backward(ctx, do):
        q, k, v, out, lse, mask, dmask = ctx.saved_tensors
        with _Opaque():
            h, p = q.shape[1], ctx.p
            kh, vh = _heads(k, h), _heads(v, h)
            s = _scores(q, kh, mask, ctx.causal)
            pr = torch.exp(s - lse.unsqueeze(-1))
            del s
            dof = do.float()
            pd = pr * dmask / (1 - p) if dmask is not None else pr
            dv = pd.transpose(-1, -2) @ dof
            dp = dof @ vh.float().transpose(-1, -2)
            if dmask is not None:
                dp = dp * dmask / (1 - p)
            dd = (dof * out.float()).sum(-1, keepdim=True)
            ds = pr * (dp - dd) * q.shape[-1] ** -0.5
            del pr, pd, dp, dd, dof
            dq = (ds @ kh.float()).to(q.dtype)
            dk = ds.transpose(-1, -2) @ q.float()
            del ds
            if k.shape[1] != h:     # the repeated heads' gradients add up
                g = h // k.shape[1]
                dk = dk.reshape(k.shape[0], k.shape[1], g, *dk.shape[2:]).sum(2)
                dv = dv.reshape(v.shape[0], v.shape[1], g, *dv.shape[2:]).sum(2)
            dk, dv = dk.to(k.dtype), dv.to(v.dtype)
        _end_sample()
        return dq, dk, dv, None, None, None


def attention(q, k, v, mask, causal, p):
    """PyTorch >= 2: scaled_dot_product_attention; 1.13: the Function."""
    if not TORCH2:
        return Attention.apply(q, k, v, mask, causal, p)
    if mask is not None and not mask.dtype.is_floating_point:
        mask = mask != 0
    gqa = {"enable_gqa": True} if k.shape[1] != q.shape[1] else {}
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                          is_causal=causal, **gqa)


class Custom(torch.autograd.Function):
    """A custom op (ops.md, "Custom ops"): one operator that makes the
    declared output, saves what the op declares, and gives each floating
    input that needs grad a gradient of its shape."""

    @staticmethod
    def forward(ctx, op, shape, dtype, *xs):
        with _Opaque():
            x = xs[0] if xs else None
            try:
                out = x.expand(shape).to(dtype).clone(memory_format=torch.contiguous_format)
            except (AttributeError, RuntimeError):
                fill = sum(float(t.float().mean()) for t in xs if t.dtype.is_floating_point)
                out = torch.full(shape, fill, dtype=dtype)
        keep = [xs[i] for i in op["saves"] if i != "out"]
        ctx.save_for_backward(*(keep + ([out] if "out" in op["saves"] else [])))
        ctx.shapes = [(t.shape, t.dtype, t.dtype.is_floating_point) for t in xs]
        _end_sample()
        return out

    @staticmethod
    def backward(ctx, g):
        grads = [None, None, None]
        with _Opaque():
            for i, (shape, dt, fl) in enumerate(ctx.shapes):
                if not (fl and ctx.needs_input_grad[3 + i]):
                    grads.append(None)
                elif i == 0:
                    grads.append(g.sum_to_size(shape).to(dt) if g.dim() == len(shape)
                                 else torch.zeros(shape, dtype=dt))
                else:
                    grads.append(torch.zeros(shape, dtype=dt))
        _end_sample()
        return tuple(grads)


class RMSNorm(torch.autograd.Function):
    """rmsnorm over the last axis: saves x and rstd (f32, x.shape[:-1])."""

    @staticmethod
    def forward(ctx, x, g):
        with _Opaque():
            xf = x.float()
            rstd = torch.rsqrt(xf.pow(2).mean(-1) + 1e-6)
            out = (xf * rstd.unsqueeze(-1)).to(x.dtype) * g
            del xf
        ctx.save_for_backward(x, g, rstd)
        _end_sample()
        return out

    @staticmethod
    def backward(ctx, dy):
        x, g, rstd = ctx.saved_tensors
        with _Opaque():
            xf = x.float()
            r = rstd.unsqueeze(-1)
            xh = xf * r
            dyg = dy.float() * g.float()
            dx = (r * (dyg - xh * (dyg * xh).mean(-1, keepdim=True))).to(x.dtype)
            dg = (dy.float() * xh).reshape(-1, x.shape[-1]).sum(0).to(g.dtype)
            del xf, r, xh, dyg
        _end_sample()
        return dx, dg


def uneven_pad(x, pad, value):
    """A conv's or pool's pads [top, bottom, left, right]: torch's own
    (symmetric) padding per axis when each axis's two ends agree, else an
    explicit F.pad (last axis first) and none in the op."""
    if pad[0] == pad[1] and pad[2] == pad[3]:
        return x, (pad[0], pad[2])
    return F.pad(x, (pad[2], pad[3], pad[0], pad[1]), value=value), (0, 0)


def run_op(op, args, outs):
    """The torch translation of one .net op. outs: output tensor records."""
    k = op["op"]
    x = args[0] if args else None
    ax = op["axis"]
    if op["custom"]:
        return [Custom.apply(op, outs[0]["shape"], DT[outs[0]["dtype"]], *args)]
    simple = {"relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
              "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp,
              "log": torch.log, "sqrt": torch.sqrt, "neg": torch.neg}
    if k in simple:
        return [simple[k](x)]
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
              "div": torch.div, "matmul": torch.matmul}
    if k in binary:
        return [binary[k](args[0], args[1])]
    if k == "scale":
        # mul.Scalar: `x * c` passes c as a wrapped tensor, which 1.13's
        # non-reentrant checkpoint fails to recompute under a dispatch
        # mode (the Meter)
        return [torch.ops.aten.mul.Scalar(x, op["c"])]
    if k == "cast":
        return [x.to(DT[op["dtype"]])]
    if k == "dropout":
        return [F.dropout(x, op["p"], training=True)]
    if k == "conv1d":
        pad = op["padding"]
        if pad[0] != pad[1]:
            x, pad = F.pad(x, (pad[0], pad[1])), [0, 0]
        return [F.conv1d(x, args[1], None, op["stride"][0], pad[0],
                         op["dilation"][0], op["groups"])]
    if k == "conv2d":
        x, pad = uneven_pad(x, op["padding"], 0.0)
        return [F.conv2d(x, args[1], None, op["stride"], pad,
                         op["dilation"], op["groups"])]
    if k == "attention":
        return [attention(args[0], args[1], args[2], args[3] if len(args) > 3 else None,
                          op["causal"], op["dropout"])]
    if k == "layernorm":
        return [F.layer_norm(x, (x.shape[-1],), args[1], args[2])]
    if k == "rmsnorm":
        return [RMSNorm.apply(x, args[1])]
    if k == "batchnorm":
        return [F.batch_norm(x, None, None, args[1], args[2], training=True)]
    if k == "softmax":
        return [F.softmax(x, ax)]
    if k == "log_softmax":
        return [F.log_softmax(x, ax)]
    if k == "groupnorm":
        return [F.group_norm(x, op["groups"], args[1], args[2])]
    if k == "maxpool2d":
        x, pad = uneven_pad(x, op["padding"], float("-inf"))
        return [F.max_pool2d(x, op["window"], op["pool_stride"], pad,
                             op["dilation"], ceil_mode=op["ceil_mode"])]
    if k == "avgpool2d":
        x, pad = uneven_pad(x, op["padding"], 0.0)
        return [F.avg_pool2d(x, op["window"], op["pool_stride"], pad,
                             ceil_mode=op["ceil_mode"])]
    if k == "global_avgpool":
        return [x.mean((2, 3))]
    if k == "upsample2d":
        return [F.interpolate(x, scale_factor=op["scale"], mode="nearest")]
    if k in ("sum", "mean"):
        f = torch.sum if k == "sum" else torch.mean
        if not op["has_axis"]:
            y = f(x)
            return [y.reshape([1] * x.dim()) if op["keepdim"] else y]
        axes = [a % x.dim() for a in op["list"]] if op["list"] else [ax]
        return [f(x, axes, keepdim=op["keepdim"])]
    if k == "cross_entropy":
        c = x.shape[-1]
        return [F.cross_entropy(x.reshape(-1, c), args[1].reshape(-1),
                                ignore_index=op["ignore_index"])]
    if k == "mse_loss":
        return [F.mse_loss(args[0], args[1])]
    if k == "embedding":
        return [F.embedding(args[0], args[1])]
    if k == "reshape":
        return [x.reshape(outs[0]["shape"])]
    if k == "expand":
        return [x.expand(outs[0]["shape"])]
    if k == "flatten":
        return [x.flatten(op["flatten_start"])]
    if k == "transpose":
        return [x.transpose(op["i"], op["j"])]
    if k == "permute":
        return [x.permute(op["list"])]
    if k == "slice":
        n = x.shape[ax]
        lo = op["start"] + n if op["start"] < 0 else op["start"]
        hi = op["end"] + n if op["end"] < 0 else op["end"]
        return [x.narrow(ax, lo, hi - lo)]
    if k == "split":
        return list(torch.split(x, x.shape[ax] // op["n"], dim=ax))
    if k == "concat":
        return [torch.cat(args, ax)]
    if k == "relu6":
        return [F.relu6(x)]
    if k == "clamp":
        return [torch.clamp(x, op["min"], op["max"])]
    if k == "hardswish":
        return [F.hardswish(x)]
    if k == "hardsigmoid":
        return [F.hardsigmoid(x)]
    if k == "gather":
        return [torch.gather(x, ax, args[1])]
    if k == "index_select":
        return [torch.index_select(x, ax, args[1])]
    if k == "topk":
        v, i = torch.topk(x, op["k"], dim=ax)
        return [v, i]
    if k == "scatter_add":
        # a size-1 index axis broadcasts (ops.md): expand it, a view
        return [x.scatter_add(ax, args[1].expand(args[2].shape), args[2])]
    raise SystemExit("harness: no translation for op '%s'" % k)


def index_bounds(g):
    """For each integer input, an exclusive upper bound for its values: the
    table rows it indexes or the classes it labels."""
    bound = {}
    for op in g["ops"]:
        if op["op"] == "embedding":
            r = g["tensors"][op["in"][1]]["shape"][0]
            bound[op["in"][0]] = min(bound.get(op["in"][0], r), r)
        if op["op"] == "cross_entropy":
            c = g["tensors"][op["in"][0]]["shape"][-1]
            bound[op["in"][1]] = min(bound.get(op["in"][1], c), c)
    return bound


def make_leaves(g):
    torch.manual_seed(0)
    env, held = {}, 0
    bound = index_bounds(g)
    for i, t in enumerate(g["tensors"]):
        if t["kind"] not in ("input", "param"):
            continue
        dt = DT[t["dtype"]]
        if dt.is_floating_point and AUTOCAST:
            dt = torch.float32  # an f32 model; autocast makes the rest
        if dt.is_floating_point:
            v = torch.randn(t["shape"]).mul_(0.1).to(dt)
            if t["kind"] == "param" and t["needs_grad"]:    # not a frozen one
                v.requires_grad_(True)
        else:
            v = torch.randint(0, bound.get(i, 2), t["shape"], dtype=dt)
        env[i] = v
        held += v.numel() * v.element_size()
    return env, held


def last_uses(g):
    last = {}
    for o, op in enumerate(g["ops"]):
        for i in op["in"]:
            last[i] = o
    return last


def wrap_policy(policy, g):
    """Groups ops into the checkpointed regions of an --emit-torch module:
    {first op index: (last op index, scope)} for each checkpointed scope."""
    spans = {}
    for o, op in enumerate(g["ops"]):
        sc = op["scope"]
        for s in policy.CHECKPOINT:
            if sc.startswith(s):
                a, b = spans.get(s, (o, o))
                spans[s] = (min(a, o), max(b, o))
    return {a: (b, s) for s, (a, b) in spans.items()}


def run_region(g, env, lo, hi, keep, held=()):
    """Runs ops lo..hi on env (a dict), dropping dead references but those
    in `held`; returns the tensors of the region that `keep` lists."""
    last = last_uses(g)
    for o in range(lo, hi + 1):
        op = g["ops"][o]
        outs = [g["tensors"][i] for i in op["out"]]
        res = run_op(op, [env[i] for i in op["in"]], outs)
        for i, r in zip(op["out"], res):
            env[i] = r
        del res, r
        for i in set(op["in"]):
            if (last.get(i, -1) == o and i not in held and
                    g["tensors"][i]["kind"] not in ("input", "param")):
                env.pop(i, None)
    return [env[i] for i in keep]


def infer(g, env, inference_mode=False):
    """The forward alone, as `remat --infer` counts it (torch.inference_mode,
    measured as the module's docstring says, or run under it), the net's
    outputs held to the end."""
    with torch.inference_mode() if inference_mode else torch.no_grad():
        region = torch.autocast("cpu", dtype=torch.bfloat16,
                                cache_enabled=inference_mode) if AUTOCAST else None
        if region:
            region.__enter__()
        run_region(g, env, 0, len(g["ops"]) - 1, [], set(g["outputs"]))
        if region:
            region.__exit__(None, None, None)


def step(g, env, policy):
    """Forward and backward of one training step; returns the loss."""
    regions = wrap_policy(policy, g) if policy else {}
    last = last_uses(g)
    o = 0
    region = torch.autocast("cpu", dtype=torch.bfloat16) if AUTOCAST else None
    if region:
        region.__enter__()
    while o < len(g["ops"]):
        if o in regions:
            hi, _ = regions[o]
            produced = set()
            for p in range(o, hi + 1):
                produced.update(g["ops"][p]["out"])
            ins = sorted({i for p in range(o, hi + 1) for i in g["ops"][p]["in"]
                          if i not in produced})
            outs = sorted(i for i in produced if last.get(i, -1) > hi or i == g["loss"])

            def fn(*xs, _o=o, _hi=hi, _ins=ins, _outs=outs):
                sub = dict(zip(_ins, xs))
                return tuple(run_region(g, sub, _o, _hi, _outs))
            res = policy.checkpoint_call(regions[o][1], fn, *[env[i] for i in ins])
            for i, r in zip(outs, res):
                env[i] = r
            del res, r          # no Python local may outlive its last use
            for i in ins:
                if last.get(i, -1) <= hi and g["tensors"][i]["kind"] not in ("input", "param"):
                    env.pop(i, None)
            o = hi + 1
        else:
            run_region(g, env, o, o, [])
            o += 1
    if region:          # leaving it drops autocast's cache of weight casts
        region.__exit__(None, None, None)
    loss = env[g["loss"]]
    for i in list(env):         # the caller keeps its inputs and params
        if g["tensors"][i]["kind"] not in ("input", "param"):
            del env[i]
    loss.backward()
    return loss


def run_remat(args):
    """stdout of remat; the allocation shim is this process's business only
    (an ASan build of remat refuses to start with it preloaded)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return subprocess.run(args, check=True, capture_output=True, text=True,
                          env=env).stdout


def remat_json(remat, net, defs, extra):
    cmd = [remat, "--json", "--runtime", "pytorch-cpu", "--optimizer", "sgd",
           "--precision", "mixed" if AUTOCAST else "declared"] + \
        (["--infer"] if INFER else []) + defs + extra + [net]
    return json.loads(run_remat(cmd))


def boundaries(trace, schedule, tol):
    """How many of remat's steps (forward, backward) have a measured
    operator boundary within tol, matched in order: remat's one op may be
    several aten ops (cross_entropy is log_softmax and nll_loss), so each
    step is looked for at or after the previous match."""
    got = {"forward": [0, 0], "backward": [0, 0]}
    at = 0
    for st in schedule:
        if st["kind"] not in got:
            continue
        v = st["live_bytes"]
        got[st["kind"]][1] += 1
        for j in range(at, len(trace)):
            if abs(trace[j] - v) <= tol * max(v, 1):
                got[st["kind"]][0] += 1
                at = j + 1
                break
    return got


def main():
    global METER, AUTOCAST, INFER
    argv = sys.argv[1:]
    if "--infer" in argv:
        argv.remove("--infer")
        INFER = True
    if "--autocast" in argv:
        argv.remove("--autocast")
        AUTOCAST = True
        if not _torch_at_least(2, 4):
            raise SystemExit("harness: --autocast needs PyTorch >= 2.4")
    tol = 0.001
    emit = False
    if "--tol" in argv:
        i = argv.index("--tol")
        tol = float(argv[i + 1])
        del argv[i:i + 2]
    if "--emit-torch" in argv:
        argv.remove("--emit-torch")
        emit = True
    selective = "--selective" in argv   # the helper's POLICY, forced on
    if selective:
        argv.remove("--selective")
    if INFER and emit:
        raise SystemExit("harness: --infer has no plan to wrap (--emit-torch trains)")
    remat, net, defs = argv[0], argv[1], argv[2:]
    src = open(net).read().replace("f16[", "bf16[").replace("bbf16[", "bf16[")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, os.path.basename(net))
        open(path, "w").write(src)
        g = json.loads(run_remat([remat, "--graph-json"] + defs + [path]))
        policy = None
        if emit:
            py = os.path.join(tmp, "policy.py")
            rep = remat_json(remat, path, defs, ["-O2", "--emit-torch", py])
            import importlib.util
            spec = importlib.util.spec_from_file_location("policy", py)
            policy = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(policy)
            want = policy.PREDICTED_PEAK
            if selective:
                policy.SELECTIVE = True
                if not policy.selective_in_use():
                    raise SystemExit("harness: --selective needs PyTorch >= 2.4")
                want = policy.PEAK_SELECTIVE
        else:
            rep = remat_json(remat, path, defs, [])
            want = rep["peak_bytes"]
    torch.set_num_threads(1)
    env, held = make_leaves(g)
    METER = Meter()
    base = _lib.shim_bytes()
    METER.peak = base
    METER.base = base - held
    _lib.shim_reset_max()
    with METER:
        if INFER:
            infer(g, env)
        else:
            step(g, env, policy)
    got = METER.peak - base + held
    trace = METER.trace
    METER = None
    if INFER:   # the same forward under inference_mode: the high-water marks
        most_measured = _lib.shim_max() - base + held
        for i in list(env):
            if g["tensors"][i]["kind"] not in ("input", "param"):
                del env[i]
        base = _lib.shim_bytes()
        _lib.shim_reset_max()
        infer(g, env, inference_mode=True)
        most = _lib.shim_max() - base + held
        env = None
    diff = (want - got) / got
    name = os.path.basename(net)
    line = ("%-14s %-24s pytorch %12d  remat --runtime pytorch-cpu%s %12d  diff %+.4f%%"
            % (name, " ".join(defs)[:24], got, (" -O2 --emit-torch" if emit else "") +
               (" (selective)" if selective else "") +
               (" --precision mixed" if AUTOCAST else "") + (" --infer" if INFER else ""),
               want, 100 * diff))
    ok = abs(diff) <= tol
    if INFER:
        line += "; high-water marks: measured %d, under inference_mode %d" % (
            most_measured, most)
        ok = ok and most == most_measured
    if (AUTOCAST or INFER) and not emit:
        # the op-boundary values of the -O0 schedule (with --emit-torch,
        # the schedule is remat's plan, not the wrapping that ran), step
        # by step, within 0.1% of a measured one
        b = boundaries(trace, rep["schedule"], 0.001)
        line += "; boundaries within 0.1%%: forward %d of %d" % tuple(b["forward"])
        if not INFER:
            line += ", backward %d of %d" % tuple(b["backward"])
        # every forward step is a measured boundary; the backward's order
        # of independent nodes (the engine's) may differ from remat's -O0
        ok = ok and b["forward"][0] == b["forward"][1]
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
