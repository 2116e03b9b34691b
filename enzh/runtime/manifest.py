"""manifest.json: the one file that tells the runtime everything about an exported model directory."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.errors import ModelDirError

MANIFEST = "manifest.json"
FORMAT = "enzh-model"
FORMAT_VERSION = 2  # 2: decoder with GroupQueryAttention cache, per-sentence cross keys/values, top-k output
PRECISIONS = ("fp32", "int8", "int4", "fp16")  # weights of a model directory (export/quantize --precision)
CACHES = ("float32", "float16")  # element type of the decoder's self-attention cache (--cache)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """Parsed manifest.json. Field names are the JSON keys."""

    model_type: str
    precision: str
    source: dict[str, Any]
    files: dict[str, dict[str, Any]]
    graphs: dict[str, str]
    architecture: dict[str, Any]
    special_ids: dict[str, int]
    languages: dict[str, Any]
    max_positions: int
    generation: dict[str, Any]
    tokenizer: dict[str, str]
    exporter: dict[str, str] = field(default_factory=dict)
    shared_initializers: dict[str, dict[str, Any]] = field(default_factory=dict)
    quantization: dict[str, Any] = field(default_factory=dict)
    # With an alignment graph (graphs["aligner"], optional: older directories have none): what it returns.
    alignment: dict[str, Any] = field(default_factory=dict)
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ModelDirError(f"manifest precision {self.precision!r} is not one of {', '.join(PRECISIONS)}")
        for key in ("decoder_start", "eos", "pad", "unk"):
            if key not in self.special_ids:
                raise ModelDirError(f"manifest special_ids lacks {key!r}; re-export the model with `enzh export`")
        aligner = self.graphs.get("aligner")
        if aligner is not None and aligner not in self.files:
            # its size and hash are checked like every other file's
            raise ModelDirError(f"manifest graphs names the aligner {aligner!r}, which its files do not list")

    @property
    def has_aligner(self) -> bool:
        """Whether the directory has the optional alignment graph (``enzh export`` writes it; directories exported
        before it existed have none, and still load)."""
        return "aligner" in self.graphs

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False, sort_keys=False) + "\n"

    def save(self, directory: Path) -> None:
        (Path(directory) / MANIFEST).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Manifest:
        directory = Path(directory)
        path = directory / MANIFEST
        if not directory.is_dir():
            raise ModelDirError(
                f"model directory {directory} does not exist; create one with `enzh export SOURCE {directory}`"
            )
        if not path.is_file():
            raise ModelDirError(
                f"{directory} has no {MANIFEST}, so it is not an enzh model directory; "
                f"create one with `enzh export SOURCE {directory}`"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ModelDirError(f"{path} is not valid JSON ({exc}); restore it or re-export the model") from exc
        if data.get("format") != FORMAT:
            raise ModelDirError(f"{path} is not an enzh manifest (format={data.get('format')!r}, expected {FORMAT!r})")
        if data.get("format_version") != FORMAT_VERSION:
            raise ModelDirError(
                f"{path} has format_version {data.get('format_version')!r}; this enzh reads version {FORMAT_VERSION}. "
                "Re-export the model with this version of enzh."
            )
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ModelDirError(f"{path} has unknown keys {sorted(unknown)}; accepted keys: {sorted(known)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ModelDirError(f"{path} is incomplete ({exc}); re-export the model") from exc

    def verify_files(self, directory: Path, *, check_hashes: bool = True) -> None:
        """Check every listed file exists with the recorded size and sha256; one error lists all problems."""
        problems = []
        for name, info in self.files.items():
            path = Path(directory) / name
            if not path.is_file():
                problems.append(f"{name}: missing")
            elif path.stat().st_size != info["size"]:
                problems.append(f"{name}: size {path.stat().st_size} bytes, manifest says {info['size']}")
            elif check_hashes and sha256_file(path) != info["sha256"]:
                problems.append(f"{name}: sha256 does not match the manifest (file changed or corrupted)")
        if problems:
            raise ModelDirError(
                f"model directory {directory} failed its integrity check:\n  "
                + "\n  ".join(problems)
                + "\nRe-export the model (or copy the directory again); pass verify_hashes=False only if you edited"
                " a file on purpose."
            )


def describe_files(directory: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    return {
        name: {"size": (directory / name).stat().st_size, "sha256": sha256_file(directory / name)} for name in names
    }


def map_stored(directory: Path, layout: dict[str, Any]) -> np.ndarray:
    """Memory-map (read-only) one tensor stored in a model directory from its layout record (``file``, ``dtype``,
    ``offset``, ``shape``): the records of ``shared_initializers`` and of a source shortlist's projection."""
    array: np.ndarray = np.memmap(
        directory / layout["file"],
        dtype=np.dtype(layout["dtype"]),
        mode="r",
        offset=int(layout["offset"]),
        shape=tuple(layout["shape"]),
    )
    return array
