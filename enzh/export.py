"""Export a HuggingFace Marian model (local directory or hub id) into an enzh model directory.

Needs the ``[export]`` extra (torch, transformers, onnx). The steps:

1. resolve SOURCE to a local snapshot (hub download when it is not a directory);
2. load ``MarianMTModel`` and read its weights once, de-duplicating tensors shared by several modules;
3. build ``encoder.onnx`` and ``decoder.onnx`` (see :mod:`enzh.graph`) over one ``weights.bin``;
4. copy the tokenizer files and write ``manifest.json`` with hashes, ids and generation defaults;
5. validate the files numerically against the PyTorch model (:mod:`enzh.validate`); fail loudly if off.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from enzh import __version__
from enzh.adapter import LANGUAGE_TOKEN, default_language_token
from enzh.graph import (
    WEIGHTS_FILE,
    MarianArch,
    WeightStore,
    build_decoder,
    build_encoder,
    pad_self_attention,
    sinusoidal_positions,
)
from enzh.manifest import MANIFEST, Manifest, describe_files
from enzh.progress import progress_steps

logger = logging.getLogger("enzh")

TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json")
VOCAB_FILE = "vocab.json.gz"  # the vocabulary as compact gzipped JSON: 65k pieces take 0.5 MB instead of 1.6 MB
TARGET_VOCAB_FILE = "target_vocab.json.gz"  # separate vocabularies only: the target side's own table
OPTIONAL_FILES = ("tokenizer_config.json", "README.md")
GENERATION_KEYS = (
    "num_beams",
    "max_length",
    "length_penalty",
    "early_stopping",
    "bad_words_ids",
    "renormalize_logits",
    "forced_eos_token_id",
    "no_repeat_ngram_size",
    "repetition_penalty",
    "min_length",
)


class ExportError(Exception):
    """The export could not be completed; the message says why and what to do."""


@dataclass(frozen=True, kw_only=True)
class ExportOptions:
    force: bool = False
    revision: str | None = None
    default_target: str | None = None
    validate: bool = True
    atol: float = 1e-4
    progress: bool = True


def resolve_source(source: str, revision: str | None = None) -> tuple[Path, str, str | None]:
    """Return (local directory, source id, revision) for a local model directory or a hub model id."""
    path = Path(source)
    if path.is_dir():
        return path, str(path.resolve()), revision
    if path.exists():
        raise ExportError(f"SOURCE {source} is a file; pass a HuggingFace model directory or a hub id")
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(
            source,
            revision=revision,
            allow_patterns=["*.json", "*.spm", "*.safetensors", "*.bin", "*.md"],
        )
    except Exception as exc:  # hub errors come in many types (offline, 404, auth)
        raise ExportError(
            f"could not fetch {source!r} from the HuggingFace hub ({type(exc).__name__}: {exc}). "
            "Check the model id and your network, or download the model elsewhere and pass its directory."
        ) from exc
    resolved = Path(local)
    return resolved, source, revision or resolved.name


def load_model(directory: Path) -> Any:
    from transformers import MarianMTModel

    try:
        model = MarianMTModel.from_pretrained(directory, dtype="float32")
    except Exception as exc:
        raise ExportError(
            f"could not load a MarianMTModel from {directory} ({type(exc).__name__}: {exc}). "
            "enzh exports Marian models (config model_type 'marian') such as Helsinki-NLP/opus-mt-en-zh."
        ) from exc
    model.eval()
    return model


def architecture(config: Any) -> MarianArch:
    # HF Marian is always post-norm with no embedding layer norm; refuse configs that claim otherwise.
    if getattr(config, "normalize_before", False):
        raise ExportError("config.normalize_before=True (pre-norm) is not what MarianMTModel computes; unsupported")
    target_vocab = config.vocab_size if config.share_encoder_decoder_embeddings else config.decoder_vocab_size
    return MarianArch(
        d_model=config.d_model,
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads,
        decoder_heads=config.decoder_attention_heads,
        activation=config.activation_function,
        scale_embedding=bool(config.scale_embedding),
        max_positions=config.max_position_embeddings,
        source_vocab_size=config.vocab_size,
        target_vocab_size=target_vocab,
    )


def collect_weights(model: Any, arch: MarianArch, store: WeightStore) -> tuple[str, str, str]:
    """Copy the model's weights into ``store`` under enzh names. Returns (encoder embed, decoder embed, lm head).

    Tensors that are the same (tied parameters or equal contents) are stored once.
    """

    def t(tensor: Any) -> np.ndarray:
        return tensor.detach().cpu().numpy().astype(np.float32, copy=False)

    def linear(prefix: str, modules: list[Any], scale: float = 1.0) -> None:
        # torch Linear keeps W as [out, in]; the graphs multiply x @ W, so store W^T, fused along outputs.
        store.add(f"{prefix}.w", np.concatenate([t(m.weight).T for m in modules], axis=1) * np.float32(scale))
        store.add(f"{prefix}.b", np.concatenate([t(m.bias) for m in modules]) * np.float32(scale))

    def norm(prefix: str, module: Any) -> None:
        store.add(f"{prefix}.g", t(module.weight))
        store.add(f"{prefix}.b", t(module.bias))

    def qkv(prefix: str, attn: Any) -> None:
        # One fused [d, 3d] projection; the attention scale head_dim**-0.5 is folded into its query part.
        linear(prefix, [attn.q_proj, attn.k_proj, attn.v_proj])
        store.arrays[f"{prefix}.w"][:, : arch.d_model] *= np.float32(attn.scaling)
        store.arrays[f"{prefix}.b"][: arch.d_model] *= np.float32(attn.scaling)

    base = model.model
    enc_embed = t(base.encoder.embed_tokens.weight)
    dec_embed = t(base.decoder.embed_tokens.weight)
    head = t(model.lm_head.weight)
    store.add("embed_tokens", enc_embed)
    dec_name = "embed_tokens" if np.array_equal(enc_embed, dec_embed) else store.add("decoder.embed_tokens", dec_embed)
    if np.array_equal(head, dec_embed):
        head_name = dec_name
    elif np.array_equal(head, enc_embed):
        head_name = "embed_tokens"
    else:
        head_name = store.add("lm_head", head)
    store.add("final_logits_bias", t(model.final_logits_bias).reshape(-1))
    positions = t(base.encoder.embed_positions.weight)
    expected = sinusoidal_positions(arch.max_positions, arch.d_model)
    if not np.allclose(positions, expected, atol=1e-5):
        raise ExportError("the model's position embeddings are not Marian's static sinusoids; unsupported model")
    store.add("positions", positions)

    for i, layer in enumerate(base.encoder.layers):
        qkv(f"encoder.{i}.qkv", layer.self_attn)
        a = layer.self_attn
        linear(f"encoder.{i}.out", [a.out_proj])
        norm(f"encoder.{i}.attn_ln", layer.self_attn_layer_norm)
        linear(f"encoder.{i}.fc1", [layer.fc1])
        linear(f"encoder.{i}.fc2", [layer.fc2])
        norm(f"encoder.{i}.ffn_ln", layer.final_layer_norm)
    for i, layer in enumerate(base.decoder.layers):
        a, c = layer.self_attn, layer.encoder_attn
        qkv(f"decoder.{i}.qkv", a)
        linear(f"decoder.{i}.out", [a.out_proj])
        norm(f"decoder.{i}.attn_ln", layer.self_attn_layer_norm)
        linear(f"decoder.{i}.cross_q", [c.q_proj], c.scaling)
        linear(f"decoder.{i}.cross_kv", [c.k_proj, c.v_proj])
        linear(f"decoder.{i}.cross_out", [c.out_proj])
        norm(f"decoder.{i}.cross_ln", layer.encoder_attn_layer_norm)
        linear(f"decoder.{i}.fc1", [layer.fc1])
        linear(f"decoder.{i}.fc2", [layer.fc2])
        norm(f"decoder.{i}.ffn_ln", layer.final_layer_norm)
    return "embed_tokens", dec_name, head_name


def generation_defaults(model: Any, pad_id: int) -> dict[str, Any]:
    gen = model.generation_config
    values = {key: getattr(gen, key, None) for key in GENERATION_KEYS}
    defaults = {
        "num_beams": 1,
        "length_penalty": 1.0,
        "early_stopping": False,
        "renormalize_logits": False,
        "no_repeat_ngram_size": 0,
        "repetition_penalty": 1.0,
        "min_length": 0,
    }
    for key, value in defaults.items():
        if values[key] is None:
            values[key] = value
    if values["max_length"] is None:
        values["max_length"] = model.config.max_position_embeddings
    # Pad is the decoder start token of Marian and must never be generated, even if generation_config forgets.
    bad = [list(seq) for seq in (values["bad_words_ids"] or [])]
    if [pad_id] not in bad:
        bad.append([pad_id])
    values["bad_words_ids"] = bad
    return values


def separate_vocabs(local: Path) -> bool:
    """Whether the model's tokenizer has separate source and target vocabularies (transformers'
    ``separate_vocabs`` in tokenizer_config.json: vocab.json for the source, target_vocab.json for the target)."""
    path = local / "tokenizer_config.json"
    if not path.is_file():
        return False
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path} is not valid JSON ({exc})") from exc
    return bool(config.get("separate_vocabs", False)) if isinstance(config, dict) else False


def _write_vocab(path: Path, vocab: dict[str, int]) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
        packed.write(json.dumps(vocab, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def package_versions() -> dict[str, str]:
    import onnx
    import torch
    import transformers

    versions = {
        "enzh": __version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
    }
    try:
        import onnxruntime

        versions["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    return versions


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
        needed = (*TOKENIZER_FILES, "target_vocab.json") if separate else TOKENIZER_FILES
        missing = [name for name in needed if not (local / name).is_file()]
        if missing:
            raise ExportError(
                f"{local} lacks tokenizer file(s) {', '.join(missing)}; a Marian model directory holds "
                f"{', '.join(needed)} next to config.json"
                + (" (its tokenizer_config.json sets separate_vocabs)" if separate else "")
            )
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

        step("write files")
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
        languages = sorted((tok for tok in vocab if LANGUAGE_TOKEN.fullmatch(tok)), key=vocab.__getitem__)
        default = options.default_target or default_language_token(languages)
        if default is not None and default not in languages:
            raise ExportError(f"--default-target {default!r} is not a language token of this model; have: {languages}")
        unk = vocab.get("<unk>", 1)
        # Weights both graphs read: the runtime maps them once and hands them to both sessions.
        in_both = [t.name for t in encoder.graph.initializer if t.name in {i.name for i in decoder.graph.initializer}]
        shared = {name: store.layout(name) for name in in_both if name in store.arrays}
        files = ["encoder.onnx", "decoder.onnx", WEIGHTS_FILE, "source.spm", "target.spm", *vocab_files]
        manifest = Manifest(
            model_type="marian",
            precision="fp32",
            source={"id": source_id, "revision": revision},
            files=describe_files(out_dir, files),
            graphs={"encoder": "encoder.onnx", "decoder": "decoder.onnx", "weights": WEIGHTS_FILE},
            architecture={
                "d_model": arch.d_model,
                "encoder_layers": arch.encoder_layers,
                "decoder_layers": arch.decoder_layers,
                "encoder_heads": arch.encoder_heads,
                "decoder_heads": arch.decoder_heads,
                "activation": arch.activation,
                "source_vocab_size": arch.source_vocab_size,
                "target_vocab_size": arch.target_vocab_size,
                "parameters": int(sum(p.numel() for p in model.parameters())),
            },
            special_ids={
                "decoder_start": int(config.decoder_start_token_id),
                "eos": int(config.eos_token_id),
                "pad": int(config.pad_token_id),
                "unk": int(unk),
            },
            languages={"tokens": languages, "default": default},
            max_positions=arch.max_positions,
            generation=generation_defaults(model, int(config.pad_token_id)),
            tokenizer=tokenizer,
            exporter=package_versions(),
            shared_initializers=shared,
        )
        manifest.save(out_dir)

        step("validate")
        if options.validate:
            from enzh.validate import check_numerics

            report = check_numerics(out_dir, model, atol=options.atol)
            logger.info("%s", report.format())
            if not report.ok:
                raise ExportError(
                    f"the exported graphs differ from PyTorch beyond atol={options.atol}:\n{report.format()}\n"
                    f"The files are left in {out_dir} for inspection."
                )
    return manifest


__all__ = ["MANIFEST", "ExportError", "ExportOptions", "export"]
