"""ONNX Runtime sessions for an exported model directory, and the incremental decoder over them."""

from __future__ import annotations

import logging
import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from enzh.manifest import Manifest, ModelDirError
from enzh.options import RuntimeOptions

logger = logging.getLogger("enzh")


def session_options(options: RuntimeOptions) -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.intra_op_num_threads = options.intra_op_threads
    so.inter_op_num_threads = options.inter_op_threads
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return so


def _create(path: Path, options: RuntimeOptions, shared: dict[str, ort.OrtValue]) -> ort.InferenceSession:
    available = ort.get_available_providers()
    missing = [p for p in options.providers if p not in available]
    if missing:
        raise ValueError(
            f"ONNX Runtime execution provider(s) {missing} are not available here; available: {available}. "
            "Install the matching onnxruntime package or pick an available provider."
        )
    try:
        so = session_options(options)
        for name, value in shared.items():
            so.add_initializer(name, value)
        return ort.InferenceSession(str(path), sess_options=so, providers=list(options.providers))
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelDirError(f"ONNX Runtime could not load {path}: {exc}") from exc


@dataclass
class EncoderOutput:
    """What the encoder graph returns for one batch: the decoder's attention bias and cross keys/values."""

    cross_bias: np.ndarray
    cross: list[np.ndarray]  # per decoder layer: key, value, key, value, ...


def shared_weights(directory: Path, manifest: Manifest) -> dict[str, np.ndarray]:
    """Memory-map the weights named in manifest.shared_initializers from the external-data file."""
    if not manifest.shared_initializers:
        return {}
    result: dict[str, np.ndarray] = {}
    for name, info in manifest.shared_initializers.items():
        result[name] = np.memmap(
            directory / info["file"],
            dtype=np.dtype(info["dtype"]),
            mode="r",
            offset=int(info["offset"]),
            shape=tuple(info["shape"]),
        )
    return result


class ModelSessions:
    """The encoder and decoder sessions of one model directory."""

    def __init__(self, directory: Path, manifest: Manifest, options: RuntimeOptions) -> None:
        self.directory = directory
        self.manifest = manifest
        # Weights used by both graphs (the embedding shared by encoder, decoder and output projection) are
        # mapped from weights.bin once and handed to both sessions, so they exist once in memory.
        self._shared = shared_weights(directory, manifest)
        values = {name: ort.OrtValue.ortvalue_from_numpy(array) for name, array in self._shared.items()}
        self.encoder = _create(directory / manifest.graphs["encoder"], options, values)
        self.decoder = _create(directory / manifest.graphs["decoder"], options, values)
        # Weight pre-packing read every page of the mapping while building its packed copy; drop those pages
        # again so only rows the embedding lookup really touches stay resident.
        for array in self._shared.values():
            if isinstance(array, np.memmap) and hasattr(mmap, "MADV_DONTNEED"):
                array._mmap.madvise(mmap.MADV_DONTNEED)  # type: ignore[attr-defined]
        arch = manifest.architecture
        self.layers = int(arch["decoder_layers"])
        self.heads = int(arch["decoder_heads"])
        self.head_dim = int(arch["d_model"]) // self.heads
        self._cross_names = [n for i in range(self.layers) for n in (f"cross_key_{i}", f"cross_value_{i}")]
        self._past_names = [n for i in range(self.layers) for n in (f"past_key_{i}", f"past_value_{i}")]
        self._outputs = ["logits"] + [n for i in range(self.layers) for n in (f"present_key_{i}", f"present_value_{i}")]

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> EncoderOutput:
        outputs = self.encoder.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})
        return EncoderOutput(cross_bias=outputs[0], cross=list(outputs[1:]))

    def decoder_for(self, encoded: EncoderOutput) -> OrtDecoder:
        return OrtDecoder(self, encoded)


class OrtDecoder:
    """A running batch of decoder rows (implements :class:`enzh.decoding.IncrementalDecoder`)."""

    def __init__(self, sessions: ModelSessions, encoded: EncoderOutput) -> None:
        self.s = sessions
        rows = encoded.cross_bias.shape[0]
        self.cross_bias = encoded.cross_bias
        self.cross = list(encoded.cross)
        empty = np.zeros((rows, sessions.heads, 0, sessions.head_dim), dtype=np.float32)
        self.past = [empty] * (2 * sessions.layers)
        self.position = 0

    @property
    def rows(self) -> int:
        return int(self.cross_bias.shape[0])

    def step(self, tokens: np.ndarray) -> np.ndarray:
        feeds: dict[str, np.ndarray] = {
            "input_ids": np.ascontiguousarray(tokens, dtype=np.int64).reshape(-1, 1),
            "position": np.array([self.position], dtype=np.int64),
            "cross_bias": self.cross_bias,
        }
        feeds.update(zip(self.s._cross_names, self.cross, strict=True))
        feeds.update(zip(self.s._past_names, self.past, strict=True))
        logits, *present = self.s.decoder.run(self.s._outputs, feeds)
        self.past = present
        self.position += 1
        return logits

    def reorder(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        self.cross_bias = self.cross_bias[rows]
        self.cross = [a[rows] for a in self.cross]
        self.past = [a[rows] for a in self.past]
