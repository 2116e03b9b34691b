"""Build the encoder and incremental-decoder ONNX graphs of a Marian model from its weights.

The graphs are written node by node (no tracing), so the layout is exactly what the runtime needs:

* ``encoder.onnx``: ``input_ids``, ``attention_mask`` -> ``cross_bias`` (additive attention mask for the
  decoder) and, for every decoder layer, the cross-attention keys and values (``[B, H, S, dh]``). Cross-attention
  keys/values are therefore computed once per sentence.
  Self-attention is ONNX Runtime's fused ``MultiHeadAttention``; every other layer runs on the batch's real
  tokens only (packed, ``[1, T, d]``), so padding costs attention and nothing else.
* ``decoder.onnx``: one step for ``R = B x beams`` rows. ``input_ids [R, 1]``, ``position [R]`` (or ``[1]``: the
  same for every row), ``top_k [1]``,
  ``cross_bias`` and the cross keys/values (one entry per sentence, shared by its beams), and the
  self-attention cache ``past_key_i``/``past_value_i [R, H, capacity, dh]`` -> ``logits`` and ``log_probs``
  ``[R, V]`` for the new position only, ``top_log_probs``/``top_ids [R, top_k]`` and ``present_key_i``/
  ``present_value_i``. Self-attention is ``GroupQueryAttention``: bound to the same buffer as ``past_*``,
  ``present_*`` is written in place at index ``position``; cross-attention is ``MultiHeadAttention``.
* ``aligner.onnx`` (optional, :func:`build_aligner`): the decoder without a cache over a whole teacher-forced
  target. ``input_ids [B, T]`` (the decoder start token + the translation's ids), ``cross_bias`` and the cross
  keys/values the encoder graph returned -> ``cross_attention [B, T, S]``: the cross-attention weights, the mean
  over the heads and layers that :class:`AlignerSettings` names (row t: while predicting target token t).

Every weight lives once in ``weights.bin`` (ONNX external data); the graphs point into the same file, so
the embedding matrix shared by encoder, decoder and output projection is stored a single time (the aligner
reads the decoder's weights and adds none).
Export-time only: needs ``onnx`` and ``numpy``, not torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from enzh.runtime.errors import ExportError, require

OPSET = 17
ALIGN = 4096  # page-aligned tensors let ONNX Runtime memory-map weights.bin instead of copying it
WEIGHTS_FILE = "weights.bin"
MS_DOMAIN = "com.microsoft"  # ONNX Runtime's contrib operators (fused attention; quantized MatMul and Gather)

_ACTIVATIONS = ("swish", "silu", "relu", "gelu")


@dataclass(frozen=True, kw_only=True)
class ModelArch:
    """The shape of an encoder-decoder translation model, as far as the graphs care, and its layout quirks
    (what differs between the families of :mod:`enzh.export.families`; the defaults are Marian's)."""

    d_model: int
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    activation: str
    scale_embedding: bool
    max_positions: int
    source_vocab_size: int
    target_vocab_size: int
    layer_norm_eps: float = 1e-5
    # Pre-norm layers, h + f(LayerNorm(h)) (M2M100, NLLB, mBART), rather than post-norm LayerNorm(h + f(h)) (Marian).
    pre_norm: bool = False
    # A LayerNorm after the last encoder layer and after the last decoder layer (the pre-norm families).
    final_norms: bool = False
    # A LayerNorm right after token embedding + positions, in encoder and decoder (mBART's layernorm_embedding).
    embedding_norm: bool = False
    # Row of the position table for position p: p + position_offset (M2M100/NLLB: pad + 1; mBART: 2).
    position_offset: int = 0
    # The stored table the decoder's positions come from ("positions": the encoder's, when they are equal).
    decoder_positions: str = "positions"
    # Pad-aware positions (M2M100/NLLB): a pad token reads row `pad_token_id` (zeros) and does not advance the
    # count; every other token reads row pad_token_id + 1 + (tokens before it that are not pad).
    pad_aware_positions: bool = False
    pad_token_id: int = -1

    def __post_init__(self) -> None:
        if self.activation not in _ACTIVATIONS:
            raise ValueError(
                f"unsupported activation_function {self.activation!r}; supported: {', '.join(_ACTIVATIONS)}"
            )
        for heads in (self.encoder_heads, self.decoder_heads):
            if self.d_model % heads:
                raise ValueError(f"d_model {self.d_model} is not divisible by the number of heads {heads}")


MarianArch = ModelArch  # the name the graphs had when Marian was the only family


@dataclass(frozen=True, kw_only=True)
class AlignerSettings:
    """Which cross-attention ``aligner.onnx`` returns: the mean over ``heads`` of every decoder layer in ``layers``.

    Indices count from 0; an empty tuple means all of them. The default (every layer, every head) placed the most
    inline tags on their words on the tagged demo set (docs/html.md has the comparison)."""

    layers: tuple[int, ...] = ()
    heads: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("layers", "heads"):
            values = tuple(getattr(self, name))
            require(
                all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values),
                f"aligner {name} must be indices >= 0, got {values!r}",
            )
            require(len(set(values)) == len(values), f"aligner {name} must not repeat an index, got {values!r}")
            object.__setattr__(self, name, tuple(sorted(values)))

    def resolve(self, arch: ModelArch) -> tuple[list[int], list[int]]:
        """The layers and heads, checked against ``arch`` (``ExportError`` for an index the model lacks)."""
        chosen = []
        for name, values, count in (
            ("layers", self.layers, arch.decoder_layers),
            ("heads", self.heads, arch.decoder_heads),
        ):
            if any(v >= count for v in values):
                raise ExportError(f"aligner {name} {list(values)}: the decoder has {count} (indices 0..{count - 1})")
            chosen.append(list(values) or list(range(count)))
        return chosen[0], chosen[1]

    def record(self, arch: ModelArch) -> dict[str, Any]:
        """``manifest.alignment``: what the aligner's output is."""
        layers, heads = self.resolve(arch)
        return {
            "output": "cross_attention",
            "shape": ["batch", "target_len", "source_len"],
            "layers": layers,
            "heads": heads,
            "reduction": "mean",
        }


