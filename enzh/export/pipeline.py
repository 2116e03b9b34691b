"""Export a HuggingFace translation model (local directory or hub id) into an enzh model directory.

Needs the ``[export]`` extra (torch, transformers, onnx). The steps:

1. resolve SOURCE to a local snapshot (hub download when it is not a directory) and pick its family's loader
   by config.json's ``model_type`` (:mod:`enzh.export.families`);
2. load the model and read its weights once, de-duplicating tensors shared by several modules;
3. build ``encoder.onnx``, ``decoder.onnx`` and the optional ``aligner.onnx`` (see :mod:`enzh.export.graph`) over
   one ``weights.bin``;
4. copy the tokenizer files and write ``manifest.json`` with hashes, ids and generation defaults;
5. validate the files numerically against the PyTorch model (:mod:`enzh.export.validate`); fail loudly if off.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from enzh.export.families import loader_for
from enzh.export.graph import (
    WEIGHTS_FILE,
    AlignerSettings,
    ModelArch,
    WeightStore,
    build_aligner,
    build_decoder,
    build_encoder,
    pad_self_attention,
    shared_initializers,
)
from enzh.export.source import resolve_source
from enzh.export.versions import package_versions
from enzh.runtime.errors import ExportError
from enzh.runtime.manifest import MANIFEST, Manifest, describe_files
from enzh.runtime.progress import progress_steps

logger = logging.getLogger("enzh")

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


def _write_aligner(
    out_dir: Path, arch: ModelArch, store: WeightStore, embed: str, settings: AlignerSettings | None
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
    """Export SOURCE (a local HF model directory or a hub id) into OUT_DIR and validate it."""
    import onnx

    options = options or ExportOptions()
    out_dir = Path(out_dir)
    prepare_out_dir(out_dir, options.force)
    steps = ["load model", "collect weights", "build graphs", "write files", "validate"]
    with progress_steps(steps, enabled=options.progress, desc="export") as step:
        step("load model")
        local, source_id, revision = resolve_source(source, options.revision)
        loader = loader_for(local)
        loader.check_files(local)
        model = loader.load_model(local)
        arch = loader.architecture(model.config)

        step("collect weights")
        store = WeightStore()
        enc_embed, dec_embed, head = loader.collect_weights(model, arch, store)
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
        tokenizer = loader.write_tokenizer(local, out_dir, model, options.default_target)
        _copy_optional_files(local, out_dir)
        # Weights both graphs read: the runtime maps them once and hands them to both sessions.
        shared = shared_initializers(encoder, decoder, store)
        files = ["encoder.onnx", "decoder.onnx", *aligner_files, WEIGHTS_FILE, *tokenizer.files]
        manifest = Manifest(
            model_type=loader.family,
            precision="fp32",
            source={"id": options.source_id or source_id, "revision": revision},
            files=describe_files(out_dir, files),
            graphs={"encoder": "encoder.onnx", "decoder": "decoder.onnx", "weights": WEIGHTS_FILE, **aligner_graph},
            architecture=_architecture_record(arch, model),
            special_ids=tokenizer.special_ids,
            languages=tokenizer.languages,
            max_positions=arch.max_positions,
            generation=loader.generation_defaults(model),
            tokenizer=tokenizer.record,
            exporter=package_versions(),
            shared_initializers=shared,
            alignment=alignment,
        )
        manifest.save(out_dir)

        step("validate")
        if options.validate:
            _validate(out_dir, model, options.atol)
    return manifest


def _copy_optional_files(local: Path, out_dir: Path) -> None:
    """The model's tokenizer config and card, kept for reference (not read by the runtime)."""
    for name in OPTIONAL_FILES:
        if (local / name).is_file() and not (out_dir / name).exists():
            shutil.copyfile(local / name, out_dir / name)


def _architecture_record(arch: ModelArch, model: Any) -> dict[str, Any]:
    # (the layout quirks are recorded only where they differ from Marian's, so Marian manifests stay as they were)
    quirks = {
        key: getattr(arch, key)
        for key in (
            "pre_norm",
            "final_norms",
            "embedding_norm",
            "position_offset",
            "decoder_positions",
            "pad_aware_positions",
            "pad_token_id",
        )
        if getattr(arch, key) != getattr(ModelArch, key, None)
    }
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
        **quirks,
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
