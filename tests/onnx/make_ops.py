#!/usr/bin/python3
"""make_ops.py -- the hand-written op fixtures under tests/onnx/ (run by
hand: python3 tests/onnx/make_ops.py). Written with onnxpb.py, so neither
torch nor the onnx package is needed. Each fixture exercises ops that the
torchvision exports need (docs/onnx.md): HardSwish and HardSigmoid,
ReduceMean/ReduceSum over axis lists, pooling with ceil_mode, asymmetric and
per-axis pads, 1-D convolutions, and the constant folding of shape and mask
arithmetic. Parameters are graph inputs (as with export_params=False);
params.txt gets each fixture's parameter count, the sum of its parameter
inputs' elements. tests/onnx/NAME.net is the same model written by hand in
.net; tests/onnx.sh checks that both have the same peak."""
import os

from onnxpb import FLOAT, INT64, const, model, node, value_info

HERE = os.path.dirname(os.path.abspath(__file__))
BOOL = 9


def save(name, nodes, data, params, outputs, inits=(), opset=17):
    """data and params: (name, dims) graph inputs, data first (PyTorch's
    order, which the importer's default --params rule takes)."""
    ins = [value_info(n, FLOAT, d) for n, d in data + params]
    outs = [value_info(n, FLOAT, d) for n, d in outputs]
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(model(nodes, ins, outs, inits=inits, opset=opset))
    count = 0
    for _, d in params:
        k = 1
        for x in d:
            k *= x
        count += k
    return f"{name} {count} 0\n"


def windows():
    """A small mobile/inception-style convnet: a stride-2 conv padded on the
    bottom and right only (TF "SAME"), HardSwish, a depthwise conv, MaxPool
    with ceil_mode, a squeeze-excite gate (ReduceMean over [2, 3], 1x1
    convs, HardSigmoid), 1x7 and 7x1 convs with per-axis pads, AveragePool
    with ceil_mode, ReduceSum over [2, 3] (axes as an input, opset 13+), a
    Gemm head."""
    n = [
        node("Conv", ["x", "w1", "b1"], ["c1"], name="stem", strides=[2, 2],
             pads=[0, 0, 1, 1], kernel_shape=[3, 3]),
        node("HardSwish", ["c1"], ["h1"], name="hswish"),
        node("Conv", ["h1", "w2"], ["c2"], name="dw", group=8, pads=[1, 1, 1, 1]),
        node("MaxPool", ["c2"], ["p1"], name="pool_ceil", kernel_shape=[3, 3],
             strides=[2, 2], ceil_mode=1),
        const("axes23", "axes23", INT64, [2], [2, 3]),
        node("ReduceMean", ["p1"], ["se0"], name="se_mean", axes=[2, 3], keepdims=1),
        node("Conv", ["se0", "w3", "b3"], ["se1"], name="se_fc1"),
        node("Relu", ["se1"], ["se2"], name="se_relu"),
        node("Conv", ["se2", "w4", "b4"], ["se3"], name="se_fc2"),
        node("HardSigmoid", ["se3"], ["se4"], name="se_gate", alpha=1 / 6, beta=0.5),
        node("Mul", ["p1", "se4"], ["g1"], name="se_mul"),
        node("Conv", ["g1", "w5"], ["c5"], name="conv1x7", pads=[0, 3, 0, 3]),
        node("Conv", ["c5", "w6"], ["c6"], name="conv7x1", pads=[3, 0, 3, 0]),
        node("AveragePool", ["c6"], ["p2"], name="avg_ceil", kernel_shape=[3, 3],
             strides=[2, 2], ceil_mode=1),
        node("ReduceSum", ["p2", "axes23"], ["s1"], name="sum23", keepdims=0),
        node("Gemm", ["s1", "wf", "bf"], ["out"], name="fc", transB=1),
    ]
    params = [("w1", [8, 3, 3, 3]), ("b1", [8]), ("w2", [8, 1, 3, 3]),
              ("w3", [4, 8, 1, 1]), ("b3", [4]), ("w4", [8, 4, 1, 1]), ("b4", [8]),
              ("w5", [8, 8, 1, 7]), ("w6", [8, 8, 7, 1]), ("wf", [10, 8]), ("bf", [10])]
    return save("ops_windows", n, [("x", [2, 3, 16, 16])], params, [("out", [2, 10])])


def conv1d():
    """An audio-style front end: a causal conv1d (padded on the left only),
    a strided one, ReduceMean over the last axis without keepdims, a
    HardSigmoid with Keras's alpha 0.2, MatMul."""
    n = [
        node("Conv", ["x", "w1", "b1"], ["c1"], name="causal", pads=[2, 0]),
        node("Relu", ["c1"], ["r1"], name="relu"),
        node("Conv", ["r1", "w2"], ["c2"], name="down", strides=[2], pads=[1, 1]),
        node("ReduceMean", ["c2"], ["m"], name="mean_t", axes=[-1], keepdims=0),
        node("HardSigmoid", ["m"], ["g"], name="gate", alpha=0.2),
        node("MatMul", ["g", "w3"], ["out"], name="proj"),
    ]
    params = [("w1", [6, 4, 3]), ("b1", [6]), ("w2", [6, 6, 3]), ("w3", [6, 5])]
    return save("ops_conv1d", n, [("x", [2, 4, 16])], params, [("out", [2, 5])])


def main():
    lines = [windows(), conv1d()]
    path = os.path.join(HERE, "params.txt")
    counts = {}
    head = ""
    for line in open(path):
        if line.startswith("#"):
            head += line
        elif line.split():
            counts[line.split()[0]] = line
    for line in lines:
        counts[line.split()[0]] = line
    with open(path, "w") as f:
        f.write(head)
        f.writelines(counts[k] for k in sorted(counts))


if __name__ == "__main__":
    main()
