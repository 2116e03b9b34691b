"""Rewrite the fp32 encoder/decoder graphs into a precision variant's, node by node.

The patterns the graph builder (:mod:`enzh.export.graph`) emits, and what each becomes:

* ``MatMul(x, W)`` [+ ``Add(., b)``]: every linear layer. int8: ``com.microsoft.DynamicQuantizeMatMul``
  (one scale per output channel, the bias fused) or 8-bit ``MatMulNBits``; int4: ``MatMulNBits`` (4-bit blocks
  along the input dimension, the bias fused); fp16: a ``Cast`` of the float16 weight, then the MatMul.
* ``Gemm(h, E, final_logits_bias, transB=1)``: the output projection (:meth:`Rewriter.projection`).
* ``Gather(E, input_ids)``: the token embedding lookup (:meth:`Rewriter.lookup`), sharing E's stored table
  with the projection.
* int8/int4: ``Gather``/``Slice`` of the sinusoidal position table: computed in the graph instead of stored.

Every other node is kept; the weights it reads are copied as fp32. :func:`assemble` makes the new model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from enzh.export.graph import MS_DOMAIN, WeightStore, sinusoidal_positions
from enzh.quantize.blocks import U8_ZERO_POINT
from enzh.quantize.settings import QuantizeSettings
from enzh.quantize.weights import VariantWeights

# Recorded in every variant's graphs: kept as it was when this module was enzh.quantize.pipeline, so that a
# variant's encoder.onnx/decoder.onnx stay byte for byte what earlier versions wrote.
PRODUCER = "enzh.quantize.pipeline"


@dataclass
class Rewritten:
    """One rewritten graph before assembly: its nodes, the stored weights and the constants it reads."""

    graph: onnx.GraphProto
    nodes: list[onnx.NodeProto]
    weights: list[str]
    constants: list[TensorProto]


@dataclass
class _GraphView:
    """Lookups over one source graph: initializers, which are external weights, who consumes each value."""

    graph: onnx.GraphProto
    inits: dict[str, TensorProto]
    weights: set[str]
    consumers: dict[str, list[onnx.NodeProto]]
    outputs: set[str]

    @classmethod
    def of(cls, graph: onnx.GraphProto) -> _GraphView:
        inits = {t.name: t for t in graph.initializer}
        consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                consumers.setdefault(name, []).append(node)
        return cls(
            graph=graph,
            inits=inits,
            weights={name for name, t in inits.items() if t.data_location == TensorProto.EXTERNAL},
            consumers=consumers,
            outputs={o.name for o in graph.output},
        )

    def is_weight(self, name: str, rank: int) -> bool:
        """An external fp32 initializer of that rank."""
        if name not in self.weights:
            return False
        tensor = self.inits[name]
        return tensor.data_type == TensorProto.FLOAT and len(tensor.dims) == rank

    def fused_bias(self, output: str, n: int) -> onnx.NodeProto | None:
        """The ``Add(matmul, b)`` right after a MatMul, when it is the MatMul's only consumer."""
        users = self.consumers.get(output, [])
        if len(users) != 1 or users[0].op_type != "Add" or output in self.outputs:
            return None
        add = users[0]
        other = add.input[1] if add.input[0] == output else add.input[0]
        return add if self.is_weight(other, 1) and self.inits[other].dims[0] == n else None

    def const(self, name: str) -> np.ndarray | None:
        """The value of an embedded (non-weight) initializer, None for anything else."""
        tensor = self.inits.get(name)
        return None if tensor is None or name in self.weights else numpy_helper.to_array(tensor)

    def is_zero_start_slice(self, node: onnx.NodeProto) -> bool:
        """``Slice(table, [0], end, [0])``: the encoder's rows 0..S-1 of the position table."""
        starts, axes = self.const(node.input[1]), self.const(node.input[3]) if len(node.input) > 3 else np.zeros(1)
        return (
            len(node.input) <= 4
            and starts is not None
            and axes is not None
            and starts.tolist() == [0]
            and axes.tolist() == [0]
        )


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _is_projection(node: onnx.NodeProto, view: _GraphView) -> bool:
    """``Gemm(h, E, c, transB=1)`` with a stored E and nothing else unusual."""
    attrs = _attributes(node)
    return (
        node.op_type == "Gemm"
        and view.is_weight(node.input[1], 2)
        and attrs.get("transB", 0) == 1
        and not attrs.get("transA", 0)
        and attrs.get("alpha", 1.0) == 1.0
        and attrs.get("beta", 1.0) == 1.0
    )


