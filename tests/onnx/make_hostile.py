#!/usr/bin/python3
"""make_hostile.py -- hostile ONNX models under tests/onnx/bad: numbers at
and past the importer's caps (docs/limits.md, "ONNX models"). Written with
onnxpb.py, without the onnx package, since most of these values are ones
its helpers refuse. Run by hand (python3 make_hostile.py); tests/onnx.sh
checks that remat rejects each with a located error, exit 1 and no output.
Names ending in a node's name say where the error must point."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxpb import FLOAT, INT64, const, model, node, tensor, value_info  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad")
BIG = (1 << 63) - 1
NEAR = 1 << 62

x24 = value_info("x", FLOAT, [2, 4])
y24 = value_info("y", FLOAT, [2, 4])
y1 = value_info("y", FLOAT, [1])
img = value_info("x", FLOAT, [1, 3, 8, 8])
wk = value_info("w", FLOAT, [4, 3, 3, 3])
yimg = value_info("y", FLOAT, [1, 4, 6, 6])


def save(name, data):
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(data)


# Gather whose result would have 15 axes: 8-D data, 8-D integer indices
# (wrote past the 8-entry shape array on the stack). The graph output's
# declared shape is not read.
save("gather-15-axes", model(
    [node("Gather", ["x", "i"], ["y"], name="g15")],
    [value_info("x", FLOAT, [1] * 7 + [2]), value_info("i", INT64, [1] * 8)],
    [y1]))
# a graph output declared with 15 axes (refused at the door)
save("output-15-axes", model(
    [node("Relu", ["x"], ["y"], name="relu")],
    [x24], [value_info("y", FLOAT, [1] * 15)]))

# Expand of a constant to a negative dim (kalloc(-5): a heap overflow)
save("expand-negative", model(
    [const("cx", "cx", FLOAT, [1], [1.0]),
     const("cs", "cs", INT64, [1], [-5]),
     node("Expand", ["cx", "cs"], ["e"], name="expand_neg"),
     node("Add", ["x", "e"], ["y"], name="add")],
    [value_info("x", FLOAT, [1])], [y1]))

# Expand of a constant to dims near 2^63 (the element count overflowed)
save("expand-huge", model(
    [const("cx", "cx", FLOAT, [1], [1.0]),
     const("cs", "cs", INT64, [3], [BIG, BIG, -BIG - 1]),
     node("Expand", ["cx", "cs"], ["e"], name="expand_huge"),
     node("Add", ["x", "e"], ["y"], name="add")],
    [value_info("x", FLOAT, [1])], [y1]))

# Expand of a tensor to 2^62 x 2^62
save("expand-tensor-huge", model(
    [const("cs", "cs", INT64, [2], [NEAR, NEAR]),
     node("Expand", ["x", "cs"], ["y"], name="expand_t")],
    [value_info("x", FLOAT, [1])], [y1]))

# ConstantOfShape of 2^20 x ... (8 axes) and of a negative and a 2^63 - 1 dim
save("constantofshape-huge", model(
    [const("cs", "cs", INT64, [8], [1 << 20] * 8),
     node("ConstantOfShape", ["cs"], ["c"], name="cos_huge"),
     node("Add", ["x", "c"], ["y"], name="add")],
    [value_info("x", FLOAT, [1])], [y1]))
save("constantofshape-negative", model(
    [const("cs", "cs", INT64, [2], [BIG, -BIG - 1]),
     node("ConstantOfShape", ["cs"], ["c"], name="cos_neg"),
     node("Add", ["x", "c"], ["y"], name="add")],
    [value_info("x", FLOAT, [1])], [y1]))

# Conv pads, dilations, strides near 2^63, and a negative pad
for what, attrs in [("pads", dict(pads=[NEAR] * 4)),
                    ("pads-max", dict(pads=[BIG] * 4)),
                    ("pads-negative", dict(pads=[-3] * 4)),
                    ("dilations", dict(dilations=[NEAR, NEAR])),
                    ("strides", dict(strides=[BIG, BIG])),
                    ("group", dict(group=0)),
                    ("kernel", dict(kernel_shape=[BIG, BIG]))]:
    save("conv-" + what, model([node("Conv", ["x", "w"], ["y"], name="conv_" + what, **attrs)],
                               [img, wk], [yimg]))

# MaxPool with a kernel near 2^63
save("pool-kernel-huge", model(
    [node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[BIG, BIG])],
    [img], [yimg]))

# a node with more attributes than the cap (1,024)
many = {"a%d" % i: 1 for i in range(1100)}
save("too-many-attributes", model([node("Relu", ["x"], ["y"], name="relu_attrs", **many)],
                                  [x24], [y24]))

# a value name longer than the cap (4,096 bytes)
long_name = "n" * 5000
save("name-too-long", model([node("Relu", ["x"], [long_name], name="relu_long"),
                             node("Relu", [long_name], ["y"], name="relu2")],
                            [x24], [y24]))

# Dropout in training mode with a NaN ratio, and with ratio 1
for what, ratio in [("nan", float("nan")), ("one", 1.0)]:
    save("dropout-ratio-" + what, model(
        [const("r", "r", FLOAT, [], [ratio]),
         node("Constant", [], ["t"], name="t",
              value=("t", tensor("", 9, [], raw=b"\x01"))),
         node("Dropout", ["x", "r", "t"], ["y"], name="drop_" + what)],
        [x24], [y24]))

# x / 0: a scale by infinity
save("div-by-zero-constant", model(
    [const("z", "z", FLOAT, [], [0.0]),
     node("Div", ["x", "z"], ["y"], name="div0")],
    [x24], [y24]))

# Cast to a type number past 32 bits (2^32 + 1 would truncate to f32)
save("cast-to-huge", model([node("Cast", ["x"], ["y"], name="cast_big", to=(1 << 32) + 1)],
                           [x24], [y24]))

# Slice with more starts than axes
save("slice-too-many-axes", model(
    [const("s", "s", INT64, [9], [0] * 9), const("e", "e", INT64, [9], [1] * 9),
     node("Slice", ["x", "s", "e"], ["y"], name="slice9")],
    [x24], [y24]))

# Split into sizes of which one is negative (they still sum to the axis)
save("split-negative", model(
    [const("s", "s", INT64, [2], [6, -2]),
     node("Split", ["x", "s"], ["y", "z"], name="split_neg", axis=1)],
    [x24], [y24, value_info("z", FLOAT, [2, 1])]))

# constants folded past the model's budget: 64 ConstantOfShape of 2^20
# elements each (8 MiB apiece if kept), each feeding an Add
nodes = [const("cs", "cs", INT64, [1], [1 << 20])]
prev = "x"
for i in range(64):
    nodes.append(node("ConstantOfShape", ["cs"], ["c%d" % i], name="cos%d" % i))
    nodes.append(node("Add", ["c%d" % i, "c%d" % i], ["d%d" % i], name="fold%d" % i))
nodes.append(node("Identity", ["x"], ["y"], name="id"))
save("fold-budget", model(nodes, [x24], [y24]))

# a graph input with a dim of 2^63 - 1, and one with 9 axes
save("input-dim-huge", model([node("Relu", ["x"], ["y"], name="relu")],
                             [value_info("x", FLOAT, [BIG])], [value_info("y", FLOAT, [BIG])]))
# an initializer of 2^40 x 2^40 elements
save("initializer-huge", model(
    [node("MatMul", ["x", "w"], ["y"], name="mm")],
    [x24], [y24], inits=[tensor("w", FLOAT, [1 << 40, 1 << 40])]))
# an initializer of 9 axes, and a Constant with a dim of -1 (the door)
save("initializer-9-axes", model(
    [node("MatMul", ["x", "w"], ["y"], name="mm")],
    [x24], [y24], inits=[tensor("w", FLOAT, [1] * 9)]))
save("constant-negative-dim", model(
    [node("Constant", [], ["c"], name="cneg",
          value=("t", tensor("", INT64, [-1], int64s=[]))),
     node("Identity", ["x"], ["y"], name="id")],
    [x24], [y24]))
# a node whose output has no name (the node's result was a NULL value:
# SIGSEGV), and a Split with an unnamed second output
save("unnamed-output", model([node("Tanh", ["x"], [""], name="tanh"),
                              node("Relu", ["x"], ["y"], name="relu")], [x24], [y24]))
save("split-unnamed-output", model(
    [node("Split", ["x"], ["y", ""], name="split2", axis=0)],
    [x24], [value_info("y", FLOAT, [1, 4])]))
# a Constant whose raw data is not a whole number of elements
save("constant-raw-ragged", model(
    [node("Constant", [], ["c"], name="ragged",
          value=("t", tensor("", FLOAT, [1], raw=b"\x00\x00\x80"))),
     node("Add", ["x", "c"], ["y"], name="add")],
    [x24], [y24]))
# Reshape to a shape with a dim near 2^63
save("reshape-huge", model(
    [const("s", "s", INT64, [2], [BIG, -1]),
     node("Reshape", ["x", "s"], ["y"], name="reshape_big")],
    [x24], [y24]))
# Pad by 2^62 on every side
save("pad-huge", model(
    [const("p", "p", INT64, [4], [NEAR] * 4),
     node("Pad", ["x", "p"], ["y"], name="pad_big")],
    [x24], [y24]))
# Range of 2^62 elements
save("range-huge", model(
    [const("s", "s", INT64, [], [0]), const("l", "l", INT64, [], [NEAR]),
     const("d", "d", INT64, [], [1]),
     node("Range", ["s", "l", "d"], ["r"], name="range_big"),
     node("Identity", ["x"], ["y"], name="id")],
    [x24], [y24]))
# a float constant of NaN, used as a Reshape target
save("reshape-nan", model(
    [node("Constant", [], ["s"], name="s",
          value=("t", tensor("", FLOAT, [2], raw=struct.pack("<2f", float("nan"), 4.0)))),
     node("Cast", ["s"], ["si"], name="cast", to=INT64),
     node("Reshape", ["x", "si"], ["y"], name="reshape_nan")],
    [x24], [y24]))

# Windows: a pool pad past half its window (every window must hold some
# of x), pads of the wrong length, an unknown auto_pad; HardSigmoid with a
# beta other than 0.5 (no hardsigmoid form)
save("pool-pad-half", model(
    [node("MaxPool", ["x"], ["y"], name="pool_pad", kernel_shape=[2, 2], pads=[0, 0, 2, 0])],
    [img], [yimg]))
save("conv-pads-count", model(
    [node("Conv", ["x", "w"], ["y"], name="conv_pads3", pads=[1, 1, 1])],
    [img, wk], [yimg]))
save("conv-auto-pad", model(
    [node("Conv", ["x", "w"], ["y"], name="conv_auto", auto_pad="SAME_MIDDLE")],
    [img, wk], [yimg]))
save("hardsigmoid-beta", model(
    [node("HardSigmoid", ["x"], ["y"], name="hsig", alpha=0.2, beta=0.3)],
    [x24], [y24]))

# Folding: Mod by a constant 0; a ScatterND index past the data; Mod of a
# tensor (folds only on constants); a step-2 Slice of 7 elements, which
# needs 8 to be written as views
save("mod-zero", model(
    [const("a", "a", INT64, [], [5]), const("b", "b", INT64, [], [0]),
     node("Mod", ["a", "b"], ["m"], name="mod0"),
     node("Reshape", ["x", "m"], ["y"], name="reshape")],
    [x24], [y24]))
save("scatternd-index", model(
    [const("d", "d", INT64, [4], [0, 0, 0, 0]), const("i", "i", INT64, [1, 1], [4]),
     const("u", "u", INT64, [1], [1]),
     node("ScatterND", ["d", "i", "u"], ["s"], name="scatter4"),
     node("Reshape", ["x", "s"], ["y"], name="reshape")],
    [x24], [y24]))
save("mod-tensor", model(
    [node("Mod", ["x", "x"], ["y"], name="mod_t", fmod=1)],
    [x24], [y24]))
save("slice-step-views", model(
    [const("st", "st", INT64, [1], [0]), const("en", "en", INT64, [1], [7]),
     const("ax", "ax", INT64, [1], [1]), const("sp", "sp", INT64, [1], [2]),
     node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice_step")],
    [value_info("x", FLOAT, [2, 7])], [value_info("y", FLOAT, [2, 4])]))

# Not bad: a model with its own "labels" input and a value named "loss",
# the names --loss adds; they keep theirs, and --loss takes labels_2 and
# loss_2 (tests/onnx.sh)
save_good = os.path.join(os.path.dirname(HERE), "names_clash.onnx")
with open(save_good, "wb") as f:
    f.write(model([node("Cast", ["labels"], ["lf"], name="cast", to=FLOAT),
                   node("MatMul", ["x", "w"], ["xw"], name="mm"),
                   node("Add", ["xw", "lf"], ["loss"], name="add")],
                  [x24, value_info("w", FLOAT, [4, 4]), value_info("labels", INT64, [2, 4])],
                  [value_info("loss", FLOAT, [2, 4])]))

# Not bad either: names with newlines that would end the `#` comments of the
# emitted .net and start a statement of their own (issue 29): the producer,
# and a node name that becomes a block key (tests/onnx.sh)
with open(os.path.join(os.path.dirname(HERE), "names_inject.onnx"), "wb") as f:
    inj = "\nparam injected : f32[1000000, 1000000];\n"
    f.write(model([node("Relu", ["x"], ["r"], name="/a" + inj + "blocks.0/Relu"),
                   node("Relu", ["r"], ["s"], name="/a" + inj + "blocks.0/Relu_1"),
                   node("Relu", ["s"], ["t"], name="/a" + inj + "blocks.1/Relu"),
                   node("Relu", ["t"], ["y"], name="/a" + inj + "blocks.1/Relu_1")],
                  [x24], [y24], producer="p" + inj))

# Einsum: what the batched-matmul mapping refuses (ops.c, op_einsum)
x2345 = value_info("x", FLOAT, [2, 3, 4, 5])
w55 = value_info("w", FLOAT, [5, 5])
save("einsum-ellipsis", model(
    [node("Einsum", ["x", "w"], ["y"], name="ein_dots", equation="...d,de->...e")],
    [x2345, w55], [y24]))
save("einsum-one-sided-sum", model(
    [node("Einsum", ["x", "w"], ["y"], name="ein_sum", equation="bhid,de->bhe")],
    [x2345, w55], [y24]))
save("einsum-three", model(
    [node("Einsum", ["x", "w", "w"], ["y"], name="ein_three", equation="bhid,de,ef->bhif")],
    [x2345, w55], [y24]))
