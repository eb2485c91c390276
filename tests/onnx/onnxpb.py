"""onnxpb.py -- writes ONNX models as protobuf bytes with no dependency
(neither the onnx package nor google.protobuf): the field numbers are those
of frontend/onnx/onnx_subset.proto, which are the ONNX standard's. For the
hostile test models (make_hostile.py) and the benchmark generators
(tests/bench/bench_repro.sh), which need values the onnx package's helpers
refuse to write (negative dims, 2^63 - 1, fifteen-axis results)."""
import struct

FLOAT, INT64 = 1, 7


def varint(v):
    v &= (1 << 64) - 1          # negative int64: ten bytes, two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num, wire):
    return varint(num << 3 | wire)


def f_int(num, v):
    return key(num, 0) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return key(num, 2) + varint(len(b)) + b


def f_float(num, v):
    return key(num, 5) + struct.pack("<f", v)


def dim(d):
    """TensorShapeProto.Dimension: an int is dim_value, a str dim_param."""
    return f_int(1, d) if isinstance(d, int) else f_bytes(2, d)


def value_info(name, elem, dims):
    shape = b"".join(f_bytes(1, dim(d)) for d in dims)
    tensor = f_int(1, elem) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor))


def tensor(name, elem, dims, int64s=None, floats=None, raw=None):
    t = b"".join(f_int(1, d) for d in dims) + f_int(2, elem)
    if floats is not None:
        t += f_bytes(4, b"".join(struct.pack("<f", x) for x in floats))
    if int64s is not None:
        t += f_bytes(7, b"".join(varint(x) for x in int64s))
    if name:
        t += f_bytes(8, name)
    if raw is not None:
        t += f_bytes(9, raw)
    return t


def attr(name, v):
    """An attribute from a Python value: int, float, bytes/str, list of
    ints, or ('t', tensor bytes)."""
    a = f_bytes(1, name)
    if isinstance(v, tuple) and v[0] == "t":
        return a + f_bytes(5, v[1]) + f_int(20, 4)
    if isinstance(v, bool) or isinstance(v, int):
        return a + f_int(3, int(v)) + f_int(20, 2)
    if isinstance(v, float):
        return a + f_float(2, v) + f_int(20, 1)
    if isinstance(v, (bytes, str)):
        return a + f_bytes(4, v) + f_int(20, 3)
    return a + b"".join(f_int(8, x) for x in v) + f_int(20, 7)


def node(op, inputs, outputs, name="", **attrs):
    n = b"".join(f_bytes(1, i) for i in inputs)
    n += b"".join(f_bytes(2, o) for o in outputs)
    n += f_bytes(3, name or op.lower()) + f_bytes(4, op)
    n += b"".join(f_bytes(5, attr(k, v)) for k, v in attrs.items())
    return n


def const(name, out, elem, dims, values):
    """A Constant node holding values (int64 or float)."""
    t = tensor("", elem, dims, int64s=values if elem == INT64 else None,
               floats=values if elem == FLOAT else None)
    return node("Constant", [], [out], name=name, value=("t", t))


def model(nodes, inputs, outputs, inits=(), opset=17, producer="remat-tests"):
    g = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g")
    g += b"".join(f_bytes(5, t) for t in inits)
    g += b"".join(f_bytes(11, v) for v in inputs)
    g += b"".join(f_bytes(12, v) for v in outputs)
    return (f_int(1, 8) + f_bytes(2, producer) + f_bytes(7, g) +
            f_bytes(8, f_bytes(1, "") + f_int(2, opset)))
