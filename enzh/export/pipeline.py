"""Export a HuggingFace Marian model (local directory or hub id) into an enzh model directory.

Needs the ``[export]`` extra (torch, transformers, onnx). The steps:

1. resolve SOURCE to a local snapshot (hub download when it is not a directory);
2. load ``MarianMTModel`` and read its weights once, de-duplicating tensors shared by several modules;
3. build ``encoder.onnx``, ``decoder.onnx`` and the optional ``aligner.onnx`` (see :mod:`enzh.export.graph`) over
   one ``weights.bin``;
4. copy the tokenizer files and write ``manifest.json`` with hashes, ids and generation defaults;
5. validate the files numerically against the PyTorch model (:mod:`enzh.export.validate`); fail loudly if off.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from enzh.export.graph import (
    WEIGHTS_FILE,
    AlignerSettings,
    MarianArch,
    WeightStore,
    build_aligner,
    build_decoder,
    build_encoder,
    pad_self_attention,
    shared_initializers,
)
from enzh.export.marian import architecture, collect_weights, generation_defaults
from enzh.export.source import check_tokenizer_files, load_model, resolve_source, separate_vocabs
from enzh.export.versions import package_versions
from enzh.runtime.adapter import LANGUAGE_TOKEN, default_language_token
from enzh.runtime.errors import ExportError
from enzh.runtime.manifest import MANIFEST, Manifest, describe_files
from enzh.runtime.progress import progress_steps

logger = logging.getLogger("enzh")

VOCAB_FILE = "vocab.json.gz"  # the vocabulary as compact gzipped JSON: 65k pieces take 0.5 MB instead of 1.6 MB
TARGET_VOCAB_FILE = "target_vocab.json.gz"  # separate vocabularies only: the target side's own table
OPTIONAL_FILES = ("tokenizer_config.json", "README.md")
ALIGNER_FILE = "aligner.onnx"
DEFAULT_ALIGNER = AlignerSettings()  # every decoder layer and head (docs/html.md)


@dataclass(frozen=True, kw_only=True)
class ExportOptions:
    force: bool = False
    revision: str | None = None
    default_target: str | None = None
    validate: bool = True
    atol: float = 1e-4
    progress: bool = True
    # Recorded in manifest.json as the source id instead of the resolved directory or hub id.
    source_id: str | None = None
    # The alignment graph (cross-attention of the chosen layers and heads) used to place inline tags in
    # documents; None writes no aligner.onnx.
    aligner: AlignerSettings | None = DEFAULT_ALIGNER


def _write_vocab(path: Path, vocab: dict[str, int]) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
        packed.write(json.dumps(vocab, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _write_aligner(
    out_dir: Path, arch: MarianArch, store: WeightStore, embed: str, settings: AlignerSettings | None
) -> dict[str, Any]:
    """Write aligner.onnx with ``settings`` (nothing for None); returns ``manifest.alignment`` ({} without it)."""
    import onnx

    if settings is None:
        return {}
    onnx.save(build_aligner(arch, store, embed, settings), out_dir / ALIGNER_FILE)
    return settings.record(arch)


def prepare_out_dir(out_dir: Path, force: bool, error: type[Exception] = ExportError) -> None:
    """Create OUT_DIR, refusing a file or a non-empty directory unless ``force`` (then it is emptied)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise error(f"OUT_DIR {out_dir} exists and is a file; choose a directory path")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not force:
            raise error(f"OUT_DIR {out_dir} is not empty; pass --force (force=True) to overwrite it")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)


