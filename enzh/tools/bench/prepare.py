"""Every model a run needs, built once into the cache: the shaped HF model, enzh's exports and quantized
variants, CTranslate2's conversions; and the groups of cases with the directory each engine loads."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from enzh.demo import HF_MODEL_DIR
from enzh.runtime.default_model import DEMO_TEST_SET
from enzh.tools.bench.cases import fixed_sources, forced_target, hf_vocab, make_cases, natural_sources, natural_texts
from enzh.tools.bench.engines import ct2_vocabulary
from enzh.tools.bench.settings import (
    ENGINE_BY_ID,
    FIXED_GROUPS,
    NLLB_ENGINES,
    NLLB_SHAPED_NAME,
    SHAPED_NAME,
    BenchError,
    BenchSettings,
    Engine,
    ModelGroup,
    log,
)

ENZH_DIR = Path(__file__).resolve().parents[2]
# The packages whose code writes an exported or quantized directory: a change rebuilds the cached variants.
EXPORTING_PACKAGES = ("export", "quantize", "runtime")


def default_cache_dir() -> Path:
    """$ENZH_CACHE/bench, else $XDG_CACHE_HOME/enzh/bench, else ~/.cache/enzh/bench."""
    if os.environ.get("ENZH_CACHE"):
        return Path(os.environ["ENZH_CACHE"]) / "bench"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "enzh" / "bench"


def code_fingerprint() -> str:
    """Hash of the modules of :data:`EXPORTING_PACKAGES`: an exported graph is rebuilt whenever they change."""
    digest = hashlib.sha256()
    for package in EXPORTING_PACKAGES:
        for path in sorted((ENZH_DIR / package).rglob("*.py")):
            digest.update(path.relative_to(ENZH_DIR).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _dir_fingerprint(directory: Path) -> str:
    digest = hashlib.sha256(str(directory.resolve()).encode())
    for path in sorted(directory.iterdir()):
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """Run ``build(tmp)`` and rename tmp to ``target``, unless ``target`` exists (a complete earlier build)."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        build(tmp)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_size(engine: Engine, directory: Path) -> int:
    """Bytes of what the engine loads: the enzh directory, the HF weights, or CTranslate2's model."""
    if engine.kind == "torch":
        return sum(p.stat().st_size for p in directory.iterdir() if p.suffix in (".safetensors", ".bin"))
    if directory.is_file():
        return directory.stat().st_size
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


# -- one engine's directory ------------------------------------------------------------------------------------


# The source-aware engine's table: this many frequent pieces, and this many per source piece (seeded random ids).
SOURCE_FREQUENT = 1000
SOURCE_PER_SOURCE = 20


def _source_shortlist_settings(fp32: Path, hf_dir: Path) -> dict[str, Any]:
    """quantize() keywords for the source-aware engine. The demo model: the table counted on its training
    corpus (its defaults). Any other model: a seeded random table of the shape of a counted one
    (:data:`SOURCE_FREQUENT` frequent pieces, :data:`SOURCE_PER_SOURCE` per ordinary source piece), written
    next to the fp32 export. Random, not counted on the demo corpus: the fixed cases' sources are random ids
    over the whole vocabulary, almost none of which a demo-corpus table has a row for, so every batch would
    score only the frequent pieces. With this table a batch scores what a counted table gives a batch of that
    many distinct pieces (batch 1: ~1,400; batch 16: ~7,800 of 65,001); the quality of counted tables on the
    trained demo model: docs/shortlist.md."""
    import numpy as np

    from enzh.runtime.candidates import LexicalTable
    from enzh.runtime.manifest import Manifest

    if hf_dir.resolve() == HF_MODEL_DIR.resolve():
        return {"source_shortlist": _demo_corpus(fp32.parent / "demo-train.tsv")}
    manifest = Manifest.load(fp32)
    sources, vocab = (int(manifest.architecture[k]) for k in ("source_vocab_size", "target_vocab_size"))
    special = manifest.special_ids
    rng = np.random.default_rng(0)
    ordinary = np.setdiff1d(np.arange(vocab), [special["pad"], special["eos"], special["unk"]])
    frequent = np.sort(rng.choice(ordinary, SOURCE_FREQUENT, replace=False))
    rows = [np.sort(rng.choice(ordinary, SOURCE_PER_SOURCE, replace=False)) for _ in range(sources)]
    table = LexicalTable(
        offsets=np.arange(sources + 1) * SOURCE_PER_SOURCE, targets=np.concatenate(rows), frequent=frequent
    )
    path = fp32.parent / f"source-shortlist-{SOURCE_FREQUENT}-{SOURCE_PER_SOURCE}.bin"
    _write_once(path, table.to_bytes)
    return {"source_shortlist": path}


