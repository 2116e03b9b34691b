"""Shortlists: a decoder whose output projection scores only some target tokens (lossy, opt-in).

:func:`corpus_shortlist` picks the pieces most frequent in a target-language corpus; :func:`apply_shortlist`
slices the quantized projection of a rewritten decoder down to those tokens. :func:`apply_source_shortlist`
makes the projection read its weight, scales (and bias) and the scored ids as decoder inputs, bound per batch
by the runtime (:mod:`enzh.runtime.candidates`; the table comes from :mod:`enzh.quantize.lexical`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from enzh.quantize.rewrite import Rewritten
from enzh.quantize.weights import AliasingWeightStore
from enzh.runtime import candidates as lexical
from enzh.runtime.errors import QuantizeError
from enzh.runtime.manifest import Manifest

logger = logging.getLogger("enzh")

# (input, axis of its token dimension) of the weight, scales and bias of each quantized output projection
_TOKEN_AXES = {
    "DynamicQuantizeMatMul": ((1, 1), (2, 0), (4, 0)),  # B [d, V], one scale per column, bias [V]
    "MatMulNBits": ((1, 0), (2, 0), (5, 0)),  # B [V, blocks, bytes], scales [V, blocks], bias [V]
}


def corpus_shortlist(model_dir: str | os.PathLike[str], texts: Iterable[str], size: int) -> list[int]:
    """Token ids of the ``size`` target pieces most frequent in ``texts`` (target-language sentences, split by
    the model directory's target.spm), plus eos and unk: the ``shortlist_ids`` of
    :func:`enzh.quantize.pipeline.quantize`."""
    from enzh.runtime.tokenizer import MarianTokenizer

    directory = Path(model_dir)
    tokenizer = MarianTokenizer.from_model_dir(directory, Manifest.load(directory).tokenizer)
    ids = tokenizer.frequent_target_ids(texts, size)
    if len(ids) < size + 2:
        logger.warning("the corpus holds only %d distinct target pieces; the shortlist keeps all of them", len(ids) - 2)
    return ids


def scored_ids(manifest: Manifest, given: Sequence[int]) -> list[int]:
    """The token ids a shortlisted decoder scores: ``given`` plus eos and unk, sorted; never pad."""
    special = manifest.special_ids
    vocab = int(manifest.architecture["target_vocab_size"])
    bad = [i for i in given if i >= vocab or i == special["pad"]]
    if bad:
        raise QuantizeError(
            f"shortlist_ids {bad[:5]} are not tokens the model may generate (vocabulary 0..{vocab - 1}, "
            f"pad {special['pad']} excluded)"
        )
    ids = sorted({*given, special["eos"], special["unk"]})
    if len(ids) >= vocab - 1:
        raise QuantizeError(
            f"the shortlist ({len(ids)} tokens) covers the whole {vocab}-token vocabulary; choose fewer tokens"
        )
    return ids


def apply_shortlist(decoder: Rewritten, store: AliasingWeightStore, ids: list[int]) -> None:
    """Make the decoder's output projection score only the tokens ``ids``: its weight columns (or rows), scales
    and bias are sliced into new tensors, ``logits``/``log_probs`` become ``[rows, len(ids)]`` and ``top_ids``
    are mapped back to vocabulary ids in the graph (the runtime spreads the scores over the whole vocabulary)."""
    index = np.asarray(ids, dtype=np.int64)
    projection = next((n for n in decoder.nodes if "logits" in n.output), None)
    if projection is None or projection.op_type not in _TOKEN_AXES:
        raise QuantizeError(
            "shortlist needs a quantized output projection: int8 or int4 (not fp16, not embedding='float')"
        )
    rows = _untranspose(decoder, store, projection)
    transposed = None if rows is None else store.arrays[rows].T
    for position, axis in _TOKEN_AXES[projection.op_type]:
        if position < len(projection.input):
            given = transposed if position == 1 else None
            _slice_input(decoder, store, projection, position, axis, index, given)
    if projection.op_type == "MatMulNBits":
        for attribute in projection.attribute:
            if attribute.name == "N":
                attribute.i = len(ids)
    used = {name for node in decoder.nodes for name in node.input}
    decoder.weights[:] = [name for name in decoder.weights if name in used]
    decoder.constants.append(numpy_helper.from_array(index, "shortlist.ids"))
    _map_top_ids(decoder, "shortlist.ids", len(index))


def apply_source_shortlist(decoder: Rewritten, store: AliasingWeightStore) -> dict[str, str]:
    """Make the decoder's ``DynamicQuantizeMatMul`` output projection read its weight ``[d, candidates]``, scales
    and bias from decoder inputs, and map TopK's positions back through the ``shortlist_ids`` input; returns
    the stored names of the full projection's tensors (``weight`` [d, V] or ``weight_rows`` [V, d], ``scales``,
    ``bias``), which the runtime gathers the candidates' columns (rows) from."""
    projection = next((n for n in decoder.nodes if "logits" in n.output), None)
    if projection is None or projection.op_type != "DynamicQuantizeMatMul":
        found = "none" if projection is None else projection.op_type
        raise QuantizeError(
            "a source shortlist needs a DynamicQuantizeMatMul output projection (int8 with embedding='channels', "
            f"the int8 default); this decoder's is {found}"
        )
    # The weight: the stored rows [V, d] whose Transpose it is (the int8 default; the runtime gathers the
    # candidates' rows), or a stored [d, V] (the runtime gathers its columns).
    rows = _untranspose(decoder, store, projection)
    full = {"weight": projection.input[1]} if rows is None else {"weight_rows": rows}
    full["scales"] = projection.input[2]
    if len(projection.input) > 4 and projection.input[4]:
        full["bias"] = projection.input[4]
    d_model = int(store.arrays[rows].shape[1] if rows is not None else store.arrays[full["weight"]].shape[0])
    stored = store.arrays[rows if rows is not None else full["weight"]]
    types = {
        "weight": helper.np_dtype_to_tensor_dtype(stored.dtype),
        "scales": TensorProto.FLOAT,
        "bias": TensorProto.FLOAT,
    }
    positions = {"weight": 1, "scales": 2, "bias": 4}
    while len(projection.input) < 5:  # a bias input even without a bias: the runtime's -inf padding columns
        projection.input.append("")
    for key in positions:
        shape: list[int | str] = [d_model, "candidates"] if key == "weight" else ["candidates"]
        decoder.graph.input.append(helper.make_tensor_value_info(lexical.INPUTS[key], types[key], shape))
        projection.input[positions[key]] = lexical.INPUTS[key]
    decoder.graph.input.append(helper.make_tensor_value_info(lexical.IDS_INPUT, TensorProto.INT64, ["candidates"]))
    used = {name for node in decoder.nodes for name in node.input}
    decoder.weights[:] = [name for name in decoder.weights if name in used]
    _map_top_ids(decoder, lexical.IDS_INPUT, "candidates")
    return full


