"""Weights in and out: the fp32 source tensors, the variant's store, and each stored layout derived once.

:class:`VariantWeights` turns a source initializer into the tensors of one layout (fp32 copy, fp16, int8
columns, MatMulNBits blocks, the shared embedding table) and remembers it, so both graphs and every use of a
weight (the embedding lookup and the output projection) read one copy in weights.bin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from enzh.export.graph import ALIGN, WeightStore
from enzh.quantize.blocks import (
    U8_ZERO_POINT,
    linear_block,
    pack_codes,
    quantize_blocks,
    quantize_columns_int8,
    table_block,
)
from enzh.quantize.settings import QuantizeSettings

SMALL_ALIGN = 64  # alignment of tensors smaller than a page in weights.bin


class SourceWeights:
    """Reads the fp32 initializers of the source graphs from their external-data file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def array(self, tensor: TensorProto) -> np.ndarray:
        if tensor.data_location != TensorProto.EXTERNAL:
            return numpy_helper.to_array(tensor)
        info = {entry.key: entry.value for entry in tensor.external_data}
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
        shape = tuple(tensor.dims)
        path = self.directory / info["location"]
        data = np.fromfile(path, dtype=dtype, count=int(np.prod(shape)), offset=int(info.get("offset", 0)))
        return data.reshape(shape)


class AliasingWeightStore(WeightStore):
    """A :class:`WeightStore` where several initializer names (with different shapes) may share the bytes of
    one stored array: the quantized embedding table is one region of weights.bin seen as
    ``[V, d*bits/8]`` by GatherBlockQuantized and ``[V, d/block, block*bits/8]`` by MatMulNBits."""

    def alias(self, name: str, target: str, shape: Sequence[int]) -> str:
        if name in self.arrays:
            raise ValueError(f"weight {name!r} added twice")
        self.arrays[name] = self.arrays[target].reshape(tuple(shape))
        self.aliases[name] = target
        return name

    def alignment(self, nbytes: int) -> int:
        # Page-align what ONNX Runtime memory-maps; pack small tensors (biases, norms, scales) tightly.
        return ALIGN if nbytes >= ALIGN else SMALL_ALIGN


@dataclass
class Table:
    """A quantized embedding table: GatherBlockQuantized view, MatMulNBits view, scales, block size."""

    gather: str
    matmul: str
    scales: str
    block: int


@dataclass
class ChannelTable:
    """An int8 embedding table with one scale per token ``[V]``, stored once as rows ``[V, d]``: ``rows`` for the
    lookups (Gather of rows), ``projection`` the same bytes under a second name that only the output projection
    reads (transposed to ``[d, V]`` in the graph, which ONNX Runtime folds at load and pre-packs).
    ``zero_point``: the stored uint8 zero point of ``u8`` codes, empty for signed codes."""

    rows: str
    projection: str
    scales: str
    zero_point: str


@dataclass
class VariantWeights:
    """The stored tensors of a variant, each derived once from its source tensor; methods return stored names."""

    settings: QuantizeSettings
    source: SourceWeights
    store: AliasingWeightStore
    tables: dict[str, Table] = field(default_factory=dict)
    channel_tables: dict[str, ChannelTable] = field(default_factory=dict)

    def float32(self, name: str, tensor: TensorProto) -> str:
        """An fp32 weight copied unchanged (biases, layer norms, positions, anything not rewritten)."""
        if name not in self.store.arrays:
            self.store.add(name, self.source.array(tensor))
        return name

    def float16(self, name: str, tensor: TensorProto) -> str:
        half = f"{name}.fp16"
        if half not in self.store.arrays:
            self.store.add(half, self.source.array(tensor).astype(np.float16))
        return half

    def columns_int8(self, name: str, tensor: TensorProto) -> tuple[str, str, str]:
        """A linear weight ``[K, N]`` with one scale per output column (DynamicQuantizeMatMul): the stored names of
        its codes, scales and zero point (empty for signed codes; see ``QuantizeSettings.int8_weights``)."""
        codes = self.settings.int8_weights
        if f"{name}.q" not in self.store.arrays:
            q, scales = quantize_columns_int8(self.source.array(tensor), codes)
            self.store.add(f"{name}.q", q)
            self.store.add(f"{name}.scales", scales)
        return f"{name}.q", f"{name}.scales", self.zero_point()

    def zero_point(self) -> str:
        """The one stored zero point that every ``u8`` DynamicQuantizeMatMul weight reads ("" for signed codes)."""
        if self.settings.int8_weights != "u8":
            return ""
        name = "int8.zero_point"
        if name not in self.store.arrays:
            self.store.add(name, np.array(U8_ZERO_POINT, dtype=np.uint8))
        return name

    def nbits(self, name: str, tensor: TensorProto) -> tuple[str, str, dict[str, Any]]:
        """MatMulNBits weight, scales and attributes of a linear weight ``[K, N]`` (blocks along K)."""
        weight_nk = np.ascontiguousarray(self.source.array(tensor).T)
        n, k = weight_nk.shape
        bits = self.settings.bits
        block = linear_block(k, self.settings.block_size)
        if f"{name}.q" not in self.store.arrays:
            codes, scales = quantize_blocks(weight_nk, bits, block)
            self.store.add(f"{name}.q", pack_codes(codes, bits).reshape(n, scales.shape[1], block * bits // 8))
            self.store.add(f"{name}.scales", scales)
        attrs = {"K": k, "N": n, "bits": bits, "block_size": block, "accuracy_level": self.settings.accuracy_level}
        return f"{name}.q", f"{name}.scales", attrs

    def table(self, name: str, tensor: TensorProto) -> Table | None:
        """Quantize an embedding table [V, d] once; both graphs and both uses (lookup, projection) share it.
        None when no block size divides d (the table then stays fp32)."""
        if name in self.tables:
            return self.tables[name]
        table = self.source.array(tensor)
        block = table_block(table.shape[1], self.settings.block_size)
        if block is None:
            return None
        bits = self.settings.bits
        codes, scales = quantize_blocks(table, bits, block)
        packed = pack_codes(codes, bits)
        rows, k_blocks = scales.shape
        gather = self.store.add(f"{name}.q", packed)
        matmul = self.store.alias(f"{name}.q_blocks", gather, (rows, k_blocks, block * bits // 8))
        self.tables[name] = Table(gather, matmul, self.store.add(f"{name}.scales", scales), block)
        return self.tables[name]

    def channel_table(self, name: str, tensor: TensorProto) -> ChannelTable:
        """Quantize an embedding table [V, d] once per token row, stored as rows [V, d] (see ChannelTable)."""
        if name not in self.channel_tables:
            q, scales = quantize_columns_int8(self.source.array(tensor).T, self.settings.int8_weights)
            rows = self.store.add(f"{name}.q_rows", np.ascontiguousarray(q.T))
            projection = self.store.alias(f"{name}.q_rows.projection", rows, q.T.shape)
            scale_name = self.store.add(f"{name}.scales", scales)
            self.channel_tables[name] = ChannelTable(rows, projection, scale_name, self.zero_point())
        return self.channel_tables[name]


__all__ = ["AliasingWeightStore", "SourceWeights", "VariantWeights"]
