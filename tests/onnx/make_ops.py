#!/usr/bin/python3
"""make_ops.py -- the hand-written op fixtures under tests/onnx/ (run by
hand: python3 tests/onnx/make_ops.py). Written with onnxpb.py, so neither
torch nor the onnx package is needed. Each fixture exercises ops that the
torchvision exports need (docs/onnx.md): HardSwish and HardSigmoid,
ReduceMean/ReduceSum over axis lists, pooling with ceil_mode, asymmetric and
per-axis pads, 1-D convolutions, and the constant folding of shape and mask
arithmetic, and the Einsum contractions of window attention. Parameters are graph inputs (as with export_params=False);
params.txt gets each fixture's parameter count, the sum of its parameter
inputs' elements. tests/onnx/NAME.net is the same model written by hand in
.net; tests/onnx.sh checks that both have the same peak."""
import os

from onnxpb import FLOAT, INT64, const, model, node, tensor, value_info

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
    """An audio-style front end: a causal conv1d (padded on the left only)
    whose bias has its first two entries zeroed by a ScatterND (as Swin V2
    zeroes part of its qkv bias),
    a strided one, ReduceMean over the last axis without keepdims,
    F.normalize (ReduceL2, Div), a HardSigmoid with Keras's alpha 0.2, MatMul."""
    n = [
        const("zi", "zi", INT64, [2, 1], [0, 1]), const("zu", "zu", FLOAT, [2], [0.0, 0.0]),
        node("ScatterND", ["b1", "zi", "zu"], ["b1z"], name="zero_bias"),
        node("Conv", ["x", "w1", "b1z"], ["c1"], name="causal", pads=[2, 0]),
        node("Relu", ["c1"], ["r1"], name="relu"),
        node("Conv", ["r1", "w2"], ["c2"], name="down", strides=[2], pads=[1, 1]),
        node("ReduceMean", ["c2"], ["m"], name="mean_t", axes=[-1], keepdims=0),
        node("ReduceL2", ["m"], ["l2"], name="norm", axes=[-1], keepdims=1),
        node("Div", ["m", "l2"], ["mn"], name="normalize"),
        node("HardSigmoid", ["mn"], ["g"], name="gate", alpha=0.2),
        node("MatMul", ["g", "w3"], ["out"], name="proj"),
    ]
    params = [("w1", [6, 4, 3]), ("b1", [6]), ("w2", [6, 6, 3]), ("w3", [6, 5])]
    return save("ops_conv1d", n, [("x", [2, 4, 16])], params, [("out", [2, 5])])


