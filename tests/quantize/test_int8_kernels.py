"""int8 weights must give exact integer arithmetic on every CPU: ONNX Runtime's kernels, checked on this one.

A one-node ``DynamicQuantizeMatMul`` over weights from :func:`quantize_columns_int8` is fed activations that
quantize exactly (multiples of a power-of-two scale, so ONNX Runtime's dynamic quantization is known bit for
bit) and meet the largest weights in adjacent pairs: the case where u8s8 kernels without VNNI saturate. The
output must equal the integer product computed in numpy, for the ``u8`` and ``s7`` codes on whatever CPU runs
the test; for ``s8`` codes it is exact exactly when :mod:`enzh.runtime.cpu` says this CPU's u8s8 kernels do not
saturate (VNNI or AMX), which checks that prediction too.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from enzh.export.graph import MS_DOMAIN
from enzh.quantize.blocks import U8_ZERO_POINT, quantize_columns_int8
from enzh.runtime.cpu import cpu_features

K, N, ROWS = 256, 64, 8
STEP = np.float32(2.0**-4)  # activation scale: (max - min) / 255 for the range chosen below, exact in float32


def _session(codes: str, weight: np.ndarray) -> ort.InferenceSession:
    q, scales = quantize_columns_int8(weight, codes)
    inits = [numpy_helper.from_array(q, "w"), numpy_helper.from_array(scales, "s")]
    inputs = ["x", "w", "s"]
    if codes == "u8":
        inits.append(numpy_helper.from_array(np.array(U8_ZERO_POINT, dtype=np.uint8), "zp"))
        inputs.append("zp")
    node = helper.make_node("DynamicQuantizeMatMul", inputs, ["y"], domain=MS_DOMAIN)
    graph = helper.make_graph(
        [node],
        "one_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, N])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS_DOMAIN, 1)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _case(codes: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(activations [ROWS, K], weights [K, N], the exact product): the weights are their own quantized values."""
    rng = np.random.default_rng(0)
    levels = 63 if codes == "s7" else 127
    weight_levels = rng.integers(-levels, levels + 1, size=(K, N))
    weight_levels[:, 0] = levels  # every column reaches +levels: its scale is exactly 1/64 below
    weight_levels[: K // 2, : N // 2] = levels  # large weights in adjacent pairs of K ...
    weight = (weight_levels / 64.0).astype(np.float32)
    # ... met by activations that quantize to 255 (zero point 64: the range is [-64, 191] steps).
    activation_levels = rng.integers(0, 256, size=(ROWS, K))
    activation_levels[:, : K // 2] = 255
    activation_levels[:, 0], activation_levels[:, 1] = 0, 255  # the range's ends: min -> 0, max -> 255
    x = ((activation_levels - 64) * STEP).astype(np.float32)
    exact = (x.astype(np.float64) @ weight.astype(np.float64)).astype(np.float32)
    return x, weight, exact


def _is_exact(codes: str) -> bool:
    x, weight, exact = _case(codes)
    got = _session(codes, weight).run(None, {"x": x})[0]
    return bool(np.allclose(got, exact, rtol=1e-6, atol=1e-4))


@pytest.mark.parametrize("codes", ["u8", "s7"])
def test_weight_codes_that_are_exact_on_every_cpu(codes: str) -> None:
    assert _is_exact(codes), cpu_features().summary()


def test_signed_codes_are_exact_only_where_the_cpu_has_vnni() -> None:
    saturates = cpu_features().u8s8_saturates
    if saturates is None:
        pytest.skip(f"not an x86 CPU with known flags: {cpu_features().summary()}")
    assert _is_exact("s8") is not saturates, cpu_features().summary()


def test_codes_hold_the_levels() -> None:
    weight = np.array([[1.0, -2.0], [-0.5, 1.0], [0.25, 0.0]], dtype=np.float32)
    signed, scales = quantize_columns_int8(weight, "s8")
    unsigned, same_scales = quantize_columns_int8(weight, "u8")
    reduced, reduced_scales = quantize_columns_int8(weight, "s7")
    assert signed.dtype == np.int8 and unsigned.dtype == np.uint8 and reduced.dtype == np.int8
    np.testing.assert_array_equal(scales, same_scales)
    np.testing.assert_array_equal(unsigned.astype(np.int16) - U8_ZERO_POINT, signed)
    assert signed.tolist() == [[127, -127], [-64, 64], [32, 0]]
    assert reduced.tolist() == [[63, -63], [-31, 31], [16, 0]]  # 31.5 steps of a float32 1/63 round down
    np.testing.assert_allclose(reduced * reduced_scales, weight, atol=float(reduced_scales.max()) / 2)
