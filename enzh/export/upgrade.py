"""Give an exported directory's decoder one position per row, in place (what continuous batching needs).

    python -m enzh.export.upgrade MODEL_DIR [MODEL_DIR ...]

Decoders exported before enzh.runtime.running existed take one ``position [1]`` for every row; a running batch
whose rows joined at different steps needs ``position [R]``. The rewrite is the one :func:`build_decoder` now
builds: ``position`` becomes a column for the position lookup, and GroupQueryAttention's total length becomes the
largest position + 1. A ``[1]`` position still works, with the same numbers as before. The manifest's size and
sha256 of the decoder are updated; nothing else changes. A directory whose decoder already has it is left alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from enzh.runtime.errors import ExportError
from enzh.runtime.manifest import Manifest, describe_files

POSITION = "position"


def has_row_positions(model: onnx.ModelProto) -> bool:
    """Whether the decoder graph's ``position`` input takes one position per row (a symbolic first dimension)."""
    found = next((i for i in model.graph.input if i.name == POSITION), None)
    if found is None:
        raise ExportError("the decoder graph has no 'position' input: not an enzh decoder")
    dim = found.type.tensor_type.shape.dim[0]
    return not dim.HasField("dim_value")


def upgrade_decoder_graph(model: onnx.ModelProto) -> bool:
    """Rewrite ``model`` (an enzh decoder graph) to take ``position [R]``; False when it already does."""
    if has_row_positions(model):
        return False
    graph = model.graph
    # GroupQueryAttention's lengths: the one int32 Cast of position (the other uses look up position rows).
    casts = [
        n for n in graph.node if n.op_type == "Cast" and list(n.input) == [POSITION] and _to(n) == TensorProto.INT32
    ]
    lookups = [n for n in graph.node if POSITION in n.input and n not in casts]
    if len(casts) != 1 or not lookups:
        raise ExportError("the decoder graph's use of 'position' is not the one enzh exports; re-export the model")
    past_len = casts[0].output[0]
    totals = [n for n in graph.node if n.op_type == "Add" and past_len in n.input]
    if len(totals) != 1:
        raise ExportError("the decoder graph's total sequence length is not the one enzh exports; re-export it")
    shape = numpy_helper.from_array(np.asarray([-1, 1], dtype=np.int64), "position.column_shape")
    graph.initializer.append(shape)
    column = helper.make_node("Reshape", [POSITION, shape.name], ["position.column"], name="position_column")
    for node in lookups:
        node.input[:] = ["position.column" if name == POSITION else name for name in node.input]
    longest = helper.make_node("ReduceMax", [past_len], ["position.longest"], name="position_longest", keepdims=1)
    totals[0].input[:] = ["position.longest" if name == past_len else name for name in totals[0].input]
    nodes = list(graph.node)
    at = nodes.index(casts[0]) + 1
    nodes[at:at] = [longest]
    nodes.insert(0, column)
    del graph.node[:]
    graph.node.extend(nodes)
    item = next(i for i in graph.input if i.name == POSITION)
    item.type.tensor_type.elem_type = TensorProto.INT64
    dim = item.type.tensor_type.shape.dim[0]
    dim.ClearField("dim_value")
    dim.dim_param = "position_rows"
    return True


def _to(node: onnx.NodeProto) -> int:
    return next((int(a.i) for a in node.attribute if a.name == "to"), -1)


def upgrade_directory(directory: Path) -> bool:
    """Upgrade ``directory``'s decoder in place and refresh its manifest entry; False when there was nothing to do."""
    manifest = Manifest.load(directory)
    name = manifest.graphs["decoder"]
    path = directory / name
    model = onnx.load(str(path), load_external_data=False)  # the weights stay in weights.bin, untouched
    if not upgrade_decoder_graph(model):
        return False
    tmp = path.with_suffix(".onnx.tmp")
    tmp.write_bytes(model.SerializeToString())
    tmp.replace(path)
    manifest.files[name] = describe_files(directory, [name])[name]
    manifest.save(directory)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m enzh.export.upgrade", description=__doc__.split("\n")[0])
    parser.add_argument("directories", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for directory in args.directories:
        changed = upgrade_directory(directory)
        print(f"{directory}: {'upgraded' if changed else 'already takes one position per row'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
