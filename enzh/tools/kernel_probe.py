"""Single-operator timings behind the decoder graph's design (docs/profile.md, "The step graph").

    .venv/bin/python -m enzh.tools.kernel_probe [--d-model 256] [--heads 4] [--ffn 512] [--layers 3]

Each probe is a one- or two-node ONNX graph run by ONNX Runtime's CPU provider with 1 and 2 intra-op threads,
at 1, 16 and 64 rows (the rows of a decoder step: sentences x beams); the fastest of 5 x 200 runs, in µs per run
(one ``InferenceSession.run`` each, so its ~3 µs of call overhead is included):

* residual + LayerNorm: ``Add`` + ``LayerNormalization`` against the fused ``SkipLayerNormalization``;
* cross-attention of one step: ``MultiHeadAttention`` over ``[B, H, S, dh]`` keys/values against
  ``MatMul``/``Add``/``Softmax``/``MatMul`` with the transposes around them;
* self-attention over the in-place cache: ``GroupQueryAttention`` (cache bound to the same buffer as present);
* the linear layers of one decoder step: the chain of every layer's ``Gemm`` (fp32), the arithmetic floor of a
  step (the weights are streamed once per step).

Needs onnx (the ``export`` extra).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from enzh.export.graph import MS_DOMAIN

ROWS = (1, 16, 64)
THREADS = (1, 2)
SOURCE_LEN = 20
POSITION = 20  # tokens already in the self-attention cache


def single_op_session(
    nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], inits: list[TensorProto], threads: int
) -> ort.InferenceSession:
    """A CPU session of ``nodes`` over the last node's outputs (all of them: GroupQueryAttention's present_*
    are bound too), with ``threads`` intra-op threads."""
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in nodes[-1].output]
    graph = helper.make_graph(nodes, "probe", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS_DOMAIN, 1)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _f32(name: str, shape: Sequence[str | int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _time(run: Callable[[], object]) -> float:
    for _ in range(50):
        run()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(200):
            run()
        best = min(best, (time.perf_counter() - start) / 200)
    return best * 1e6


def _layer_norm(kind: str, d: int, threads: int) -> Callable[[int], Callable[[], object]]:
    inits = [
        numpy_helper.from_array(np.ones(d, np.float32), "g"),
        numpy_helper.from_array(np.zeros(d, np.float32), "b"),
    ]
    if kind == "skip":
        nodes = [helper.make_node("SkipLayerNormalization", ["x", "y", "g", "b"], ["o"], domain=MS_DOMAIN)]
    else:
        nodes = [
            helper.make_node("Add", ["x", "y"], ["s"]),
            helper.make_node("LayerNormalization", ["s", "g", "b"], ["o"], axis=-1),
        ]
    session = single_op_session(nodes, [_f32("x", ["R", d]), _f32("y", ["R", d])], inits, threads)

    def at(rows: int) -> Callable[[], object]:
        feeds = {name: np.random.default_rng(0).random((rows, d), dtype=np.float32) for name in ("x", "y")}
        return lambda: session.run(None, feeds)

    return at


def _cross_attention(kind: str, d: int, heads: int, threads: int) -> Callable[[int], Callable[[], object]]:
    dh = d // heads

    def const(value: list[int], name: str) -> TensorProto:
        return numpy_helper.from_array(np.asarray(value, np.int64), name)

    def at(rows: int) -> Callable[[], object]:
        inits = [
            const([rows, 1, d] if kind == "mha" else [rows, -1, heads, dh], "q_shape"),
            const([-1, d], "out_shape"),
        ]
        key_shape: list[str | int] = ["B", heads, "S", dh] if kind == "mha" else ["B", heads, dh, "S"]
        if kind == "mha":
            nodes = [
                helper.make_node("Reshape", ["q", "q_shape"], ["q3"]),
                helper.make_node(
                    "MultiHeadAttention", ["q3", "k", "v", "", "", "bias"], ["c"], domain=MS_DOMAIN, num_heads=heads
                ),
                helper.make_node("Reshape", ["c", "out_shape"], ["o"]),
            ]
        else:
            nodes = [
                helper.make_node("Reshape", ["q", "q_shape"], ["q4"]),
                helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
                helper.make_node("MatMul", ["qt", "k"], ["scores"]),
                helper.make_node("Add", ["scores", "bias"], ["biased"]),
                helper.make_node("Softmax", ["biased"], ["p"], axis=-1),
                helper.make_node("MatMul", ["p", "v"], ["c"]),
                helper.make_node("Transpose", ["c"], ["ct"], perm=[0, 2, 1, 3]),
                helper.make_node("Reshape", ["ct", "out_shape"], ["o"]),
            ]
        inputs = [_f32("q", ["R", d]), _f32("k", key_shape), _f32("v", ["B", heads, "S", dh])]
        inputs.append(_f32("bias", ["B", 1, 1, "S"]))
        session = single_op_session(nodes, inputs, inits, threads)
        rng = np.random.default_rng(0)
        shape = (rows, heads, SOURCE_LEN, dh) if kind == "mha" else (rows, heads, dh, SOURCE_LEN)
        feeds = {
            "q": rng.random((rows, d), dtype=np.float32),
            "k": rng.random(shape, dtype=np.float32),
            "v": rng.random((rows, heads, SOURCE_LEN, dh), dtype=np.float32),
            "bias": np.zeros((rows, 1, 1, SOURCE_LEN), np.float32),
        }
        return lambda: session.run(None, feeds)

    return at


def _self_attention(d: int, heads: int, threads: int) -> Callable[[int], Callable[[], object]]:
    dh, capacity = d // heads, 64
    node = helper.make_node(
        "GroupQueryAttention",
        ["qkv", "", "", "pk", "pv", "seqlens", "total"],
        ["o", "present_k", "present_v"],
        domain=MS_DOMAIN,
        num_heads=heads,
        kv_num_heads=heads,
    )
    inputs = [_f32("qkv", ["R", 1, 3 * d]), _f32("pk", ["R", heads, "C", dh]), _f32("pv", ["R", heads, "C", dh])]
    inputs += [
        helper.make_tensor_value_info("seqlens", TensorProto.INT32, ["R"]),
        helper.make_tensor_value_info("total", TensorProto.INT32, []),
    ]
    session = single_op_session([node], inputs, [], threads)

    def at(rows: int) -> Callable[[], object]:
        cache = [np.zeros((rows, heads, capacity, dh), np.float32) for _ in range(2)]
        out = np.empty((rows, 1, d), np.float32)
        qkv = np.random.default_rng(0).random((rows, 1, 3 * d), dtype=np.float32)
        seqlens, total = np.full(rows, POSITION, np.int32), np.array(POSITION + 1, np.int32)
        io = session.io_binding()
        # Every bound array is kept alive by this closure (I/O binding holds raw pointers only).
        for name, array in (("qkv", qkv), ("seqlens", seqlens), ("total", total), ("pk", cache[0]), ("pv", cache[1])):
            io.bind_input(name, "cpu", 0, array.dtype, list(array.shape), array.ctypes.data)
        # present_* in place, as the decoder binds them
        for name, array in (("o", out), ("present_k", cache[0]), ("present_v", cache[1])):
            io.bind_output(name, "cpu", 0, np.float32, list(array.shape), array.ctypes.data)
        arrays = (qkv, seqlens, total, out, *cache)
        return lambda: (session.run_with_iobinding(io), arrays)

    return at


def _linear_chain(d: int, ffn: int, layers: int, threads: int) -> Callable[[int], Callable[[], object]]:
    """Every linear layer of one decoder step in a chain (q|k|v, out, cross q, cross out, fc1, fc2 per layer)."""
    rng = np.random.default_rng(0)
    shapes = [(d, 3 * d), (3 * d, d), (d, d), (d, d), (d, ffn), (ffn, d)] * layers
    nodes, inits, x = [], [], "x"
    for i, (k, n) in enumerate(shapes):
        inits.append(numpy_helper.from_array((rng.standard_normal((k, n)) * 0.05).astype(np.float32), f"w{i}"))
        inits.append(numpy_helper.from_array(np.zeros(n, np.float32), f"b{i}"))
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [f"h{i}"]))
        x = f"h{i}"
    session = single_op_session(nodes, [_f32("x", ["R", d])], inits, threads)

    def at(rows: int) -> Callable[[], object]:
        feeds = {"x": rng.standard_normal((rows, d)).astype(np.float32)}
        return lambda: session.run(None, feeds)

    return at


def probe(d: int, heads: int, ffn: int, layers: int) -> list[str]:
    """The markdown table: one row per probe and thread count, one column per row count."""
    probes: list[tuple[str, Callable[[int], Callable[[int], Callable[[], object]]]]] = [
        ("Add + LayerNormalization", lambda t: _layer_norm("add", d, t)),
        ("SkipLayerNormalization", lambda t: _layer_norm("skip", d, t)),
        ("cross-attention: MultiHeadAttention (+2 Reshape)", lambda t: _cross_attention("mha", d, heads, t)),
        (
            "cross-attention: MatMul, Add, Softmax, MatMul (+2 Transpose, 2 Reshape)",
            lambda t: _cross_attention("plain", d, heads, t),
        ),
        ("self-attention: GroupQueryAttention, in-place cache", lambda t: _self_attention(d, heads, t)),
        (f"the step's {6 * layers} linear layers (Gemm chain)", lambda t: _linear_chain(d, ffn, layers, t)),
    ]
    header = "| probe | threads | " + " | ".join(f"{r} rows" for r in ROWS) + " |"
    lines = [header, "|---|---|" + "---|" * len(ROWS)]
    for label, build in probes:
        for threads in THREADS:
            at = build(threads)
            cells = [f"{_time(at(rows)):.1f}" for rows in ROWS]
            lines.append(f"| {label} | {threads} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.tools.kernel_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--d-model", type=int, default=256, help="hidden size (default: the demo model's 256)")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=512, help="feed-forward width")
    parser.add_argument("--layers", type=int, default=3, help="decoder layers (for the Gemm chain)")
    args = parser.parse_args(argv)
    print(f"d_model {args.d_model}, {args.heads} heads, ffn {args.ffn}, {args.layers} layers; µs per run")
    print("\n".join(probe(args.d_model, args.heads, args.ffn, args.layers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