def _demo_corpus(path: Path) -> Path:
    """The demo model's training pairs as a TSV (enzh.demo.train: its steps x batch size, its corpus seed)."""
    from enzh.demo.train import training_pairs

    def pairs() -> bytes:
        return "".join(f"{en}\t{zh}\n" for en, zh in training_pairs()).encode("utf-8")

    _write_once(path, pairs)
    return path


def _write_once(path: Path, data: Callable[[], bytes]) -> None:
    """Write ``data()`` to ``path`` unless it exists (through a temporary file: never a partial one)."""
    if path.is_file():
        return
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data())
    tmp.replace(path)


def _shortlist_settings(fp32: Path, engine: Engine, hf_dir: Path) -> dict[str, Any]:
    """quantize() keywords for an engine's shortlist: seeded random token ids. The benchmark times it on the
    random-weight shaped model, where only the shortlist's size matters (its quality cost on a trained model:
    docs/precision.md)."""
    if engine.source_shortlist:
        return _source_shortlist_settings(fp32, hf_dir)
    if not engine.shortlist:
        return {}
    import numpy as np

    from enzh.runtime.manifest import Manifest

    manifest = Manifest.load(fp32)
    vocab = int(manifest.architecture["target_vocab_size"])
    if vocab <= 2 * engine.shortlist:
        raise BenchError(
            f"the model's {vocab:,}-token vocabulary is too small for a {engine.shortlist:,}-token shortlist"
        )
    candidates = np.setdiff1d(np.arange(vocab), [manifest.special_ids["pad"]])
    ids = np.random.default_rng(0).choice(candidates, engine.shortlist, replace=False)
    return {"shortlist_ids": sorted(int(i) for i in ids)}


def _export_fp32(hf_dir: Path, enzh_root: Path) -> Path:
    from enzh.export.pipeline import ExportOptions, export

    def do_export(tmp: Path) -> None:
        log(f"exporting {hf_dir} (fp32) ...")
        export(str(hf_dir), tmp, ExportOptions(force=True, validate=False, progress=False))

    return build_once(enzh_root / "fp32", do_export)


def _quantized(hf_dir: Path, fp32: Path, enzh_root: Path, engine: Engine, extra: dict[str, Any]) -> Path:
    from enzh.quantize.pipeline import quantize

    def do_quantize(tmp: Path) -> None:
        log(f"quantizing {hf_dir.name} -> {engine.label} ...")
        quantize(fp32, tmp, precision=engine.precision, force=True, **extra)

    name = engine.precision + (f"-shortlist{engine.shortlist}" if engine.shortlist else "")
    name += "-source-shortlist" if engine.source_shortlist else ""
    return build_once(enzh_root / name, do_quantize)


def _ct2_converted(hf_dir: Path, root: Path, precision: str) -> Path:
    from importlib import metadata

    def do_convert(tmp: Path) -> None:
        from ctranslate2.converters import TransformersConverter

        log(f"converting {hf_dir.name} with CTranslate2 ({precision}) ...")
        TransformersConverter(str(hf_dir)).convert(str(tmp), quantization=precision, force=True)

    return build_once(root / f"ct2-{metadata.version('ctranslate2')}" / precision, do_convert)


