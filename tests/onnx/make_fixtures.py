#!/usr/bin/python3
"""make_fixtures.py -- build the ONNX fixtures under tests/onnx/ (run by hand).

Run with Debian's interpreter: /usr/bin/python3 tests/onnx/make_fixtures.py
(python3-torch, python3-torchvision, python3-onnx). Every model gets random
weights (nothing is downloaded) and is exported in training mode with
export_params=False, so the files hold only the graph and the shapes: the
parameters become graph inputs. params.txt records each module's own
parameter count (sum of p.numel() over module.parameters()) and the bytes of
its BatchNorm running statistics, which the tests compare with remat's
parameter count and buffer bytes.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


class Block(nn.Module):
    """A pre-norm transformer block written like Hugging Face's GPT-2/BERT:
    attention as matmul + softmax (no fused kernel), GELU MLP."""

    def __init__(self, d, h, causal, act="gelu"):
        super().__init__()
        self.h, self.causal = h, causal
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.reshape(b, s, self.h, d // self.h).transpose(1, 2)
        k = k.reshape(b, s, self.h, d // self.h).transpose(1, 2)
        v = v.reshape(b, s, self.h, d // self.h).transpose(1, 2)
        a = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        if self.causal:
            mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
            a = a.masked_fill(~mask, float("-inf"))
        a = self.drop(F.softmax(a, dim=-1))
        a = (a @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.drop(self.proj(a))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class GPT2(nn.Module):
    def __init__(self, v=64, s=16, d=32, h=2, n=2):
        super().__init__()
        self.wte = nn.Embedding(v, d)
        self.wpe = nn.Embedding(s, d)
        self.blocks = nn.ModuleList(Block(d, h, True) for _ in range(n))
        self.lnf = nn.LayerNorm(d)

    def forward(self, tokens, pos):
        x = self.wte(tokens) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.lnf(x) @ self.wte.weight.t()


class BERT(nn.Module):
    def __init__(self, v=64, s=16, d=32, h=2, n=2):
        super().__init__()
        self.wte = nn.Embedding(v, d)
        self.wpe = nn.Embedding(s, d)
        self.lne = nn.LayerNorm(d)
        self.blocks = nn.ModuleList(Block(d, h, False) for _ in range(n))
        self.head = nn.Linear(d, v)

    def forward(self, tokens, pos):
        x = self.lne(self.wte(tokens) + self.wpe(pos))
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(nn.Module):
    def __init__(self, d, h, f):
        super().__init__()
        self.h = h
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.w1 = nn.Linear(d, f, bias=False)
        self.w3 = nn.Linear(d, f, bias=False)
        self.w2 = nn.Linear(f, d, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        y = self.n1(x)
        q = self.wq(y).view(b, s, self.h, d // self.h).transpose(1, 2)
        k = self.wk(y).view(b, s, self.h, d // self.h).transpose(1, 2)
        v = self.wv(y).view(b, s, self.h, d // self.h).transpose(1, 2)
        a = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        a = F.softmax(a.masked_fill(~mask, float("-inf")), dim=-1)
        x = x + self.wo((a @ v).transpose(1, 2).reshape(b, s, d))
        y = self.n2(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


class Llama(nn.Module):
    def __init__(self, v=64, d=32, h=2, f=88, n=2):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.blocks = nn.ModuleList(LlamaBlock(d, h, f) for _ in range(n))
        self.norm = RMSNorm(d)
        self.out = nn.Linear(d, v, bias=False)

    def forward(self, tokens):
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.out(self.norm(x))


class ConvBN(nn.Module):
    """A small convnet with BatchNorm, for the inference-export fixture."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 16 * 16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


def export(name, model, args, in_names, eval_mode=False, dynamic=None, opset=17):
    """Training-mode export without weights; eval_mode: an inference export
    with weights as initializers and BatchNorm folded into the convolution."""
    path = os.path.join(HERE, name + ".onnx")
    if eval_mode:
        model.eval()
        torch.onnx.export(model, args, path, export_params=True,
                          training=torch.onnx.TrainingMode.EVAL,
                          do_constant_folding=True, opset_version=17,
                          input_names=in_names, output_names=["out"])
    else:
        model.train()
        torch.onnx.export(model, args, path, export_params=False,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=opset,
                          input_names=in_names, output_names=["out"],
                          dynamic_axes=dynamic)
    n = sum(p.numel() for p in model.parameters())
    # BatchNorm's running statistics, the buffers the export takes as graph
    # inputs (num_batches_tracked is not exported); an eval export folds them
    buf = 0 if eval_mode else sum(
        b.numel() * b.element_size() for k, b in model.named_buffers()
        if k.endswith(("running_mean", "running_var")))
    print(f"{name} {n} {os.path.getsize(path)} bytes", file=sys.stderr)
    return f"{name} {n} {buf}\n"


def main():
    tv = torchvision.models
    img = torch.randn(2, 3, 224, 224)
    tok = torch.randint(0, 64, (2, 16))
    pos = torch.arange(16)
    lines = []
    only = sys.argv[1:]
    jobs = [
        ("resnet18", lambda: tv.resnet18(), (img,), ["images"]),
        ("resnet50", lambda: tv.resnet50(), (img,), ["images"]),
        ("mobilenet_v2", lambda: tv.mobilenet_v2(), (img,), ["images"]),
        ("vit_b_16", lambda: tv.vit_b_16(), (img,), ["images"]),
        ("gpt2_tiny", lambda: GPT2(), (tok, pos), ["tokens", "pos"]),
        ("bert_tiny", lambda: BERT(), (tok, pos), ["tokens", "pos"]),
        ("llama_tiny", lambda: Llama(), (tok,), ["tokens"]),
    ]
    for name, make, args, in_names in jobs:
        if not only or name in only:
            lines.append(export(name, make(), args, in_names))
    # a symbolic batch dimension (-Dbatch=N), an inference export, and
    # GPT-2 at opset 14, where LayerNorm is exported decomposed
    mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    extra = [
        ("mlp_dynbatch", lambda: export("mlp_dynbatch", mlp, (torch.randn(4, 64),),
                                        ["x"], dynamic={"x": {0: "batch"}})),
        ("convbn_eval", lambda: export("convbn_eval", ConvBN(),
                                       (torch.randn(2, 3, 32, 32),), ["images"],
                                       eval_mode=True)),
        ("gpt2_tiny_opset14", lambda: export("gpt2_tiny_opset14", GPT2(), (tok, pos),
                                             ["tokens", "pos"], opset=14)),
    ]
    for name, run in extra:
        if not only or name in only:
            lines.append(run())
    # params.txt keeps the entries of fixtures not rebuilt this time
    path = os.path.join(HERE, "params.txt")
    counts = {}
    if os.path.exists(path):
        for line in open(path):
            if not line.startswith("#") and line.split():
                counts[line.split()[0]] = line
    for line in lines:
        counts[line.split()[0]] = line
    with open(path, "w") as f:
        f.write("# fixture  parameters (sum of numel over module.parameters())  "
                "buffer bytes (BatchNorm running_mean and running_var)\n")
        f.writelines(counts[k] for k in sorted(counts))


if __name__ == "__main__":
    main()