def export(source: str, out_dir: str | Path, options: ExportOptions | None = None) -> Manifest:
    """Export SOURCE (a local HF Marian directory or a hub id) into OUT_DIR and validate it."""
    import onnx

    options = options or ExportOptions()
    out_dir = Path(out_dir)
    prepare_out_dir(out_dir, options.force)
    steps = ["load model", "collect weights", "build graphs", "write files", "validate"]
    with progress_steps(steps, enabled=options.progress, desc="export") as step:
        step("load model")
        local, source_id, revision = resolve_source(source, options.revision)
        separate = separate_vocabs(local)
        check_tokenizer_files(local, separate)
        model = load_model(local)
        config = model.config
        arch = architecture(config)

        step("collect weights")
        store = WeightStore()
        enc_embed, dec_embed, head = collect_weights(model, arch, store)
        pad_self_attention(arch, store)

        step("build graphs")
        store.write(out_dir / WEIGHTS_FILE)
        encoder = build_encoder(arch, store, enc_embed)
        decoder = build_decoder(arch, store, dec_embed, head)
        onnx.save(encoder, out_dir / "encoder.onnx")
        onnx.save(decoder, out_dir / "decoder.onnx")
        alignment = _write_aligner(out_dir, arch, store, dec_embed, options.aligner)
        aligner_files, aligner_graph = ([ALIGNER_FILE], {"aligner": ALIGNER_FILE}) if alignment else ([], {})

        step("write files")
        vocab, tokenizer, vocab_files = _write_tokenizer_files(local, out_dir, separate)
        # Weights both graphs read: the runtime maps them once and hands them to both sessions.
        shared = shared_initializers(encoder, decoder, store)
        files = ["encoder.onnx", "decoder.onnx", *aligner_files, WEIGHTS_FILE, "source.spm", "target.spm", *vocab_files]
        manifest = Manifest(
            model_type="marian",
            precision="fp32",
            source={"id": options.source_id or source_id, "revision": revision},
            files=describe_files(out_dir, files),
            graphs={"encoder": "encoder.onnx", "decoder": "decoder.onnx", "weights": WEIGHTS_FILE, **aligner_graph},
            architecture=_architecture_record(arch, model),
            special_ids={
                "decoder_start": int(config.decoder_start_token_id),
                "eos": int(config.eos_token_id),
                "pad": int(config.pad_token_id),
                "unk": int(vocab.get("<unk>", 1)),
            },
            languages=_languages(vocab, options.default_target),
            max_positions=arch.max_positions,
            generation=generation_defaults(model, int(config.pad_token_id)),
            tokenizer=tokenizer,
            exporter=package_versions(),
            shared_initializers=shared,
            alignment=alignment,
        )
        manifest.save(out_dir)

        step("validate")
        if options.validate:
            _validate(out_dir, model, options.atol)
    return manifest


def _write_tokenizer_files(
    local: Path, out_dir: Path, separate: bool
) -> tuple[dict[str, int], dict[str, str], list[str]]:
    """Copy the SentencePiece models (and the optional files), write the vocabularies as gzipped JSON.
    Returns (source vocabulary, the manifest's tokenizer record, the vocabulary files written)."""
    for name in ("source.spm", "target.spm", *OPTIONAL_FILES):
        if (local / name).is_file():
            shutil.copyfile(local / name, out_dir / name)
    vocab: dict[str, int] = json.loads((local / "vocab.json").read_text(encoding="utf-8"))
    _write_vocab(out_dir / VOCAB_FILE, vocab)
    vocab_files = [VOCAB_FILE]
    tokenizer = {"source_spm": "source.spm", "target_spm": "target.spm", "vocab": VOCAB_FILE}
    if separate:
        _write_vocab(out_dir / TARGET_VOCAB_FILE, json.loads((local / "target_vocab.json").read_text("utf-8")))
        vocab_files.append(TARGET_VOCAB_FILE)
        tokenizer["target_vocab"] = TARGET_VOCAB_FILE
    return vocab, tokenizer, vocab_files


def _languages(vocab: dict[str, int], default_target: str | None) -> dict[str, Any]:
    """The manifest's language record: the vocabulary's ``>>xx<<`` tokens and the default one."""
    languages = sorted((tok for tok in vocab if LANGUAGE_TOKEN.fullmatch(tok)), key=vocab.__getitem__)
    default = default_target or default_language_token(languages)
    if default is not None and default not in languages:
        raise ExportError(f"--default-target {default!r} is not a language token of this model; have: {languages}")
    return {"tokens": languages, "default": default}


def _architecture_record(arch: MarianArch, model: Any) -> dict[str, Any]:
    return {
        "d_model": arch.d_model,
        "encoder_layers": arch.encoder_layers,
        "decoder_layers": arch.decoder_layers,
        "encoder_heads": arch.encoder_heads,
        "decoder_heads": arch.decoder_heads,
        "activation": arch.activation,
        "source_vocab_size": arch.source_vocab_size,
        "target_vocab_size": arch.target_vocab_size,
        "parameters": int(sum(p.numel() for p in model.parameters())),
    }


def _validate(out_dir: Path, model: Any, atol: float) -> None:
    """The numeric check against PyTorch (float64 reference); raises with every output's errors if off."""
    from enzh.export.validate import check_numerics

    report = check_numerics(out_dir, model, atol=atol)
    logger.info("%s", report.format())
    if not report.ok:
        raise ExportError(
            f"the exported graphs differ from PyTorch beyond float32 noise:\n{report.format()}\n"
            f"The files are left in {out_dir} for inspection."
        )


__all__ = ["MANIFEST", "AlignerSettings", "ExportError", "ExportOptions", "export"]
