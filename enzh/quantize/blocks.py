"""Quantization math: symmetric blocks (MatMulNBits / GatherBlockQuantized), int8 columns, packing, block sizes.

Pure numpy; the graph rewriter (:mod:`enzh.quantize.rewrite`) decides which weight gets which layout.
"""

from __future__ import annotations

import numpy as np

from enzh.runtime.errors import QuantizeError

# Clipping ratios tried per block at 4 bits: the scale with the least squared error wins (a slightly clipped
# extreme buys a finer grid for the other values of the block).
CLIP_RATIOS = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75)
# The zero point of uint8 ("u8") weight codes: q + 128 holds the signed level q.
U8_ZERO_POINT = 128


def _block_scales(blocks: np.ndarray, bits: int) -> np.ndarray:
    """Symmetric scale per block (last axis): the largest-magnitude value maps exactly onto the grid's end.

    The signed grid is [-2^(b-1), 2^(b-1) - 1]: a negative extreme can use -2^(b-1), a positive one only
    2^(b-1) - 1, so the step is |extreme| / 2^(b-1) or |extreme| / (2^(b-1) - 1) respectively.
    """
    half = 2 ** (bits - 1)
    idx = np.abs(blocks).argmax(axis=-1)[..., None]
    extreme = np.take_along_axis(blocks, idx, axis=-1)[..., 0]
    scale = np.abs(extreme) / np.where(extreme < 0, half, half - 1)
    return np.where(scale > 0, scale, 1.0).astype(np.float32)


def quantize_blocks(
    weight: np.ndarray, bits: int, block_size: int, *, search: bool | None = None, chunk_rows: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Quantize ``weight [N, K]`` in blocks of ``block_size`` along K (zero-padded to a whole block).

    Returns (codes uint8 ``[N, k_blocks * block_size]`` holding q + 2^(b-1), scales float32 ``[N, k_blocks]``),
    the layout of MatMulNBits / GatherBlockQuantized without zero points (implicit zero point 2^(b-1)).
    ``search`` (default: at 4 bits or fewer) picks each block's scale among :data:`CLIP_RATIOS` by squared error.
    """
    n, k = weight.shape
    k_blocks = -(-k // block_size)
    half = 2 ** (bits - 1)
    search = bits <= 4 if search is None else search
    codes = np.empty((n, k_blocks * block_size), dtype=np.uint8)
    scales = np.empty((n, k_blocks), dtype=np.float32)
    for start in range(0, n, chunk_rows):
        rows = weight[start : start + chunk_rows]
        padded = np.zeros((rows.shape[0], k_blocks * block_size), dtype=np.float32)
        padded[:, :k] = rows
        blocks = padded.reshape(rows.shape[0], k_blocks, block_size)
        best = _searched_scales(blocks, bits) if search else _block_scales(blocks, bits)
        q = np.clip(np.rint(blocks / best[..., None]), -half, half - 1).astype(np.int16) + half
        codes[start : start + rows.shape[0]] = q.reshape(rows.shape[0], -1)
        scales[start : start + rows.shape[0]] = best
    return codes, scales


def _searched_scales(blocks: np.ndarray, bits: int) -> np.ndarray:
    """Per block, the abs-max scale times the ratio of :data:`CLIP_RATIOS` with the least squared error."""
    half = 2 ** (bits - 1)
    base = _block_scales(blocks, bits)
    best = base
    best_err = np.full(base.shape, np.inf, dtype=np.float32)
    for ratio in CLIP_RATIOS:
        scale = (base * np.float32(ratio))[..., None]
        err = np.square(np.clip(np.rint(blocks / scale), -half, half - 1) * scale - blocks).sum(axis=-1)
        better = err < best_err
        best = np.where(better, scale[..., 0], best)
        best_err = np.where(better, err, best_err)
    return best


def pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack uint8 codes along the last axis, low-order bits first (MatMulNBits / GatherBlockQuantized)."""
    if bits == 8:
        return codes
    if bits != 4:
        raise QuantizeError(f"only 4- and 8-bit packing is implemented, got {bits}")
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def dequantize_blocks(codes: np.ndarray, scales: np.ndarray, bits: int, k: int) -> np.ndarray:
    """Inverse of :func:`quantize_blocks` (for tests and error reports): float32 ``[N, K]``."""
    n, k_blocks = scales.shape
    values = codes.astype(np.float32).reshape(n, k_blocks, -1) - 2 ** (bits - 1)
    return (values * scales[..., None]).reshape(n, -1)[:, :k]


def quantize_columns_int8(weight: np.ndarray, codes: str = "s8") -> tuple[np.ndarray, np.ndarray]:
    """``weight [K, N]`` -> (codes ``[K, N]``, float32 scale per output column ``[N]``), symmetric.

    ``codes`` (:data:`enzh.quantize.settings.INT8_WEIGHTS`): ``s8`` int8 within +-127; ``u8`` the same levels
    + 128 as uint8 (read with zero point :data:`U8_ZERO_POINT`); ``s7`` int8 within +-63.
    """
    levels = 63 if codes == "s7" else 127
    absmax = np.abs(weight).max(axis=0)
    scales = np.where(absmax > 0, absmax / levels, 1.0).astype(np.float32)
    q = np.clip(np.rint(weight / scales), -levels, levels)
    if codes == "u8":
        return (q + U8_ZERO_POINT).astype(np.uint8), scales
    return q.astype(np.int8), scales


def table_block(dim: int, wanted: int) -> int | None:
    """Largest power-of-two block >= 16 and <= ``wanted`` dividing ``dim`` (the shared table needs whole blocks
    so that the GatherBlockQuantized and MatMulNBits views of its bytes agree); None if there is none."""
    block = wanted
    while block >= 16:
        if dim % block == 0:
            return block
        block //= 2
    return None


def linear_block(k: int, wanted: int) -> int:
    """Blocks never larger than K rounded up to a power of two (less padding on tiny layers)."""
    cap = 16
    while cap < k:
        cap *= 2
    return min(wanted, cap)


__all__ = [
    "U8_ZERO_POINT",
    "dequantize_blocks",
    "linear_block",
    "pack_codes",
    "quantize_blocks",
    "quantize_columns_int8",
    "table_block",
]
