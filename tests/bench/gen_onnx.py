#!/usr/bin/python3
"""gen_onnx.py KIND N > model.onnx -- large ONNX models for the importer's
bounded-work reproducers (tests/bench/bench_repro.sh), written with
tests/onnx/onnxpb.py:

  sigmoids N   x feeds N Sigmoids whose outputs are summed by a chain of N
               Adds after all of them: each Sigmoid's one consumer is N
               nodes on (a scan per Sigmoid was quadratic)
  names N      a chain of N Relus whose outputs are named "a" and
               punctuation, all of which become the .net name "a" (a search
               for a free "a_K" from K = 2 each time was quadratic)
  where N      N Where nodes of distinct shapes, each a custom op of its own
  blocks N     a chain of N repeated blocks "/blocks.I/", Relu then a scale
               by a constant that pairs of blocks share: N / 2 defs of two
               instances each
  bnblocks N   a chain of N blocks of a BatchNorm and a Relu, with 2N running
               statistics (each was offered to every block: quadratic)
  nodebomb N   N empty nodes: two bytes of file each, about a hundred
               unpacked
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx"))
from onnxpb import FLOAT, const, f_bytes, model, node, tensor, value_info  # noqa: E402

kind, n = sys.argv[1], int(sys.argv[2])
x = value_info("x", FLOAT, [4])
y = value_info("y", FLOAT, [4])
if kind == "sigmoids":
    nodes = [node("Sigmoid", ["x"], ["s%d" % i], name="sig%d" % i) for i in range(n)]
    prev = "x"
    for i in range(n):
        out = "y" if i == n - 1 else "a%d" % i
        nodes.append(node("Add", [prev, "s%d" % i], [out], name="add%d" % i))
        prev = out
    data = model(nodes, [x], [y])
elif kind == "names":
    punct = "!#$%&()*+,-.:;<=>?@[]^{|}~"
    names = []
    for i in range(n):
        s, k = "", i
        while True:
            s += punct[k % len(punct)]
            k //= len(punct)
            if not k:
                break
        names.append("a" + s)
    nodes, prev = [], "x"
    for i in range(n):
        out = "y" if i == n - 1 else names[i]
        nodes.append(node("Relu", [prev], [out], name="relu%d" % i))
        prev = out
    data = model(nodes, [x], [y])
elif kind == "where":
    nodes = [node("Constant", [], ["c"], name="c", value=("t", tensor("", 9, [], raw=b"\x01")))]
    ins = []
    for i in range(n):
        ins.append(value_info("x%d" % i, FLOAT, [i + 1]))
        nodes.append(node("Where", ["c", "x%d" % i, "x%d" % i], ["w%d" % i], name="where%d" % i))
    outs = [value_info("w%d" % i, FLOAT, [i + 1]) for i in range(n)]
    data = model(nodes, ins, outs)
elif kind == "blocks":
    nodes, prev = [], "x"
    for i in range(n // 2):
        nodes.append(const("/c%d/Constant" % i, "c%d" % i, FLOAT, [], [i + 2.0]))
    for i in range(n):
        out = "y" if i == n - 1 else "h%d" % i
        nodes.append(node("Relu", [prev], ["r%d" % i], name="/blocks.%d/Relu" % i))
        nodes.append(node("Mul", ["r%d" % i, "c%d" % (i // 2)], [out], name="/blocks.%d/Mul" % i))
        prev = out
    data = model(nodes, [x], [y])
elif kind == "bnblocks":
    x, y = value_info("x", FLOAT, [1, 2, 1, 1]), value_info("y", FLOAT, [1, 2, 1, 1])
    nodes, prev, ins = [], "x", [x]
    for i in range(n):
        p = "layer.%d.bn." % i
        ins += [value_info(p + w, FLOAT, [2])
                for w in ("weight", "bias", "running_mean", "running_var")]
        out = "y" if i == n - 1 else "/layer.%d/relu/out" % i
        nodes.append(node("BatchNormalization",
                          [prev] + [p + w for w in ("weight", "bias", "running_mean",
                                                    "running_var")],
                          ["/layer.%d/bn/o" % i], name="/layer.%d/bn/BatchNormalization" % i,
                          training_mode=1))
        nodes.append(node("Relu", ["/layer.%d/bn/o" % i], [out], name="/layer.%d/relu/Relu" % i))
        prev = out
    data = model(nodes, ins, [y])
elif kind == "nodebomb":
    g = f_bytes(1, b"") * n + f_bytes(11, value_info("x", FLOAT, [4]))
    data = f_bytes(7, g)
else:
    sys.exit("gen_onnx.py: unknown kind " + kind)
sys.stdout.buffer.write(data)