def _prepare_engine(engine: Engine, hf_dir: Path, root: Path, fp32: Path | None, enzh_root: Path) -> Path | str:
    """The directory ``engine`` loads, or why it cannot run (``fp32``: the enzh export, None if it failed)."""
    if engine.kind == "enzh":
        if fp32 is None or engine.precision == "fp32":
            return fp32 or "export failed"
        try:
            import enzh.quantize.pipeline  # noqa: F401
        except ImportError as exc:
            return f"enzh.quantize.pipeline is not available ({exc})"
        try:
            extra = _shortlist_settings(fp32, engine, hf_dir)
        except BenchError as exc:
            return str(exc)
        try:
            return _quantized(hf_dir, fp32, enzh_root, engine, extra)
        except Exception as exc:
            return f"quantize failed: {type(exc).__name__}: {exc}"
    if engine.kind == "torch":
        if importlib.util.find_spec("torch") and importlib.util.find_spec("transformers"):
            return hf_dir
        return "torch and transformers are not installed (pip install 'enzh-onnx[export]')"
    if not importlib.util.find_spec("ctranslate2"):
        return "ctranslate2 is not installed (pip install 'enzh-onnx[bench]')"
    try:
        directory = _ct2_converted(hf_dir, root, engine.precision)
    except Exception as exc:
        return f"CTranslate2 conversion failed: {type(exc).__name__}: {exc}"
    try:
        _check_ct2_vocabulary(hf_dir, directory)
    except BenchError as exc:
        return str(exc)
    return directory


def _check_ct2_vocabulary(hf_dir: Path, directory: Path) -> None:
    """CTranslate2 must see the same ids: its vocabulary has to list the HF tokens (vocab.json's, or
    tokenizer.json's) in id order; after the tokenizer's last id only an NLLB model's filler may follow
    (CTranslate2's "madeupword" tokens up to the model's vocab_size, ids no tokenizer produces)."""
    by_id = {i: t for t, i in hf_vocab(hf_dir)[0].items()}
    top = max(by_id)
    mine = ct2_vocabulary(directory)
    bad = [i for i, t in enumerate(mine) if i <= top and by_id.get(i) != t]
    if bad:
        raise BenchError(f"CTranslate2 vocabulary of {directory} differs from {hf_dir}'s tokenizer at ids {bad[:5]}")


def prepare_engines(
    hf_dir: Path, root: Path, engine_ids: Sequence[str], code_key: str
) -> tuple[dict[str, Path], dict[str, str]]:
    """Export / quantize / convert ``hf_dir`` for every wanted engine into ``root`` (cached):
    (engine id -> directory it loads, engine id -> why it does not run)."""
    wanted = [ENGINE_BY_ID[e] for e in engine_ids]
    enzh_root = root / f"enzh-{code_key}"
    fp32: Path | None = None
    export_failure = None
    if any(e.kind == "enzh" for e in wanted):
        try:
            fp32 = _export_fp32(hf_dir, enzh_root)
        except Exception as exc:
            export_failure = f"export failed: {type(exc).__name__}: {exc}"
    dirs: dict[str, Path] = {}
    unavailable: dict[str, str] = {}
    for engine in wanted:
        if engine.kind == "enzh" and export_failure is not None:
            unavailable[engine.id] = export_failure
            continue
        prepared = _prepare_engine(engine, hf_dir, root, fp32, enzh_root)
        if isinstance(prepared, Path):
            dirs[engine.id] = prepared
        else:
            unavailable[engine.id] = prepared
    return dirs, unavailable


# -- the groups ------------------------------------------------------------------------------------------------


def _shaped_model(settings: BenchSettings, cache_dir: Path, shaped_config: Path | None) -> tuple[Path, str]:
    """The opus-mt-en-zh-shaped HF directory (built once per seed and config) and its cache key."""
    from enzh.tools.models import OPUS_MT_EN_ZH_CONFIG, OPUS_MT_EN_ZH_GENERATION, build_shaped_model

    config_key = hashlib.sha256(
        json.dumps([OPUS_MT_EN_ZH_CONFIG, OPUS_MT_EN_ZH_GENERATION, str(shaped_config)]).encode()
    ).hexdigest()[:8]
    key = f"opus-mt-en-zh-shaped-seed{settings.seed}-{config_key}"

    def build(tmp: Path) -> None:
        log("building the opus-mt-en-zh-shaped model (first run only) ...")
        build_shaped_model(tmp, seed=settings.seed, config_dir=shaped_config)

    return build_once(cache_dir / key / "hf", build), key