class WeightStore:
    """Collects the numpy weights of both graphs and writes them once, page aligned, to weights.bin."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.offsets: dict[str, tuple[int, int]] = {}
        self.aliases: dict[str, str] = {}  # name -> stored name whose bytes it reuses (see quantize)

    def add(self, name: str, array: np.ndarray) -> str:
        if name in self.arrays:
            raise ValueError(f"weight {name!r} added twice")
        self.arrays[name] = np.ascontiguousarray(array)
        return name

    def alignment(self, nbytes: int) -> int:
        """Where in weights.bin a tensor of ``nbytes`` may start (every tensor page aligned here)."""
        return ALIGN

    def write(self, path: Path) -> None:
        offset = 0
        with open(path, "wb") as f:
            for name, array in self.arrays.items():
                if name in self.aliases:
                    continue
                data = array.tobytes()
                pad = (-offset) % self.alignment(len(data))
                f.write(b"\0" * pad)
                offset += pad
                f.write(data)
                self.offsets[name] = (offset, len(data))
                offset += len(data)
        for name, target in self.aliases.items():
            self.offsets[name] = self.offsets[target]

    def layout(self, name: str) -> dict[str, object]:
        """Where a written weight lives in weights.bin (recorded in the manifest for the runtime)."""
        array = self.arrays[name]
        offset, _ = self.offsets[name]
        return {"file": WEIGHTS_FILE, "offset": offset, "shape": list(array.shape), "dtype": str(array.dtype)}

    def tensor_proto(self, name: str) -> TensorProto:
        array = self.arrays[name]
        offset, length = self.offsets[name]
        tensor = TensorProto()
        tensor.name = name
        tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor.dims.extend(array.shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", WEIGHTS_FILE), ("offset", str(offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        return tensor


def shared_initializers(first: onnx.ModelProto, second: onnx.ModelProto, store: WeightStore) -> dict[str, Any]:
    """The weights of ``store`` that both graphs read, name -> :meth:`WeightStore.layout`, in ``first``'s
    initializer order: ``manifest.shared_initializers``, which the runtime maps once for both sessions."""
    in_second = {t.name for t in second.graph.initializer}
    return {
        t.name: store.layout(t.name) for t in first.graph.initializer if t.name in in_second and t.name in store.arrays
    }


@dataclass
class GraphBuilder:
    """A tiny helper over onnx.helper: unique names, constants, and the initializers a graph uses."""

    name: str
    store: WeightStore
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    constants: list[TensorProto] = field(default_factory=list)
    weights_used: list[str] = field(default_factory=list)
    _count: int = 0

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, *, domain: str = "", **attrs: Any) -> list[str]:
        self._count += 1
        outputs = [f"{op_type.lower()}_{self._count}_{i}" for i in range(n_out)]
        node = helper.make_node(op_type, inputs, outputs, name=f"{op_type}_{self._count}", domain=domain, **attrs)
        self.nodes.append(node)
        return outputs

    def op1(self, op_type: str, inputs: list[str], *, outputs: Sequence[str] = (), **attrs: Any) -> str:
        """One node; its first output gets a generated name, further outputs are named by ``outputs``."""
        first = self.op(op_type, inputs, 1, **attrs)[0]
        self.nodes[-1].output.extend(outputs)
        return first

    def const(self, value: Any, dtype: type = np.int64) -> str:
        array: np.ndarray = np.asarray(value, dtype=dtype)
        self._count += 1
        name = f"const_{self._count}"
        self.constants.append(onnx.numpy_helper.from_array(array, name))
        return name

    def weight(self, name: str) -> str:
        if name not in self.weights_used:
            self.weights_used.append(name)
        return name

    def linear(self, x: str, prefix: str) -> str:
        """x @ W + b with W stored as [in, out]."""
        return self.op1("Add", [self.op1("MatMul", [x, self.weight(f"{prefix}.w")]), self.weight(f"{prefix}.b")])

    def norm(self, h: str, norm: str, arch: ModelArch) -> str:
        return self.op1(
            "LayerNormalization",
            [h, self.weight(f"{norm}.g"), self.weight(f"{norm}.b")],
            axis=-1,
            epsilon=arch.layer_norm_eps,
        )

    def sublayer_input(self, h: str, norm: str, arch: ModelArch) -> str:
        """What a sublayer reads: LayerNorm(h) in a pre-norm model, h itself in a post-norm one."""
        return self.norm(h, norm, arch) if arch.pre_norm else h

    def residual_norm(self, h: str, sublayer: str, norm: str, arch: ModelArch) -> str:
        """The residual around a sublayer: post-norm (Marian) LayerNorm(h + sublayer), pre-norm h + sublayer (its
        norm was applied to the input, :meth:`sublayer_input`). Add + LayerNormalization, not the fused
        SkipLayerNormalization: ONNX Runtime's CPU kernel of the latter measured 3-6x slower from 16 rows on."""
        summed = self.op1("Add", [h, sublayer])
        return summed if arch.pre_norm else self.norm(summed, norm, arch)

    def feed_forward(self, h: str, prefix: str, arch: ModelArch) -> str:
        x = self.sublayer_input(h, f"{prefix}.ffn_ln", arch)
        ffn = self.linear(self.activation(self.linear(x, f"{prefix}.fc1"), arch.activation), f"{prefix}.fc2")
        return self.residual_norm(h, ffn, f"{prefix}.ffn_ln", arch)

    def activation(self, x: str, kind: str) -> str:
        if kind in ("swish", "silu"):
            return self.op1("Mul", [x, self.op1("Sigmoid", [x])])
        if kind == "relu":
            return self.op1("Relu", [x])
        # exact (erf) gelu, as torch.nn.functional.gelu
        half = self.const(0.5, np.float32)
        erf = self.op1("Erf", [self.op1("Mul", [x, self.const(1 / math.sqrt(2), np.float32)])])
        return self.op1("Mul", [self.op1("Mul", [x, half]), self.op1("Add", [erf, self.const(1.0, np.float32)])])

    def heads(self, x: str, n_heads: int, head_dim: int, perm: list[int]) -> str:
        """[B, L, d] -> [B, L, H, dh] -> transposed by perm."""
        shaped = self.op1("Reshape", [x, self.const([0, -1, n_heads, head_dim])])
        return self.op1("Transpose", [shaped], perm=perm)

    def attend(self, q: str, k_t: str, v: str, bias: str | None) -> str:
        """softmax(q @ k_t + bias) @ v, with q already scaled (the scale is folded into the q weights)."""
        scores = self.op1("MatMul", [q, k_t])
        if bias is not None:
            scores = self.op1("Add", [scores, bias])
        return self.op1("MatMul", [self.op1("Softmax", [scores], axis=-1), v])

    def model(self, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]) -> onnx.ModelProto:
        initializers = [self.store.tensor_proto(name) for name in self.weights_used] + self.constants
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, initializer=initializers)
        opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="enzh")
        model.ir_version = 8
        return model