def _is_lookup(node: onnx.NodeProto, view: _GraphView) -> bool:
    """``Gather(E, input_ids)`` of token ids; positions are gathered by "position" and kept fp32."""
    return (
        node.op_type == "Gather"
        and view.is_weight(node.input[0], 2)
        and node.input[1] == "input_ids"
        and _attributes(node).get("axis", 0) == 0
    )


@dataclass
class Rewriter:
    """Rewrites both graphs of a model over one :class:`VariantWeights`; records what it did for the manifest."""

    weights: VariantWeights
    counts: dict[str, int] = field(default_factory=dict)
    float_kept: set[str] = field(default_factory=set)
    dropped: list[str] = field(default_factory=list)
    sinusoids: dict[str, bool] = field(default_factory=dict)

    @property
    def settings(self) -> QuantizeSettings:
        return self.weights.settings

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def rewrite(self, model: onnx.ModelProto) -> Rewritten:
        view = _GraphView.of(model.graph)
        nodes: list[onnx.NodeProto] = []
        new_constants: list[TensorProto] = []
        skip: set[int] = set()  # nodes folded into an earlier one (a MatMul's bias Add)
        for node in view.graph.node:
            if id(node) not in skip:
                nodes += self._rewrite_node(node, view, new_constants, skip)
        used, constants = self._initializers(nodes, view)
        return Rewritten(graph=view.graph, nodes=nodes, weights=used, constants=constants + new_constants)

    def _rewrite_node(
        self, node: onnx.NodeProto, view: _GraphView, constants: list[TensorProto], skip: set[int]
    ) -> list[onnx.NodeProto]:
        """The nodes that replace ``node`` (``[node]`` when no pattern applies)."""
        if self.settings.quantized and node.op_type in ("Gather", "Slice") and self._is_sinusoids(node.input[0], view):
            computed = self._positions(node, view, constants)
            if computed is not None:
                return computed
        if node.op_type == "MatMul" and view.is_weight(node.input[1], 2):
            return self._matmul(node, view, skip)
        if _is_projection(node, view):
            return self.projection(node, view)
        if _is_lookup(node, view):
            return self.lookup(node, view.inits[node.input[0]], constants)
        return [node]

    def _initializers(self, nodes: list[onnx.NodeProto], view: _GraphView) -> tuple[list[str], list[TensorProto]]:
        """(stored weights, embedded constants) the kept nodes read; every external weight still referenced by a
        kept node is copied as fp32."""
        used: list[str] = []
        constants: list[TensorProto] = []
        store = self.weights.store
        referenced = [name for node in nodes for name in node.input if name]
        for name in dict.fromkeys(referenced):
            if name in view.weights and name not in store.arrays:
                self.weights.float32(name, view.inits[name])
                if view.inits[name].data_type == TensorProto.FLOAT and len(view.inits[name].dims) == 2:
                    self.float_kept.add(name)
            if name in store.arrays:
                used.append(name)
            elif name in view.inits:
                constants.append(view.inits[name])
        return used, constants

    def _is_sinusoids(self, name: str, view: _GraphView) -> bool:
        """Whether the weight ``name`` is Marian's sinusoidal position table (checked once per table)."""
        if not view.is_weight(name, 2):
            return False
        if name not in self.sinusoids:
            tensor = view.inits[name]
            rows, dim = (int(d) for d in tensor.dims)
            table = self.weights.source.array(tensor)
            # Row 0 is [0, ..., 0, 1, ..., 1]: a cheap test before building the whole reference table.
            self.sinusoids[name] = (
                dim % 2 == 0
                and np.allclose(table[:2], sinusoidal_positions(2, dim)[: len(table)], atol=1e-6)
                and np.allclose(table, sinusoidal_positions(rows, dim), atol=1e-6)
            )
            if self.sinusoids[name]:
                self._count("positions computed")
        return self.sinusoids[name]

    def _positions(
        self, node: onnx.NodeProto, view: _GraphView, constants: list[TensorProto]
    ) -> list[onnx.NodeProto] | None:
        """Marian's static positions (export checked they are exact sinusoids): computed in the graph instead of
        stored, 1 MB less for opus-mt-en-zh (positions x d_model fp32). None for a use of the table it does not
        know (the node is then left to the other patterns)."""
        dim = int(view.inits[node.input[0]].dims[1])
        if node.op_type == "Gather" and _attributes(node).get("axis", 0) == 0:
            return sinusoid_nodes(node.input[1], node.output[0], dim, node.name, constants)
        if node.op_type == "Slice" and view.is_zero_start_slice(node):
            prefix = node.name or node.output[0]
            zero = _const(constants, f"{prefix}/zero", np.array(0, dtype=np.int64))
            one = _const(constants, f"{prefix}/one", np.array(1, dtype=np.int64))
            axis0 = _const(constants, f"{prefix}/axis0", np.array([0], dtype=np.int64))
            limit, ids = f"{prefix}/limit", f"{prefix}/ids"
            return [
                helper.make_node("Squeeze", [node.input[2], axis0], [limit], name=f"{prefix}/squeeze"),
                helper.make_node("Range", [zero, limit, one], [ids], name=f"{prefix}/range"),
                *sinusoid_nodes(ids, node.output[0], dim, prefix, constants),
            ]
        return None

    def _matmul(self, node: onnx.NodeProto, view: _GraphView, skip: set[int]) -> list[onnx.NodeProto]:
        """``MatMul(x, W)``, fused with the ``Add`` of its bias when the variant is quantized."""
        w_name = node.input[1]
        n = int(view.inits[w_name].dims[1])
        add = view.fused_bias(node.output[0], n) if self.settings.quantized else None
        out = node.output[0]
        bias = ""
        if add is not None:
            skip.add(id(add))
            out = add.output[0]
            bias = add.input[1] if add.input[0] == node.output[0] else add.input[0]
            self.weights.float32(bias, view.inits[bias])
        return self.linear(node, w_name, view.inits[w_name], bias, out)

    def linear(self, node: onnx.NodeProto, w_name: str, tensor: TensorProto, bias: str, out: str) -> list[Any]:
        """A linear layer ``out = x @ W (+ bias)`` in the variant's layout."""
        x = node.input[0]
        name = node.name or w_name
        if self.settings.precision == "fp16":
            cast = f"{w_name}.as_fp32"
            self._count("fp16 weights")
            return [
                helper.make_node(
                    "Cast", [self.weights.float16(w_name, tensor)], [cast], name=f"{name}_cast", to=TensorProto.FLOAT
                ),
                helper.make_node("MatMul", [x, cast], [out], name=name),
            ]
        self._count("linear")
        if self.settings.precision == "int8" and self.settings.linear_op == "dynamic":
            q_name, s_name, zero_point = self.weights.columns_int8(w_name, tensor)
            inputs = _dynamic_inputs(x, q_name, s_name, zero_point, bias)
            return [helper.make_node("DynamicQuantizeMatMul", inputs, [out], name=name, domain=MS_DOMAIN)]
        q_name, s_name, attrs = self.weights.nbits(w_name, tensor)
        inputs = [x, q_name, s_name, "", "", bias] if bias else [x, q_name, s_name]
        return [helper.make_node("MatMulNBits", inputs, [out], name=name, domain=MS_DOMAIN, **attrs)]

    def projection(self, node: onnx.NodeProto, view: _GraphView) -> list[Any]:
        """``Gemm(h, E, c, transB=1)``: logits = h @ E^T + c, E being [V, d] (the tied embedding or lm_head)."""
        h, e_name = node.input[0], node.input[1]
        bias = node.input[2] if len(node.input) > 2 else ""
        out = node.output[0]
        name = node.name or "output_projection"
        tensor = view.inits[e_name]
        if bias and view.is_weight(bias, 1) and not np.any(self.weights.source.array(view.inits[bias])):
            # Marian's final_logits_bias is all zeros in the published checkpoints: adding it is a no-op.
            self.dropped.append(bias)
            bias = ""
        if self.settings.precision == "fp16":
            cast = f"{e_name}.as_fp32"
            self._count("fp16 weights")
            inputs = [h, cast, bias] if bias else [h, cast]
            return [
                helper.make_node(
                    "Cast", [self.weights.float16(e_name, tensor)], [cast], name=f"{name}_cast", to=TensorProto.FLOAT
                ),
                helper.make_node("Gemm", inputs, [out], name=name, transB=1),
            ]
        if self.settings.embedding == "float" or (bias and not view.is_weight(bias, 1)):
            return [node]
        if bias:
            self.weights.float32(bias, view.inits[bias])
        if self.settings.embedding == "channels":
            # DynamicQuantizeMatMul wants B [d, V]: a Transpose of the stored rows, which ONNX Runtime folds into
            # a constant at load and pre-packs. It reads them under their second name: the lookups' name is the
            # table the runtime fills row by row on demand (enzh.runtime.rows), empty when the session folds.
            channels = self.weights.channel_table(e_name, tensor)
            self._count("output projection")
            columns = f"{e_name}.q_columns"
            weight = [channels.projection]
            transpose = helper.make_node("Transpose", weight, [columns], name=f"{name}_weight", perm=[1, 0])
            inputs = _dynamic_inputs(h, columns, channels.scales, channels.zero_point, bias)
            return [transpose, helper.make_node("DynamicQuantizeMatMul", inputs, [out], name=name, domain=MS_DOMAIN)]
        table = self.weights.table(e_name, tensor)
        if table is None:
            return [node]
        rows, dim = (int(d) for d in tensor.dims)
        self._count("output projection")
        attrs: dict[str, Any] = {
            "K": dim,
            "N": rows,
            "bits": self.settings.bits,
            "block_size": table.block,
            "accuracy_level": self.settings.accuracy_level,
        }
        inputs = [h, table.matmul, table.scales, "", "", bias] if bias else [h, table.matmul, table.scales]
        return [helper.make_node("MatMulNBits", inputs, [out], name=name, domain=MS_DOMAIN, **attrs)]

    def lookup(self, node: onnx.NodeProto, tensor: TensorProto, constants: list[TensorProto]) -> list[Any]:
        """``Gather(E, input_ids)``: the token embedding lookup (``constants``: where its new constants go)."""
        e_name, ids = node.input[0], node.input[1]
        out = node.output[0]
        name = node.name or "embedding"
        if self.settings.precision == "fp16":
            gathered = f"{out}.fp16"
            self._count("fp16 weights")
            return [
                helper.make_node("Gather", [self.weights.float16(e_name, tensor), ids], [gathered], name=name),
                helper.make_node("Cast", [gathered], [out], name=f"{name}_cast", to=TensorProto.FLOAT),
            ]
        if self.settings.embedding == "float":
            return [node]
        if self.settings.embedding == "channels":
            # Rows of the [V, d] table: Gather -> [*ids, d], times the tokens' scales [*ids, 1].
            channels = self.weights.channel_table(e_name, tensor)
            self._count("embedding lookup")
            codes, values, scales = f"{out}.codes", f"{out}.values", f"{out}.scales"
            last = _const(constants, f"{out}.last_axis", np.array([-1], dtype=np.int64))
            nodes = [
                helper.make_node("Gather", [channels.rows, ids], [codes], name=f"{name}_gather", axis=0),
                helper.make_node("Cast", [codes], [values], name=f"{name}_cast", to=TensorProto.FLOAT),
            ]
            if channels.zero_point:  # uint8 codes hold level + 128
                offset = _const(constants, f"{out}.zero_point", np.array(U8_ZERO_POINT, dtype=np.float32))
                nodes.append(helper.make_node("Sub", [values, offset], [f"{values}.signed"], name=f"{name}_offset"))
                values = f"{values}.signed"
            return [
                *nodes,
                helper.make_node("Gather", [channels.scales, ids], [scales], name=f"{name}_scales", axis=0),
                helper.make_node("Unsqueeze", [scales, last], [f"{scales}.last"], name=f"{name}_unsqueeze"),
                helper.make_node("Mul", [values, f"{scales}.last"], [out], name=f"{name}_scale"),
            ]
        table = self.weights.table(e_name, tensor)
        if table is None:
            return [node]
        self._count("embedding lookup")
        return [
            helper.make_node(
                "GatherBlockQuantized",
                [table.gather, ids, table.scales],
                [out],
                name=name,
                domain=MS_DOMAIN,
                bits=self.settings.bits,
                block_size=table.block,
                gather_axis=0,
                quantize_axis=1,
            )
        ]