def _nllb_model(settings: BenchSettings, cache_dir: Path) -> tuple[Path, str]:
    """The nllb-200-distilled-600M-shaped HF directory (built once per seed and config) and its cache key."""
    from enzh.tools.models import NLLB_200_DISTILLED_600M_CONFIG, NLLB_200_GENERATION, build_nllb_shaped

    config_key = hashlib.sha256(json.dumps([NLLB_200_DISTILLED_600M_CONFIG, NLLB_200_GENERATION]).encode()).hexdigest()
    key = f"{NLLB_SHAPED_NAME}-seed{settings.seed}-{config_key[:8]}"

    def build(tmp: Path) -> None:
        log("building the nllb-200-distilled-600M-shaped model (first run only; 2.5 GB) ...")
        build_nllb_shaped(tmp, seed=settings.seed)

    return build_once(cache_dir / key / "hf", build), key


def _group_model(
    group: str, settings: BenchSettings, cache_dir: Path, fixed_model: Path | None, shaped_config: Path | None
) -> tuple[Path, str, str, str]:
    """(HF directory, name, description, cache key) of the model a group runs on."""
    if group == "nllb":
        hf_dir, key = _nllb_model(settings, cache_dir)
        description = (
            "nllb-200-distilled-600M's exact config (M2M100ForConditionalGeneration: 12+12 layers, d_model 1024, "
            "16 heads, ffn 4,096, 256,206 tokens, tied embeddings), seeded random weights, a tiny NLLB tokenizer"
        )
        return hf_dir, NLLB_SHAPED_NAME, description, key
    if group != "fixed" or settings.quick:
        description = (
            "the embedded demo model (assets/demo-hf, shipped exported: 3+3 layers, d_model 256, 1,834 tokens)"
        )
        return HF_MODEL_DIR, "demo", description, f"demo-{_dir_fingerprint(HF_MODEL_DIR)}"
    if fixed_model is not None:
        return fixed_model, fixed_model.name, f"{fixed_model}", f"model-{_dir_fingerprint(fixed_model)}"
    hf_dir, key = _shaped_model(settings, cache_dir, shaped_config)
    description = "opus-mt-en-zh's exact config (6+6 layers, d_model 512, 65,001 tokens), seeded random weights"
    return hf_dir, SHAPED_NAME, description, key


def prepare_groups(
    settings: BenchSettings, cache_dir: Path, fixed_model: Path | None, shaped_config: Path | None
) -> list[ModelGroup]:
    """Each group's model, every engine's directory for it (or why not), and its cases."""
    groups = []
    code_key = code_fingerprint()  # once: other groups must not re-export if enzh changes during the run
    for group in settings.groups:
        hf_dir, name, description, key = _group_model(group, settings, cache_dir, fixed_model, shaped_config)
        engines = [e for e in settings.engines if group != "nllb" or e in NLLB_ENGINES]
        dirs, unavailable = prepare_engines(hf_dir, cache_dir / key, engines, code_key)
        for engine in settings.engines:
            if engine not in engines:
                unavailable[engine] = "not run on the NLLB stand-in (it compares enzh fp32 and int8)"
        if group in FIXED_GROUPS:
            sources = fixed_sources(hf_dir, max(settings.batch_sizes), settings.source_tokens, settings.seed)
            texts = None
        else:
            texts = natural_texts(DEMO_TEST_SET, settings.natural_sentences)
            sources = natural_sources(hf_dir, texts)
        cases = make_cases(group, sources, settings, forced_target(hf_dir), texts)
        groups.append(ModelGroup(group, name, description, hf_dir, dirs, unavailable, cases))
    return groups