def fold():
    """Swin-style shape and mask arithmetic that folds at import, checked
    through the shapes it computes: a window pad from Mod of the negated
    length (Python's sign), a Range, Div, ScatterND into a ConstantOfShape
    (the window ids), a mask by Sub/Equal/Not/Where, Transposed; a Reshape
    target from a ReduceSum of the mask's zeros and a Gather from a reversed
    (step -1) Slice; stochastic depth's RandomUniformLike, Less, Cast, Div;
    and strided Slices of a tensor (PatchMerging's x[:, 0::2]), which are
    views. With any fold wrong the Reshape fails or the peak moves off the
    .net twin's."""
    def c64(nm, v, dims=()):
        return const(nm, nm, INT64, list(dims), v if isinstance(v, list) else [v])
    n = [
        node("Shape", ["x"], ["shp"], name="shape"),
        c64("one", 1), c64("zero", 0), c64("four", 4), c64("two", 2), c64("six", 6),
        c64("ax0", [0], [1]), c64("ax1", [1], [1]),
        node("Gather", ["shp", "one"], ["S"], name="gather_s"),
        node("Gather", ["shp", "zero"], ["B"], name="gather_b"),
        node("Neg", ["S"], ["negS"], name="neg"),
        node("Mod", ["negS", "four"], ["pad"], name="mod_pad"),          # -6 mod 4 = 2
        node("Add", ["S", "pad"], ["P"], name="padded"),                 # 8
        node("Range", ["zero", "P", "one"], ["r"], name="range"),
        node("Div", ["r", "four"], ["q"], name="window"),                # 0 0 0 0 1 1 1 1
        node("Unsqueeze", ["P", "ax0"], ["P1"], name="p1"),
        node("ConstantOfShape", ["P1"], ["z"], name="zeros",
             value=("t", tensor("", INT64, [1], int64s=[0]))),
        c64("sidx", [5, 6, 7], [3, 1]), c64("supd", [1, 1, 1], [3]),
        node("ScatterND", ["z", "sidx", "supd"], ["sc"], name="scatter"),  # 0 0 0 0 0 1 1 1
        node("Add", ["q", "sc"], ["ids8"], name="ids8"),                 # 0 0 0 0 1 2 2 2
        node("Unsqueeze", ["S", "ax0"], ["S1"], name="s1"),
        node("Slice", ["ids8", "ax0", "S1", "ax0"], ["ids"], name="crop"),   # 0 0 0 0 1 2
        node("Unsqueeze", ["ids", "ax1"], ["idc"], name="col"),
        node("Unsqueeze", ["ids", "ax0"], ["idr"], name="row"),
        node("Sub", ["idc", "idr"], ["diff"], name="diff"),
        node("Equal", ["diff", "zero"], ["eq"], name="eq"),
        node("Not", ["eq"], ["ne"], name="ne"),
        const("m100", "m100", FLOAT, [], [-100.0]), const("f0", "f0", FLOAT, [], [0.0]),
        node("Where", ["ne", "m100", "f0"], ["mask0"], name="mask"),
        node("Transpose", ["mask0"], ["mask"], name="mask_t", perm=[1, 0]),
        node("Transpose", ["x"], ["xt"], name="xt", perm=[0, 2, 1]),
        node("MatMul", ["x", "xt"], ["sc0"], name="scores"),
        node("Add", ["sc0", "mask"], ["sc1"], name="masked"),
        node("Softmax", ["sc1"], ["prob"], name="softmax", axis=-1),
        node("MatMul", ["prob", "x"], ["y"], name="attend"),
        node("Cast", ["eq"], ["eqi"], name="eq_int", to=INT64),
        node("ReduceSum", ["eqi"], ["K"], name="pairs", keepdims=0),     # 18
        c64("m1", [-1], [1]), c64("big_neg", [-(1 << 62)], [1]),
        node("Slice", ["ids", "m1", "big_neg", "ax0", "m1"], ["rev"], name="reverse"),
        node("Gather", ["rev", "zero"], ["first"], name="first"),        # 2
        node("Div", ["K", "six"], ["K6"], name="k6"),                    # 3
        node("Sub", ["first", "two"], ["off"], name="off"),              # 0
        node("Add", ["K6", "off"], ["L"], name="last"),                  # 3
        node("Unsqueeze", ["L", "ax0"], ["L1"], name="l1"),
        c64("b2", [2], [1]),
        node("Concat", ["b2", "m1", "L1"], ["tgt"], name="target", axis=0),
        node("Reshape", ["y", "tgt"], ["yr"], name="reshape"),          # [2, 32, 3]
        c64("end32", [32], [1]), c64("st2", [2], [1]),
        node("Slice", ["yr", "ax0", "end32", "ax1", "st2"], ["ev"], name="even"),
        node("Slice", ["yr", "ax1", "end32", "ax1", "st2"], ["od"], name="odd"),
        node("Concat", ["ev", "od"], ["cat"], name="merge", axis=-1),   # [2, 16, 6]
        node("Unsqueeze", ["B", "ax0"], ["B1"], name="b1"),
        c64("ones2", [1, 1], [2]),
        node("Concat", ["B1", "ones2"], ["nshape"], name="nshape", axis=0),
        node("ConstantOfShape", ["nshape"], ["n0"], name="n0",
             value=("t", tensor("", FLOAT, [1], floats=[0.0]))),
        node("RandomUniformLike", ["n0"], ["u"], name="uniform"),
        const("keep_p", "keep_p", FLOAT, [], [0.8]),
        node("Less", ["u", "keep_p"], ["keep"], name="keep"),
        node("Cast", ["keep"], ["keepf"], name="keep_f", to=FLOAT),
        node("Div", ["keepf", "keep_p"], ["noise"], name="noise"),
        node("Mul", ["cat", "noise"], ["dropped"], name="drop_path"),
        node("ReduceMean", ["dropped"], ["pooled"], name="pool", axes=[1], keepdims=0),
        node("MatMul", ["pooled", "w"], ["out"], name="head"),
    ]
    return save("ops_fold", n, [("x", [2, 6, 16])], [("w", [6, 5])], [("out", [2, 5])])


def einsum():
    """Window attention as maxvit_t exports it: Einsum "bhid,bhjd->bhij" for
    the scores and "bhij,bhjd->bhid" for the output, then a projection
    written as Einsum "bhjd,dk->bhjk" (no batch letter: flattened to one
    matmul), and the head."""
    n = [
        node("MatMul", ["x", "wq"], ["q"], name="q"),
        node("MatMul", ["x", "wk"], ["k"], name="k"),
        node("MatMul", ["x", "wv"], ["v"], name="v"),
        node("Einsum", ["q", "k"], ["s"], name="scores", equation="b h i d, b h j d -> b h i j"),
        node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
        node("Einsum", ["p", "v"], ["a"], name="attend", equation="bhij,bhjd->bhid"),
        node("Einsum", ["a", "wo"], ["o"], name="proj", equation="bhjd,dk->bhjk"),
        const("flat", "flat", INT64, [2], [2, 60]),
        node("Reshape", ["o", "flat"], ["f"], name="flatten"),
        node("MatMul", ["f", "wh"], ["out"], name="head"),
    ]
    params = [("wq", [4, 4]), ("wk", [4, 4]), ("wv", [4, 4]), ("wo", [4, 4]),
              ("wh", [60, 5])]
    return save("ops_einsum", n, [("x", [2, 3, 5, 4])], params, [("out", [2, 5])])


def main():
    lines = [windows(), conv1d(), fold(), einsum()]
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