def _dynamic_inputs(x: str, weight: str, scales: str, zero_point: str, bias: str) -> list[str]:
    """DynamicQuantizeMatMul's inputs (A, B, b_scale, b_zero_point, bias), the optional ones left out at the end."""
    inputs = [x, weight, scales, zero_point, bias]
    while not inputs[-1]:
        inputs.pop()
    return inputs


def _const(constants: list[TensorProto], name: str, value: np.ndarray) -> str:
    constants.append(numpy_helper.from_array(value, name))
    return name


def sinusoid_nodes(ids: str, out: str, dim: int, prefix: str, constants: list[TensorProto]) -> list[onnx.NodeProto]:
    """Rows ``ids`` of Marian's sinusoidal table: ``[sin(p * f_k), cos(p * f_k)]``, f_k = 10000^(-2k/dim)."""
    prefix = prefix or out
    freq = np.power(10000.0, -2.0 * np.arange(dim // 2) / dim).astype(np.float32)
    inv = _const(constants, f"{prefix}/inv_freq", freq)
    last = _const(constants, f"{prefix}/last_axis", np.array([-1], dtype=np.int64))
    pos, angle = f"{prefix}/pos", f"{prefix}/angle"
    sin, cos = f"{prefix}/sin", f"{prefix}/cos"
    return [
        helper.make_node("Cast", [ids], [f"{prefix}/ids_f"], name=f"{prefix}/cast", to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", [f"{prefix}/ids_f", last], [pos], name=f"{prefix}/unsqueeze"),
        helper.make_node("Mul", [pos, inv], [angle], name=f"{prefix}/angle"),
        helper.make_node("Sin", [angle], [sin], name=f"{prefix}/sin"),
        helper.make_node("Cos", [angle], [cos], name=f"{prefix}/cos"),
        helper.make_node("Concat", [sin, cos], [out], name=f"{prefix}/concat", axis=-1),
    ]


def assemble(model: onnx.ModelProto, rewritten: Rewritten, store: WeightStore) -> onnx.ModelProto:
    """The variant's model: the rewritten nodes over ``store``'s written weights (call after ``store.write``)."""
    graph = rewritten.graph
    initializers = [store.tensor_proto(name) for name in rewritten.weights] + list(rewritten.constants)
    new_graph = helper.make_graph(
        rewritten.nodes,
        graph.name,
        list(graph.input),
        list(graph.output),
        initializer=initializers,
        value_info=list(graph.value_info),
    )
    opsets = [o for o in model.opset_import if o.domain not in ("", "ai.onnx", MS_DOMAIN)]
    opsets += [helper.make_opsetid("", _default_opset(model)), helper.make_opsetid(MS_DOMAIN, 1)]
    out = helper.make_model(new_graph, opset_imports=opsets, producer_name=PRODUCER)
    out.ir_version = model.ir_version
    return out


def _default_opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


__all__ = ["Rewriter", "Rewritten", "assemble", "sinusoid_nodes"]