def _untranspose(decoder: Rewritten, store: AliasingWeightStore, projection: onnx.NodeProto) -> str | None:
    """An int8 projection's weight ``[d, V]`` is a Transpose of the stored rows ``[V, d]`` in the graph
    (:class:`enzh.quantize.weights.ChannelTable`): drop that node and return the rows' stored name (not the
    alias the Transpose reads them under), which a shortlist reads instead. None for other projections (their
    weight is stored as they read it)."""
    name = projection.input[1]
    transpose = next((n for n in decoder.nodes if n.op_type == "Transpose" and name in n.output), None)
    if transpose is None:
        return None
    decoder.nodes.remove(transpose)
    return store.aliases.get(transpose.input[0], str(transpose.input[0]))


def _slice_input(
    decoder: Rewritten,
    store: AliasingWeightStore,
    projection: onnx.NodeProto,
    position: int,
    axis: int,
    index: np.ndarray,
    given: np.ndarray | None = None,
) -> None:
    """Replace the projection's input ``position`` by a new stored tensor: its entries ``index`` along ``axis``
    (of ``given``, the input's value, when it is not a stored tensor)."""
    name = projection.input[position]
    if not name:
        return
    new = f"shortlist.{name}"
    value = store.arrays[name] if given is None else given
    store.add(new, np.ascontiguousarray(np.take(value, index, axis=axis)))
    decoder.weights.append(new)
    projection.input[position] = new


def _map_top_ids(decoder: Rewritten, ids: str, width: int | str) -> None:
    """TopK now ranks shortlist positions: a Gather of ``ids`` (a constant or an input) maps them back to
    vocabulary ids; the score outputs get the shortlist's width (a number, or a dimension name)."""
    top_k = next(n for n in decoder.nodes if n.op_type == "TopK")
    top_k.output[1] = "top_ids.shortlist"
    gather = helper.make_node("Gather", [ids, "top_ids.shortlist"], ["top_ids"], name="shortlist_ids")
    decoder.nodes.insert(decoder.nodes.index(top_k) + 1, gather)
    for output in decoder.graph.output:
        if output.name in ("logits", "log_probs"):
            dim = output.type.tensor_type.shape.dim[1]
            if isinstance(width, int):
                dim.dim_value = width
            else:
                dim.dim_param = width


__all__ = ["apply_shortlist", "apply_source_shortlist", "corpus_shortlist", "scored_ids"]