def _f32(name: str, shape: list[str | int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _i64(name: str, shape: list[str | int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def sinusoidal_positions(n_positions: int, dim: int) -> np.ndarray:
    """Marian's static positions: sin features in the first half, cos in the second (not interleaved)."""
    pos = np.arange(n_positions, dtype=np.float64)[:, None]
    j = np.arange(dim)
    angles = pos / np.power(10000, 2 * (j // 2) / dim)
    sentinel = dim // 2 + dim % 2
    table = np.empty((n_positions, dim), dtype=np.float32)
    table[:, :sentinel] = np.sin(angles[:, 0::2])
    table[:, sentinel:] = np.cos(angles[:, 1::2])
    return table


def _embed(g: GraphBuilder, arch: ModelArch, table: str, ids: str, positions: str, side: str) -> str:
    """Token embedding (scaled by sqrt(d_model) when the model says so) plus positions, then the embedding norm
    of the models that have one (``side``: encoder or decoder, whose norm it is)."""
    emb = g.op1("Gather", [g.weight(table), ids])
    if arch.scale_embedding:
        emb = g.op1("Mul", [emb, g.const(math.sqrt(arch.d_model), np.float32)])
    h = g.op1("Add", [emb, positions])
    return g.norm(h, f"{side}.embed_ln", arch) if arch.embedding_norm else h


def _position_rows(g: GraphBuilder, arch: ModelArch, table: str, length: str, ids: str) -> str:
    """The position rows of a whole sequence ``ids`` [B, L] (``length``: L): rows position_offset ..
    position_offset + L - 1 of the table ([L, d], the same for every row), or pad-aware rows ([B, L, d])."""
    if arch.pad_aware_positions:
        real = g.op1("Cast", [g.op1("Not", [g.op1("Equal", [ids, g.const(arch.pad_token_id)])])], to=TensorProto.INT64)
        count = g.op1("Mul", [g.op1("CumSum", [real, g.const(1)]), real])  # 1, 2, ... over real tokens, 0 on pads
        return g.op1("Gather", [g.weight(table), g.op1("Add", [count, g.const(arch.pad_token_id)])])
    start = g.const([arch.position_offset])
    end = g.op1("Add", [length, start]) if arch.position_offset else length
    return g.op1("Slice", [g.weight(table), start, end, g.const([0])])


def build_encoder(arch: ModelArch, store: WeightStore, embed_name: str, *, packed: bool = True) -> onnx.ModelProto:
    """The encoder graph; ``packed=False`` runs padded positions through every layer too (exports before
    packing did; kept to check packing against)."""
    g = GraphBuilder("enzh_encoder", store)
    d, heads = arch.d_model, arch.encoder_heads
    # Positions 0..S-1 of the static sinusoidal table.
    seq_len = g.op1("Gather", [g.op1("Shape", ["input_ids"]), g.const([1])])
    positions = _position_rows(g, arch, "positions", seq_len, "input_ids")
    h = _embed(g, arch, embed_name, "input_ids", positions, "encoder")
    # Additive mask: 0 where attended, float32 min where padded; shape [B, 1, 1, S].
    is_pad = g.op1("Equal", ["attention_mask", g.const(0)])
    bias = g.op1("Where", [is_pad, g.const(np.finfo(np.float32).min, np.float32), g.const(0.0, np.float32)])
    bias = g.op1("Unsqueeze", [bias, g.const([1, 2])])
    # Padded keys are left out of self-attention (MultiHeadAttention's key padding mask: 1 = attend).
    key_mask = g.op1("Cast", ["attention_mask"], to=TensorProto.INT32)
    # Packing: every token-wise layer (projections, feed-forward, norms) runs on the batch's real tokens only,
    # [1, T, d]; attention reads them back in the padded [B, S, .] layout. Padded positions there hold a copy of
    # a real token (masked out as keys, their outputs never read), so real tokens get exactly the results of
    # the padded computation, with up to a third fewer rows in a batch of mixed lengths.
    pack, padded = _packing(g, d) if packed else (_same, _same)
    h = pack(h)
    for i in range(arch.encoder_layers):
        p = f"encoder.{i}"
        x = g.sublayer_input(h, f"{p}.attn_ln", arch)
        q, k, v = g.op("Split", [padded(g.linear(x, f"{p}.qkv")), g.const([d, d, d])], 3, axis=-1)
        # Fused attention on [B, S, d] inputs and output (the q scale is folded into the weights).
        ctx = g.op1("MultiHeadAttention", [q, k, v, "", key_mask], domain=MS_DOMAIN, num_heads=heads, scale=1.0)
        ctx = pack(ctx)
        h = g.residual_norm(h, g.linear(ctx, f"{p}.out"), f"{p}.attn_ln", arch)
        h = g.feed_forward(h, p, arch)
    if arch.final_norms:
        h = g.norm(h, "encoder.final_ln", arch)
    outputs = [_f32("cross_bias", ["batch", 1, 1, "src_len"])]
    g.nodes.append(helper.make_node("Identity", [bias], ["cross_bias"]))
    dd = arch.d_model // arch.decoder_heads
    for i in range(arch.decoder_layers):
        k, v = g.op("Split", [padded(g.linear(h, f"decoder.{i}.cross_kv")), g.const([d, d])], 2, axis=-1)
        # [B, H, S, dh] both: the layout MultiHeadAttention reads as already projected keys/values.
        g.nodes.append(
            helper.make_node("Identity", [g.heads(k, arch.decoder_heads, dd, [0, 2, 1, 3])], [f"cross_key_{i}"])
        )
        g.nodes.append(
            helper.make_node("Identity", [g.heads(v, arch.decoder_heads, dd, [0, 2, 1, 3])], [f"cross_value_{i}"])
        )
        outputs += [
            _f32(f"cross_key_{i}", ["batch", arch.decoder_heads, "src_len", dd]),
            _f32(f"cross_value_{i}", ["batch", arch.decoder_heads, "src_len", dd]),
        ]
    inputs = [_i64("input_ids", ["batch", "src_len"]), _i64("attention_mask", ["batch", "src_len"])]
    return g.model(inputs, outputs)


def _packing(g: GraphBuilder, width: int) -> tuple[Callable[[str], str], Callable[[str], str]]:
    """The encoder's packing of real tokens: a function from padded rows [B, S, width] to the real tokens' rows
    [1, T, width], and one from packed rows [1, T, n] back to [B, S, n] (padded positions: packed row 0)."""
    mask = g.op1("Reshape", ["attention_mask", g.const([-1])])
    real = g.op1("Squeeze", [g.op1("NonZero", [mask]), g.const([0])])  # the real tokens among the B x S
    index = g.op1("Sub", [g.op1("CumSum", [mask, g.const(0)]), g.const(1)])  # the packed row of a real token
    spread = g.op1("Where", [g.op1("Cast", [mask], to=TensorProto.BOOL), index, g.const(0)])
    shape = g.op1("Concat", [g.op1("Shape", ["attention_mask"]), g.const([-1])], axis=0)

    def pack(rows: str) -> str:
        return g.op1("Gather", [g.op1("Reshape", [rows, g.const([1, -1, width])]), real], axis=1)

    def padded(rows: str) -> str:
        return g.op1("Reshape", [g.op1("Gather", [rows, spread], axis=1), shape])

    return pack, padded


def _same(name: str) -> str:
    return name


def cache_head_size(arch: ModelArch) -> int:
    """Head size of the decoder's self-attention cache: ONNX Runtime's GroupQueryAttention needs a multiple of 8,
    so smaller or odd heads are zero-padded (exact: the padded dimensions add 0 to every dot product)."""
    return -(-(arch.d_model // arch.decoder_heads) // 8) * 8


def pad_self_attention(arch: ModelArch, store: WeightStore) -> None:
    """Zero-pad every decoder self-attention head to :func:`cache_head_size` (call before ``store.write``):
    the packed q|k|v projection gets zero output columns, the output projection zero input rows."""
    heads, dh, padded = arch.decoder_heads, arch.d_model // arch.decoder_heads, cache_head_size(arch)
    if padded == dh:
        return

    def spread(array: np.ndarray, axis: int, groups: int) -> np.ndarray:
        # [.., groups * heads * dh, ..] -> [.., groups * heads * padded, ..] with zeros after each head
        moved = np.moveaxis(array, axis, -1)
        blocks = moved.reshape(*moved.shape[:-1], groups * heads, dh)
        blocks = np.concatenate([blocks, np.zeros((*blocks.shape[:-1], padded - dh), blocks.dtype)], axis=-1)
        return np.ascontiguousarray(np.moveaxis(blocks.reshape(*moved.shape[:-1], -1), -1, axis))

    for i in range(arch.decoder_layers):
        p = f"decoder.{i}"
        store.arrays[f"{p}.qkv.w"] = spread(store.arrays[f"{p}.qkv.w"], 1, 3)
        store.arrays[f"{p}.qkv.b"] = spread(store.arrays[f"{p}.qkv.b"], 0, 3)
        store.arrays[f"{p}.out.w"] = spread(store.arrays[f"{p}.out.w"], 0, 1)


def half_precision_cache(model: onnx.ModelProto) -> int:
    """Keep the decoder's self-attention cache in float16 (half the memory of the largest per-batch buffers):
    every ``past_*``/``present_*`` becomes float16 and each GroupQueryAttention runs in float16 between two Casts.
    Returns the number of attention nodes rewritten. Numerics change (keys/values rounded to 11 bits), so only
    precision variants offer it; the fp32 export keeps transformers' float32 cache."""
    graph = model.graph
    nodes: list[onnx.NodeProto] = []
    rewritten = 0
    for node in graph.node:
        if node.op_type != "GroupQueryAttention":
            nodes.append(node)
            continue
        qkv, ctx = node.input[0], node.output[0]
        nodes.append(helper.make_node("Cast", [qkv], [f"{qkv}.fp16"], name=f"{node.name}_in", to=TensorProto.FLOAT16))
        node.input[0], node.output[0] = f"{qkv}.fp16", f"{ctx}.fp16"
        nodes.append(node)
        nodes.append(helper.make_node("Cast", [f"{ctx}.fp16"], [ctx], name=f"{node.name}_out", to=TensorProto.FLOAT))
        rewritten += 1
    del graph.node[:]
    graph.node.extend(nodes)
    for value in (*graph.input, *graph.output):
        if value.name.startswith(("past_key_", "past_value_", "present_key_", "present_value_")):
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    return rewritten


def build_decoder(arch: ModelArch, store: WeightStore, embed_name: str, lm_head_name: str) -> onnx.ModelProto:
    g = GraphBuilder("enzh_decoder", store)
    d, heads = arch.d_model, arch.decoder_heads
    dh = d // heads
    cache_dh = cache_head_size(arch)
    vocab = arch.target_vocab_size
    # One step is a single position per row, so the hidden state stays 2-D [R, d]: every linear layer is one
    # Gemm after ONNX Runtime's MatMul+Add fusion, and there are few shape nodes per layer (a step's cost on a
    # small model is mostly per-node dispatch).
    # `position` is every row's own position ([R]: rows that joined a running batch at different steps,
    # enzh.runtime.running) or one for all rows ([1]); as a column [P, 1] it gathers [P, 1, d] position rows.
    column = g.op1("Reshape", ["position", g.const([-1, 1])])
    row = g.op1("Add", [column, g.const([arch.position_offset])]) if arch.position_offset else column
    if arch.pad_aware_positions:  # a pad input reads the pad row (zeros); [R, 1] rows
        row = g.op1(
            "Where", [g.op1("Equal", ["input_ids", g.const(arch.pad_token_id)]), g.const(arch.pad_token_id), row]
        )
    positions = g.op1("Gather", [g.weight(arch.decoder_positions), row])  # [P, 1, d] (pad-aware: [R, 1, d])
    # The lookup reads input_ids itself (precision variants recognise and rewrite it by that name).
    h = g.op1("Reshape", [_embed(g, arch, embed_name, "input_ids", positions, "decoder"), g.const([-1, d])])  # [R, d]
    # GroupQueryAttention reads each row's cache up to its seqlens_k (= its position) and writes this step's
    # key/value at that index; total_sequence_length = the largest position + 1 (a scalar).
    past_len = g.op1("Cast", ["position"], to=TensorProto.INT32)
    rows = g.op1("Slice", [g.op1("Shape", ["input_ids"]), g.const([0]), g.const([1])])
    seqlens = g.op1("Expand", [past_len, rows])
    longest = g.op1("ReduceMax", [past_len], keepdims=1)
    total_len = g.op1("Squeeze", [g.op1("Add", [longest, g.const([1], np.int32)]), g.const([0])])
    # Rows are grouped by sentence: the cross keys/values hold one entry per sentence and the rows of a
    # sentence (its beams) are contiguous, so cross-attention runs as [sentences, beams, d] queries, with the
    # source padding bias broadcast to [sentences, 1, beams, src_len].
    sentences = g.op1("Slice", [g.op1("Shape", ["cross_bias"]), g.const([0]), g.const([1])])
    beams = g.op1("Div", [rows, sentences])
    by_sentence = g.op1("Concat", [sentences, beams, g.const([d])], axis=0)
    cross_bias = g.op1("Expand", ["cross_bias", g.op1("Concat", [g.const([1, 1]), beams, g.const([1])], axis=0)])
    outputs = [
        _f32("logits", ["rows", vocab]),
        _f32("log_probs", ["rows", vocab]),
        _f32("top_log_probs", ["rows", "k"]),
        _i64("top_ids", ["rows", "k"]),
    ]
    inputs = [
        _i64("input_ids", ["rows", 1]),
        _i64("position", ["position_rows"]),
        _i64("top_k", [1]),
        _f32("cross_bias", ["batch", 1, 1, "src_len"]),
    ]
    for i in range(arch.decoder_layers):
        p = f"decoder.{i}"
        inputs += [
            _f32(f"past_key_{i}", ["rows", heads, "capacity", cache_dh]),
            _f32(f"past_value_{i}", ["rows", heads, "capacity", cache_dh]),
            _f32(f"cross_key_{i}", ["batch", heads, "src_len", dh]),
            _f32(f"cross_value_{i}", ["batch", heads, "src_len", dh]),
        ]
        outputs += [
            _f32(f"present_key_{i}", ["rows", heads, "present_len", cache_dh]),
            _f32(f"present_value_{i}", ["rows", heads, "present_len", cache_dh]),
        ]
        # Self-attention over the cache plus this step, fused (packed q|k|v as [R, 1, 3 x H x dh], the q scale
        # folded into the weights). Bound to the same buffer as past_*, present_* is updated in place.
        x = g.sublayer_input(h, f"{p}.attn_ln", arch)
        qkv = g.op1("Unsqueeze", [g.linear(x, f"{p}.qkv"), g.const([1])])
        ctx = g.op1(
            "GroupQueryAttention",
            [qkv, "", "", f"past_key_{i}", f"past_value_{i}", seqlens, total_len],
            outputs=[f"present_key_{i}", f"present_value_{i}"],
            domain=MS_DOMAIN,
            num_heads=heads,
            kv_num_heads=heads,
            scale=1.0,
        )
        ctx = g.op1("Reshape", [ctx, g.const([-1, heads * cache_dh])])
        h = g.residual_norm(h, g.linear(ctx, f"{p}.out"), f"{p}.attn_ln", arch)
        # Cross-attention against the keys/values the encoder graph computed once per sentence ([B, H, S, dh]).
        x = g.sublayer_input(h, f"{p}.cross_ln", arch)
        q = g.op1("Reshape", [g.linear(x, f"{p}.cross_q"), by_sentence])
        ctx = g.op1(
            "MultiHeadAttention",
            [q, f"cross_key_{i}", f"cross_value_{i}", "", "", cross_bias],
            domain=MS_DOMAIN,
            num_heads=heads,
            scale=1.0,
        )
        ctx = g.op1("Reshape", [ctx, g.const([-1, d])])
        h = g.residual_norm(h, g.linear(ctx, f"{p}.cross_out"), f"{p}.cross_ln", arch)
        h = g.feed_forward(h, p, arch)
    if arch.final_norms:
        h = g.norm(h, "decoder.final_ln", arch)
    # Output projection for the new position only: logits = h @ E^T + final_logits_bias (E stored once).
    g.nodes.append(
        helper.make_node("Gemm", [h, g.weight(lm_head_name), g.weight("final_logits_bias")], ["logits"], transB=1)
    )
    # Log-probabilities and their best top_k per row, so a search step rarely needs to read all V of them.
    g.nodes.append(helper.make_node("LogSoftmax", ["logits"], ["log_probs"], axis=-1))
    g.nodes.append(helper.make_node("TopK", ["log_probs", "top_k"], ["top_log_probs", "top_ids"], axis=-1))
    return g.model(inputs, outputs)


def build_aligner(arch: ModelArch, store: WeightStore, embed_name: str, settings: AlignerSettings) -> onnx.ModelProto:
    """``aligner.onnx``: the decoder over a whole teacher-forced target, without a cache, up to the last chosen
    layer's cross-attention; it returns the mean of the chosen layers' and heads' attention weights.

    It reads the decoder's weights (the padded self-attention heads of :func:`pad_self_attention` included) and
    the encoder graph's outputs, so it adds nothing to weights.bin. The target ids are named ``input_ids`` like
    the decoder's: a precision variant rewrites the lookup the same way (:mod:`enzh.quantize.rewrite`)."""
    layers, heads = settings.resolve(arch)
    g = GraphBuilder("enzh_aligner", store)
    d, n_heads = arch.d_model, arch.decoder_heads
    dh, padded = d // n_heads, cache_head_size(arch)
    # Positions 0..T-1 and a causal bias [T, T]: 0 on and below the diagonal, float32 min above it.
    target_len = g.op1("Gather", [g.op1("Shape", ["input_ids"]), g.const([1])])
    positions = _position_rows(g, arch, arch.decoder_positions, target_len, "input_ids")
    h = _embed(g, arch, embed_name, "input_ids", positions, "decoder")  # [B, T, d]
    steps = g.op1("Range", [g.const(0), g.op1("Squeeze", [target_len, g.const([0])]), g.const(1)])
    later = g.op1("Less", [g.op1("Unsqueeze", [steps, g.const([1])]), g.op1("Unsqueeze", [steps, g.const([0])])])
    causal = g.op1("Where", [later, g.const(np.finfo(np.float32).min, np.float32), g.const(0.0, np.float32)])
    inputs = [_i64("input_ids", ["batch", "target_len"]), _f32("cross_bias", ["batch", 1, 1, "src_len"])]
    total: str | None = None
    for i in range(layers[-1] + 1):
        p = f"decoder.{i}"
        last = i == layers[-1]
        inputs.append(_f32(f"cross_key_{i}", ["batch", n_heads, "src_len", dh]))
        if not last:
            inputs.append(_f32(f"cross_value_{i}", ["batch", n_heads, "src_len", dh]))
        # Self-attention over the target up to each position (the packed q|k|v heads zero-padded to `padded`).
        x = g.sublayer_input(h, f"{p}.attn_ln", arch)
        q, k, v = g.op("Split", [g.linear(x, f"{p}.qkv"), g.const([n_heads * padded] * 3)], 3, axis=-1)
        q, k_t, v = (
            g.heads(x, n_heads, padded, perm) for x, perm in ((q, [0, 2, 1, 3]), (k, [0, 2, 3, 1]), (v, [0, 2, 1, 3]))
        )
        ctx = g.attend(q, k_t, v, causal)  # [B, H, T, padded]
        ctx = g.op1("Reshape", [g.op1("Transpose", [ctx], perm=[0, 2, 1, 3]), g.const([0, 0, n_heads * padded])])
        h = g.residual_norm(h, g.linear(ctx, f"{p}.out"), f"{p}.attn_ln", arch)
        # Cross-attention: its weights are the alignment.
        x = g.sublayer_input(h, f"{p}.cross_ln", arch)
        q = g.heads(g.linear(x, f"{p}.cross_q"), n_heads, dh, [0, 2, 1, 3])  # [B, H, T, dh], scale folded in
        k_t = g.op1("Transpose", [f"cross_key_{i}"], perm=[0, 1, 3, 2])
        scores = g.op1("Add", [g.op1("MatMul", [q, k_t]), "cross_bias"])
        weights = g.op1("Softmax", [scores], axis=-1)  # [B, H, T, S]
        if i in layers:
            picked = weights if len(heads) == n_heads else g.op1("Gather", [weights, g.const(heads)], axis=1)
            mean = g.op1("ReduceMean", [picked], axes=[1], keepdims=0)  # [B, T, S]
            total = mean if total is None else g.op1("Add", [total, mean])
        if last:
            break
        ctx = g.op1("MatMul", [weights, f"cross_value_{i}"])
        ctx = g.op1("Reshape", [g.op1("Transpose", [ctx], perm=[0, 2, 1, 3]), g.const([0, 0, d])])
        h = g.residual_norm(h, g.linear(ctx, f"{p}.cross_out"), f"{p}.cross_ln", arch)
        h = g.feed_forward(h, p, arch)
    assert total is not None
    scale = g.const(1.0 / len(layers), np.float32)
    g.nodes.append(helper.make_node("Mul", [total, scale], ["cross_attention"]))
    return g.model(inputs, [_f32("cross_attention", ["batch", "target_len", "src_len"])])
