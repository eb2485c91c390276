#!/usr/bin/python3
"""make_bad.py -- the malformed ONNX files under tests/onnx/bad (run by
hand with /usr/bin/python3; python3-onnx). Each is tiny; tests/onnx.sh checks
that remat rejects each with a clear message and exit 1."""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad")
F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def save(name, m):
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString() if hasattr(m, "SerializeToString") else m)


x = helper.make_tensor_value_info("x", F, [2, 4])
w = helper.make_tensor_value_info("w", F, [4, 4])
y = helper.make_tensor_value_info("y", F, [2, 4])

ok = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [x, w], [y])
data = ok.SerializeToString()
# truncated protobuf: the first half of a valid file
save("truncated", data[: len(data) // 2])
# wrong field type: ModelProto.graph (field 7) written as a varint
save("wrong-field-type", b"\x08\x08\x38\x01")
# a Constant that declares a 1 GB tensor (2^28 floats) but holds 4 bytes
big = helper.make_tensor("big", F, [1], [1.0])
big.dims[0] = 1 << 28
save("huge-tensor", model([helper.make_node("Constant", [], ["c"], name="c", value=big),
                           helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                          [x], [y]))
# a cycle: a -> b -> a
save("cycle", model([helper.make_node("Relu", ["b"], ["a"], name="r1"),
                     helper.make_node("Relu", ["a"], ["b"], name="r2"),
                     helper.make_node("Add", ["x", "b"], ["y"], name="add")],
                    [x], [y]))
# an input no one defines
save("missing-input", model([helper.make_node("MatMul", ["x", "nowhere"], ["y"], name="mm")],
                            [x], [y]))
# an op remat has no mapping for
save("unsupported-op", model([helper.make_node("LpNormalization", ["x"], ["y"], name="lpn")],
                             [x], [y]))
# a shape mismatch
save("shape-mismatch", model([helper.make_node("MatMul", ["x", "x"], ["y"], name="mm")],
                             [x], [y]))
