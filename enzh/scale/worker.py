"""What every Ray Data worker runs: :class:`ShardTranslator` loads the model once per actor, then translates one
shard per call with the same code as the in-process run (parse, :class:`~enzh.documents.sentences.SentenceEngine`,
render), so a shard's output is the bytes the in-process run writes for those units.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any

from enzh.documents.api import parse, render
from enzh.documents.options import DocumentOptions
from enzh.documents.sentences import CHUNK, SentenceEngine
from enzh.scale.errors import ScaleError

if TYPE_CHECKING:
    from enzh.runtime.engine import Engine


def translate_shard(
    translator: Engine, options: DocumentOptions, data: bytes, header: bytes = b""
) -> tuple[bytes, int]:
    """The translated shard (without ``header``, which is put in front for the translation only) and how many
    sentences went to the model."""
    engine = SentenceEngine(translator, options, chunk=CHUNK)
    result = render(parse(header + data, options), engine, options)
    output = result if isinstance(result, bytes) else result.encode("utf-8")
    if header:
        if not output.startswith(header):
            raise ScaleError("a shard's header line did not come back unchanged; translate this file without --ray")
        output = output[len(header) :]
    return output, engine.translated


class ShardTranslator:
    """The stateful class of ``map_batches``: one model per worker actor; a batch is one or more shards.

    ``model_dir`` None: the embedded demo model of the worker's own installation; else a directory that every
    node has at that path. ``threads``: ONNX Runtime intra-op threads (the CPUs Ray reserved for the actor)."""

    def __init__(self, model_dir: str | None, options: DocumentOptions, threads: int) -> None:
        from enzh.runtime.translator import Translator

        self.translator = Translator.load(model_dir, intra_op_threads=threads)
        self.options = options
        self.name = f"{socket.gethostname()}:{os.getpid()}"

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        outputs: list[bytes] = []
        sentences: list[int] = []
        for data, header in zip(batch["data"], batch["header"], strict=True):
            output, count = translate_shard(self.translator, self.options, bytes(data), bytes(header))
            outputs.append(output)
            sentences.append(count)
        shards = [int(index) for index in batch["shard"]]
        return {"shard": shards, "output": outputs, "sentences": sentences, "worker": [self.name] * len(shards)}
