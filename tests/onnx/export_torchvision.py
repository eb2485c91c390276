#!/usr/bin/env python3
"""export_torchvision.py -- export torchvision models in training mode and
import each with remat (run by hand; not part of make check: it needs torch,
torchvision and onnx, and minutes of CPU). The results are the table in
tests/onnx/MODELS.md.

    python3 tests/onnx/export_torchvision.py OUTDIR REMAT [MODEL...]

For each model (default: the list below) writes OUTDIR/MODEL.onnx with
torch.onnx.export in training mode, export_params=False, opset 17, the
TorchScript exporter (dynamo=False), batch 2 at the model's own image size,
then runs `REMAT --import onnx --loss cross_entropy:OUT` and prints one
Markdown row: the module's parameter count (sum of p.numel()) and
remat's, the bytes of the module's BatchNorm running statistics and remat's
buffer bytes, the module's other buffers, the -O0 peak, or the first error
line of the export or the import."""
import os
import subprocess
import sys
import warnings

import torch
import torchvision

MODELS = ["resnet18", "mnasnet1_0", "shufflenet_v2_x1_0", "mobilenet_v3_large",
          "googlenet", "inception_v3", "squeezenet1_1", "swin_t", "vit_b_16"]


def build(name):
    tv = torchvision.models
    if name == "googlenet":
        # the auxiliary classifiers' adaptive_avg_pool2d(4) of 14x14 does not
        # export (torch: "output size that are not factor of input size")
        return tv.googlenet(aux_logits=False, init_weights=True)
    if name == "inception_v3":
        return tv.inception_v3(aux_logits=False, init_weights=True)
    return getattr(tv, name)()


def export(name, path):
    m = build(name).train()
    size = 299 if name == "inception_v3" else 224
    x = torch.randn(2, 3, size, size)
    torch.onnx.export(m, (x,), path, export_params=False,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17,
                      input_names=["images"], output_names=["out"], dynamo=False)
    params = sum(p.numel() for p in m.parameters())
    stats = sum(b.numel() * b.element_size() for k, b in m.named_buffers()
                if k.endswith(("running_mean", "running_var")))
    other = [(k, b) for k, b in m.named_buffers()
             if not k.endswith(("running_mean", "running_var", "num_batches_tracked"))]
    return params, stats, other


def field(report, key):
    for line in report.splitlines():
        if line.startswith(key):
            return line
    return ""


def main():
    out, remat = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or MODELS
    os.makedirs(out, exist_ok=True)
    warnings.filterwarnings("ignore")
    print("| model | parameters (module = remat) | running stats bytes (module = remat) "
          "| other buffers | -O0 peak, batch 2 | result |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        path = os.path.join(out, name + ".onnx")
        try:
            params, stats, other = export(name, path)
        except Exception as e:     # report the exporter's failure and go on
            print(f"| {name} | | | | | export fails: {str(e).splitlines()[0][:120]} |")
            continue
        r = subprocess.run([remat, "--bytes", "--import", "onnx", "--loss",
                            "cross_entropy:out", path], capture_output=True, text=True)
        if r.returncode:
            err = r.stderr.strip().splitlines()[0] if r.stderr.strip() else "exit %d" % r.returncode
            print(f"| {name} | {params:,} | {stats:,} | | | import fails: {err.split('error: ', 1)[-1][:160]} |")
            continue
        got = field(r.stdout, "parameters:").split()[1]
        buf = field(r.stdout, "buffers:")
        gotb = buf.split("(")[1].split()[0] if "(" in buf else "0"
        peak = field(r.stdout, "peak:").split("(")[1].split()[0]
        ob = ", ".join(f"{len(other)} x {tuple(other[0][1].shape)} {str(other[0][1].dtype)[6:]}"
                       for _ in [0] if other) or "none"
        ok = int(got) == params and int(gotb) == stats
        print(f"| {name} | {params:,} = {int(got):,} | {stats:,} = {int(gotb):,} | {ob} "
              f"| {int(peak):,} | {'imports' if ok else 'MISMATCH'} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
