"""The quantization math: blocks, their clipping search and 4-bit packing."""

from __future__ import annotations

import numpy as np

from enzh.quantize.blocks import dequantize_blocks, pack_codes, quantize_blocks


def test_quantize_blocks_math():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(7, 40)).astype(np.float32)
    weight[3, :] = 0.0  # an all-zero row must not divide by zero
    for bits in (8, 4):
        codes, scales = quantize_blocks(weight, bits, 16, search=False)
        assert codes.shape == (7, 48) and scales.shape == (7, 3) and codes.max() < 2**bits
        restored = dequantize_blocks(codes, scales, bits, 40)
        step = np.repeat(scales, 16, axis=1)[:, :40]
        assert np.all(np.abs(restored - weight) <= step * 0.5 + 1e-6)  # abs-max scales: nothing clipped
        assert np.all(restored[3] == 0)
        # The clipping search never does worse than abs-max scales (ratio 1.0 is one of its candidates).
        searched = dequantize_blocks(*quantize_blocks(weight, bits, 16, search=True), bits, 40)
        assert np.square(searched - weight).sum() <= np.square(restored - weight).sum() + 1e-9
    packed = pack_codes(np.array([[1, 2, 15, 0]], dtype=np.uint8), 4)
    assert packed.tolist() == [[0x21, 0x0F]]  # low nibble first
