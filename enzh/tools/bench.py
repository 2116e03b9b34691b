"""``enzh bench``: enzh's precision variants against transformers (PyTorch) and CTranslate2, side by side.

One run measures every engine on the same source ids:

* **engines**: enzh fp32 / int8 / int4 (int8 and int4 derived with :func:`enzh.quantize.quantize`),
  ``transformers`` ``generate()`` on PyTorch fp32, and CTranslate2 float32 / int8 (converted from the same
  HuggingFace directory by ``ctranslate2.converters.TransformersConverter``) when ``ctranslate2`` is installed.
* **cases**: batch sizes x beam widths, in two groups. *fixed*: random source ids of one length and exactly
  N generated tokens per sentence (minimum = maximum new tokens) on the opus-mt-en-zh-shaped model (its exact
  config, seeded random weights, built once into the cache), so random weights compare fairly; every engine's
  output length is checked on every call. *natural*: the first sentences of the demo model's held-out test set,
  each engine stopping at eos.
* **per cell**: median and spread (min, max, quartiles) of the latency over the repeats, tokens/s, peak RSS,
  the latency ratio to CTranslate2 int8 and to PyTorch, and (natural cases) how many outputs equal PyTorch's.
* **per engine**: load time (process start to first translation), RSS after load, size on disk.

Each engine runs in a fresh subprocess (``python -m enzh.tools.bench --worker JOB OUT``) with the same number of
threads, so its load time and RSS are its own. Output: ``bench.json``, ``bench.md`` and ``bench.png``.

This module imports only the standard library at the top: the worker of one engine must not pay for
(or carry the memory of) another engine's imports.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from enzh.cli.common import positive_int  # (moves with the parser to enzh/cli/bench.py)
from enzh.demo import HF_MODEL_DIR
from enzh.runtime.default_model import DEMO_TEST_SET

SCHEMA = "enzh-bench/1"
PACKAGE_DIR = Path(__file__).resolve().parent
LANGUAGE_TOKEN = ">>cmn_Hans<<"
MIB = 1024 * 1024

# opus-mt-en-zh's config.json and generation_config.json (the fields that shape the model and its generation;
# the rest are MarianConfig defaults or training-only settings). --shaped-config DIR reads them from a directory.
OPUS_MT_EN_ZH_CONFIG: dict[str, Any] = {
    "activation_function": "swish",
    "d_model": 512,
    "decoder_attention_heads": 8,
    "decoder_ffn_dim": 2048,
    "decoder_layers": 6,
    "decoder_start_token_id": 65000,
    "decoder_vocab_size": 65001,
    "encoder_attention_heads": 8,
    "encoder_ffn_dim": 2048,
    "encoder_layers": 6,
    "eos_token_id": 0,
    "forced_eos_token_id": 0,
    "max_position_embeddings": 512,
    "normalize_before": False,
    "normalize_embedding": False,
    "pad_token_id": 65000,
    "scale_embedding": True,
    "share_encoder_decoder_embeddings": True,
    "static_position_embeddings": True,
    "vocab_size": 65001,
}
OPUS_MT_EN_ZH_GENERATION: dict[str, Any] = {
    "bad_words_ids": [[65000]],
    "bos_token_id": 0,
    "decoder_start_token_id": 65000,
    "eos_token_id": 0,
    "forced_eos_token_id": 0,
    "max_length": 512,
    "num_beams": 4,
    "pad_token_id": 65000,
    "renormalize_logits": True,
}


@dataclass(frozen=True)
class Engine:
    id: str
    label: str
    kind: str  # enzh | torch | ct2
    precision: str
    shortlist: int = 0  # enzh: quantized with a target-vocabulary shortlist of this many tokens


SHORTLIST = 8000
ENGINES: tuple[Engine, ...] = (
    Engine("enzh-fp32", "enzh fp32", "enzh", "fp32"),
    Engine("enzh-int8", "enzh int8", "enzh", "int8"),
    Engine("enzh-int4", "enzh int4", "enzh", "int4"),
    Engine("enzh-int8-shortlist", f"enzh int8, {SHORTLIST:,}-token shortlist", "enzh", "int8", SHORTLIST),
    Engine("torch-fp32", "transformers (PyTorch fp32)", "torch", "fp32"),
    Engine("ct2-float32", "CTranslate2 float32", "ct2", "float32"),
    Engine("ct2-int8", "CTranslate2 int8", "ct2", "int8"),
)
ENGINE_BY_ID = {e.id: e for e in ENGINES}
CT2_BASELINE = "ct2-int8"
TORCH_BASELINE = "torch-fp32"
GROUPS = ("fixed", "natural")


class BenchError(Exception):
    """The benchmark could not run; the message says why."""


class LengthError(AssertionError):
    """A fixed-length case produced a hypothesis of another length."""


@dataclass(frozen=True)
class BenchSettings:
    quick: bool = False
    threads: int = 2
    repeats: int = 5
    warmup: int = 1
    batch_sizes: tuple[int, ...] = (1, 16)
    beams: tuple[int, ...] = (1, 4)
    source_tokens: int = 24
    new_tokens: int = 32
    natural_sentences: int = 64
    natural_max_new_tokens: int = 128
    engines: tuple[str, ...] = tuple(e.id for e in ENGINES)
    groups: tuple[str, ...] = GROUPS
    isolate: str = "engine"  # engine: one process per engine and model; cell: one per engine and case
    rounds: int = 1  # sweeps over all engines; each cell pools the timed runs of every round
    seed: int = 0
    timeout_s: float = 3600.0

    @classmethod
    def quick_defaults(cls) -> BenchSettings:
        return cls(
            quick=True,
            repeats=2,
            batch_sizes=(1, 4),
            beams=(1, 2),
            source_tokens=12,
            new_tokens=8,
            natural_sentences=4,
            natural_max_new_tokens=32,
            timeout_s=300.0,
        )


@dataclass(frozen=True)
class Case:
    id: str
    group: str  # fixed | natural
    batch: int
    beams: int
    fixed: bool
    new_tokens: int  # fixed: exactly this many generated tokens; natural: the upper bound
    calls: tuple[tuple[tuple[int, ...], ...], ...]  # each call: one batch of source id lists (eos-terminated)

    @property
    def label(self) -> str:
        search = "greedy" if self.beams == 1 else f"beam {self.beams}"
        return f"batch {self.batch} {search}"

    def describe(self) -> dict[str, Any]:
        lengths = [len(s) for call in self.calls for s in call]
        return {
            "id": self.id,
            "group": self.group,
            "label": self.label,
            "batch": self.batch,
            "beams": self.beams,
            "fixed_length": self.fixed,
            "new_tokens": self.new_tokens,
            "calls": len(self.calls),
            "sentences": len(lengths),
            "source_tokens_min": min(lengths),
            "source_tokens_max": max(lengths),
        }


@dataclass(frozen=True)
class ModelGroup:
    """The model one group of cases runs on, and the directory every engine loads for it."""

    group: str
    name: str
    description: str
    hf_dir: Path
    dirs: dict[str, Path]  # engine id -> directory it loads
    unavailable: dict[str, str]  # engine id -> why it does not run
    cases: tuple[Case, ...]


# ---------------------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------------------


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _dir_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _model_size(engine: Engine, directory: Path) -> int:
    """Bytes of what the engine loads: the enzh directory, the HF weights, or CTranslate2's model."""
    if engine.kind == "torch":
        return sum(p.stat().st_size for p in directory.iterdir() if p.suffix in (".safetensors", ".bin"))
    return _dir_size(directory)


def _proc_status_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_mib() -> float | None:
    kib = _proc_status_kib("VmRSS")
    return None if kib is None else kib / 1024


def peak_rss_mib() -> float:
    """Peak resident set size of this process (VmHWM; ru_maxrss where /proc is missing)."""
    kib = _proc_status_kib("VmHWM")
    if kib is not None:
        return kib / 1024
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MIB if sys.platform == "darwin" else peak / 1024


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs); False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in ("enzh-onnx", "onnxruntime", "numpy", "torch", "transformers", "ctranslate2"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def describe_machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    memory = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "memory_bytes": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": _versions(),
        "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


# ---------------------------------------------------------------------------------------------------------
# preparing the models (parent process)
# ---------------------------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """$ENZH_CACHE/bench, else $XDG_CACHE_HOME/enzh/bench, else ~/.cache/enzh/bench."""
    if os.environ.get("ENZH_CACHE"):
        return Path(os.environ["ENZH_CACHE"]) / "bench"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "enzh" / "bench"


def _code_fingerprint() -> str:
    """Hash of enzh's modules: an exported graph is rebuilt whenever the code that writes it changes."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        if path.name in ("bench.py", "cli.py"):
            continue
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _dir_fingerprint(directory: Path) -> str:
    digest = hashlib.sha256(str(directory.resolve()).encode())
    for path in sorted(directory.iterdir()):
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def _build_once(target: Path, build: Callable[[Path], None]) -> Path:
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


def build_shaped_model(directory: Path, *, seed: int = 0, config_dir: Path | None = None) -> Path:
    """A MarianMTModel with opus-mt-en-zh's exact config and seeded random weights, saved with tokenizer files.

    The tokenizers are the demo model's SentencePiece models; vocab.json keeps the demo pieces at their ids,
    fills the ids up to 65,000 with synthetic entries and puts ``<pad>`` at 65,000 (the real layout).
    """
    import torch
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    if config_dir is not None:
        config = MarianConfig.from_pretrained(config_dir)
        generation = GenerationConfig.from_pretrained(config_dir)
    else:
        config = MarianConfig(**OPUS_MT_EN_ZH_CONFIG)
        generation = GenerationConfig(**OPUS_MT_EN_ZH_GENERATION)
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("source.spm", "target.spm", "tokenizer_config.json", "special_tokens_map.json"):
        if (HF_MODEL_DIR / name).is_file():
            shutil.copyfile(HF_MODEL_DIR / name, directory / name)
    demo_vocab: dict[str, int] = json.loads((HF_MODEL_DIR / "vocab.json").read_text(encoding="utf-8"))
    pieces = sorted((i, t) for t, i in demo_vocab.items() if t != "<pad>")
    vocab = {t: i for i, t in enumerate(t for _, t in pieces)}
    pad = int(config.pad_token_id or 0)
    filler = 0
    while len(vocab) < pad:
        vocab[f"▁filler{filler}"] = len(vocab)
        filler += 1
    vocab["<pad>"] = pad
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    torch.manual_seed(seed)
    model = MarianMTModel(config)
    model.generation_config = generation
    model.save_pretrained(directory)
    return directory


def _shortlist_settings(fp32: Path, engine: Engine) -> dict[str, Any]:
    """quantize() keywords for an engine's shortlist: seeded random token ids. The benchmark times it on the
    random-weight shaped model, where only the shortlist's size matters (its quality cost on a trained model:
    docs/precision.md)."""
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


def _prepare_engines(
    hf_dir: Path, root: Path, engine_ids: Sequence[str], code_key: str
) -> tuple[dict[str, Path], dict[str, str]]:
    """Export / quantize / convert ``hf_dir`` for every wanted engine into ``root`` (cached)."""
    import importlib.util

    dirs: dict[str, Path] = {}
    unavailable: dict[str, str] = {}
    wanted = [ENGINE_BY_ID[e] for e in engine_ids]
    enzh_root = root / f"enzh-{code_key}"
    fp32: Path | None = None
    if any(e.kind == "enzh" for e in wanted):
        from enzh.export.pipeline import ExportOptions, export

        def do_export(tmp: Path) -> None:
            _log(f"exporting {hf_dir} (fp32) ...")
            export(str(hf_dir), tmp, ExportOptions(force=True, validate=False, progress=False))

        try:
            fp32 = _build_once(enzh_root / "fp32", do_export)
        except Exception as exc:
            for e in wanted:
                if e.kind == "enzh":
                    unavailable[e.id] = f"export failed: {type(exc).__name__}: {exc}"
    for engine in wanted:
        if engine.id in unavailable:
            continue
        if engine.kind == "enzh" and fp32 is not None:
            if engine.precision == "fp32":
                dirs[engine.id] = fp32
                continue
            try:
                from enzh.quantize.pipeline import quantize
            except ImportError as exc:
                unavailable[engine.id] = f"enzh.quantize.pipeline is not available ({exc})"
                continue

            try:
                extra = _shortlist_settings(fp32, engine)
            except BenchError as exc:
                unavailable[engine.id] = str(exc)
                continue

            def do_quantize(tmp: Path, engine: Engine = engine, source: Path = fp32, extra: dict = extra) -> None:
                _log(f"quantizing {hf_dir.name} -> {engine.label} ...")
                quantize(source, tmp, precision=engine.precision, force=True, **extra)

            name = engine.precision + (f"-shortlist{engine.shortlist}" if engine.shortlist else "")
            try:
                dirs[engine.id] = _build_once(enzh_root / name, do_quantize)
            except Exception as exc:
                unavailable[engine.id] = f"quantize failed: {type(exc).__name__}: {exc}"
        elif engine.kind == "torch":
            if importlib.util.find_spec("torch") and importlib.util.find_spec("transformers"):
                dirs[engine.id] = hf_dir
            else:
                unavailable[engine.id] = "torch and transformers are not installed (pip install 'enzh-onnx[export]')"
        elif engine.kind == "ct2":
            if not importlib.util.find_spec("ctranslate2"):
                unavailable[engine.id] = "ctranslate2 is not installed (pip install 'enzh-onnx[bench]')"
                continue
            from importlib import metadata

            ct2_root = root / f"ct2-{metadata.version('ctranslate2')}"

            def do_convert(tmp: Path, precision: str = engine.precision) -> None:
                from ctranslate2.converters import TransformersConverter

                _log(f"converting {hf_dir.name} with CTranslate2 ({precision}) ...")
                TransformersConverter(str(hf_dir)).convert(str(tmp), quantization=precision, force=True)

            try:
                dirs[engine.id] = _build_once(ct2_root / engine.precision, do_convert)
            except Exception as exc:
                unavailable[engine.id] = f"CTranslate2 conversion failed: {type(exc).__name__}: {exc}"
    return dirs, unavailable


def _hf_ids(hf_dir: Path) -> tuple[dict[str, int], int, int]:
    """(vocab.json, pad id, eos id) of a HF Marian directory."""
    vocab: dict[str, int] = json.loads((hf_dir / "vocab.json").read_text(encoding="utf-8"))
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    return vocab, int(config["pad_token_id"]), int(config["eos_token_id"])


def fixed_sources(hf_dir: Path, count: int, length: int, seed: int) -> list[tuple[int, ...]]:
    """``count`` random source id lists of exactly ``length`` tokens: language token, ordinary ids, eos."""
    vocab, pad, eos = _hf_ids(hf_dir)
    special = {pad, eos, vocab.get("<unk>", -1)}
    ordinary = sorted(i for t, i in vocab.items() if i not in special and not (t.startswith(">>") and t.endswith("<<")))
    prefix = [vocab[LANGUAGE_TOKEN]] if LANGUAGE_TOKEN in vocab else []
    body = length - 1 - len(prefix)
    if body < 1:
        raise BenchError(f"--source-tokens must be at least {len(prefix) + 2}, got {length}")
    rng = random.Random(seed)
    return [tuple([*prefix, *(rng.choice(ordinary) for _ in range(body)), eos]) for _ in range(count)]


def natural_sources(hf_dir: Path, test_tsv: Path, count: int) -> list[tuple[int, ...]]:
    """Source ids of the first ``count`` English sentences of a ``english<TAB>chinese`` test file."""
    from enzh.runtime.tokenizer import MarianTokenizer

    tokenizer = MarianTokenizer.from_dir(hf_dir)
    english = []
    with open(test_tsv, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                english.append(line.split("\t", 1)[0].strip())
            if len(english) == count:
                break
    if len(english) < count:
        raise BenchError(f"{test_tsv} has {len(english)} sentences, fewer than the {count} asked for")
    return [tuple(tokenizer.encode(f"{LANGUAGE_TOKEN} {text}")) for text in english]


def make_cases(group: str, sources: Sequence[tuple[int, ...]], settings: BenchSettings) -> tuple[Case, ...]:
    cases = []
    for batch in settings.batch_sizes:
        for beams in settings.beams:
            search = "greedy" if beams == 1 else f"beam{beams}"
            if group == "fixed":
                calls: tuple[tuple[tuple[int, ...], ...], ...] = (tuple(sources[:batch]),)
                new_tokens = settings.new_tokens
            else:
                calls = tuple(tuple(sources[i : i + batch]) for i in range(0, len(sources), batch))
                new_tokens = settings.natural_max_new_tokens
            cases.append(Case(f"{group}-b{batch}-{search}", group, batch, beams, group == "fixed", new_tokens, calls))
    return tuple(cases)


# ---------------------------------------------------------------------------------------------------------
# the worker: one fresh process per engine (and model), measuring its cases
# ---------------------------------------------------------------------------------------------------------


class _Runner:
    """Loads one engine and generates token sequences for a batch of sources."""

    def generate(self, call: Sequence[Any], beams: int, new_tokens: int, fixed: bool) -> list[list[Any]]:
        raise NotImplementedError

    def to_ids(self, hyps: list[list[Any]]) -> list[list[int]]:
        return [[int(t) for t in h] for h in hyps]


class _EnzhRunner(_Runner):
    def __init__(self, directory: str, threads: int) -> None:
        from enzh.runtime.translator import Translator

        self.translator = Translator.load(directory, intra_op_threads=threads, inter_op_threads=1)

    def generate(self, call: Sequence[Any], beams: int, new_tokens: int, fixed: bool) -> list[list[Any]]:
        # min_length counts the decoder start token (HF semantics): N + 1 forbids eos before the N-th token.
        extra = {"min_length": new_tokens + 1} if fixed else {}
        hyps = self.translator.generate_ids(call, beam_size=beams, max_new_tokens=new_tokens, **extra)
        return [list(h.token_ids) for h in hyps]


class _TorchRunner(_Runner):
    def __init__(self, directory: str, threads: int) -> None:
        import torch
        import transformers
        from transformers import MarianMTModel

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        transformers.logging.set_verbosity_error()
        self.torch = torch
        self.model = MarianMTModel.from_pretrained(directory, dtype=torch.float32).eval()
        self.pad = int(self.model.config.pad_token_id)
        self.eos = int(self.model.config.eos_token_id)

    def generate(self, call: Sequence[Any], beams: int, new_tokens: int, fixed: bool) -> list[list[Any]]:
        torch = self.torch
        width = max(len(s) for s in call)
        ids = torch.full((len(call), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(call), width), dtype=torch.long)
        for row, source in enumerate(call):
            ids[row, : len(source)] = torch.tensor(source, dtype=torch.long)
            mask[row, : len(source)] = 1
        extra = {"min_new_tokens": new_tokens} if fixed else {}
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                num_beams=beams,
                do_sample=False,
                max_new_tokens=new_tokens,
                **extra,
            )
        hyps = []
        for row in out[:, 1:].tolist():  # drop the decoder start token
            tokens = []
            for token in row:
                if token == self.pad:
                    break
                tokens.append(token)
                if token == self.eos:
                    break
            hyps.append(tokens)
        return hyps


class _CT2Runner(_Runner):
    def __init__(self, directory: str, threads: int, compute_type: str) -> None:
        import ctranslate2

        self.directory = Path(directory)
        self.translator = ctranslate2.Translator(
            directory, device="cpu", compute_type=compute_type, intra_threads=threads, inter_threads=1
        )

    def generate(self, call: Sequence[Any], beams: int, new_tokens: int, fixed: bool) -> list[list[Any]]:
        results = self.translator.translate_batch(
            [list(s) for s in call],
            beam_size=beams,
            max_decoding_length=new_tokens,
            min_decoding_length=new_tokens if fixed else 1,
            return_end_token=True,
            max_input_length=0,
        )
        return [list(r.hypotheses[0]) for r in results]

    def to_ids(self, hyps: list[list[Any]]) -> list[list[int]]:
        index = {t: i for i, t in enumerate(ct2_vocabulary(self.directory))}
        return [[index.get(t, -1) for t in h] for h in hyps]


def ct2_vocabulary(directory: Path) -> list[str]:
    path = directory / "shared_vocabulary.json"
    if path.is_file():
        return list(json.loads(path.read_text(encoding="utf-8")))
    text = directory / "shared_vocabulary.txt"
    return text.read_text(encoding="utf-8").splitlines()


def _make_runner(job: dict[str, Any]) -> _Runner:
    engine = ENGINE_BY_ID[job["engine"]]
    if engine.kind == "enzh":
        return _EnzhRunner(job["model_dir"], job["threads"])
    if engine.kind == "torch":
        return _TorchRunner(job["model_dir"], job["threads"])
    return _CT2Runner(job["model_dir"], job["threads"], engine.precision)


def _measure(runner: _Runner, case: dict[str, Any], repeats: int, warmup: int) -> dict[str, Any]:
    beams, new_tokens, fixed = case["beams"], case["new_tokens"], case["fixed"]
    calls = case["calls"]
    scope = "case" if reset_peak_rss() else "process"

    def run_all() -> tuple[float, list[list[Any]]]:
        start = time.perf_counter()
        hyps = [h for call in calls for h in runner.generate(call, beams, new_tokens, fixed)]
        return time.perf_counter() - start, hyps

    def count(hyps: list[list[Any]]) -> int:
        if fixed:
            wrong = [len(h) for h in hyps if len(h) != new_tokens]
            if wrong:
                raise LengthError(
                    f"fixed-length case {case['id']}: {len(wrong)} of {len(hyps)} outputs do not have exactly "
                    f"{new_tokens} tokens (lengths {sorted(set(wrong))})"
                )
        return sum(len(h) for h in hyps)

    hyps: list[list[Any]] = []
    for _ in range(warmup):
        _, hyps = run_all()
        count(hyps)
    times: list[float] = []
    tokens: list[int] = []
    for _ in range(repeats):
        seconds, hyps = run_all()
        times.append(seconds)
        tokens.append(count(hyps))
    return {
        "case": case["id"],
        "status": "ok",
        "times_s": times,
        "tokens": tokens,
        "exact_length": True if fixed else None,
        "peak_rss_mib": peak_rss_mib(),
        "rss_scope": scope,
        "outputs": runner.to_ids(hyps),
    }


def worker_main(job_path: str, out_path: str) -> int:
    """Measure one engine on the job's cases; write the results as JSON. Run as a fresh process."""
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    t0 = float(job["t0"])  # the parent's clock just before it started this process
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    runner = _make_runner(job)
    loaded = time.time()
    rss_loaded = rss_mib()
    first = job["cases"][0]
    runner.generate(first["calls"][0][:1], 1, first["new_tokens"], first["fixed"])
    first_done = time.time()
    load_peak = peak_rss_mib()
    results = []
    for case in job["cases"]:
        try:
            results.append(_measure(runner, case, job["repeats"], job["warmup"]))
        except Exception as exc:
            results.append({"case": case["id"], "status": "error", "error": f"{type(exc).__name__}: {exc}"})
    out = {
        "engine": job["engine"],
        "load_s": loaded - t0,
        "first_translation_s": first_done - t0,
        "rss_after_load_mib": rss_loaded,
        "load_peak_rss_mib": load_peak,
        "load_average": None if load_start is None else [load_start, os.getloadavg()[0]],
        "results": results,
    }
    Path(out_path).write_text(json.dumps(out), encoding="utf-8")
    return 0


def _run_worker(
    engine: Engine, directory: Path, cases: Sequence[Case], settings: BenchSettings, workdir: Path
) -> dict[str, Any]:
    """Start a fresh process for ``engine`` on ``cases``; its results, or an error entry for every case."""
    tag = f"{engine.id}-{cases[0].id}"
    job_path, out_path = workdir / f"{tag}.job.json", workdir / f"{tag}.out.json"
    calls_of = _ct2_calls if engine.kind == "ct2" else _id_calls
    job = {
        "engine": engine.id,
        "model_dir": str(directory),
        "threads": settings.threads,
        "repeats": settings.repeats,
        "warmup": settings.warmup,
        "cases": [
            {
                "id": c.id,
                "beams": c.beams,
                "new_tokens": c.new_tokens,
                "fixed": c.fixed,
                "calls": calls_of(c, directory),
            }
            for c in cases
        ],
    }
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(settings.threads)
    env.update(TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    # The worker imports enzh from where this module is, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_DIR.parent), env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "enzh.tools.bench", "--worker", str(job_path), str(out_path)]
    job["t0"] = time.time()  # "process start" for the load time: just before the process is spawned
    job_path.write_text(json.dumps(job), encoding="utf-8")
    try:
        proc = subprocess.run(
            command,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=settings.timeout_s,
            check=False,
        )
        failure = None if proc.returncode == 0 and out_path.is_file() else _tail(proc.stderr)
    except subprocess.TimeoutExpired:
        failure = f"timed out after {settings.timeout_s:.0f} s"
    if failure is not None:
        return {
            "engine": engine.id,
            "results": [{"case": c.id, "status": "error", "error": f"worker failed: {failure}"} for c in cases],
        }
    result: dict[str, Any] = json.loads(out_path.read_text(encoding="utf-8"))
    return result


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:]) or "no output"


def _id_calls(case: Case, directory: Path) -> list[list[list[int]]]:
    return [[list(s) for s in call] for call in case.calls]


def _ct2_calls(case: Case, directory: Path) -> list[list[list[str]]]:
    """CTranslate2 takes token strings: the entries of its own vocabulary at the same ids."""
    vocabulary = ct2_vocabulary(directory)
    return [[[vocabulary[i] for i in s] for s in call] for call in case.calls]


# ---------------------------------------------------------------------------------------------------------
# orchestration
# ---------------------------------------------------------------------------------------------------------


def _check_ct2_vocabulary(hf_dir: Path, directory: Path) -> None:
    """CTranslate2 must see the same ids: its vocabulary has to list vocab.json's tokens in id order."""
    vocab = _hf_ids(hf_dir)[0]
    by_id = {i: t for t, i in vocab.items()}
    mine = ct2_vocabulary(directory)
    bad = [i for i, t in enumerate(mine) if by_id.get(i) != t]
    if bad:
        raise BenchError(f"CTranslate2 vocabulary of {directory} differs from {hf_dir}/vocab.json at ids {bad[:5]}")


def prepare_groups(
    settings: BenchSettings, cache_dir: Path, fixed_model: Path | None, shaped_config: Path | None
) -> list[ModelGroup]:
    groups = []
    code_key = _code_fingerprint()  # once: other groups must not re-export if enzh changes during the run
    for group in settings.groups:
        if group == "fixed" and not settings.quick:
            if fixed_model is not None:
                hf_dir = fixed_model
                name = hf_dir.name
                description = f"{hf_dir}"
                key = f"model-{_dir_fingerprint(hf_dir)}"
            else:
                config_key = hashlib.sha256(
                    json.dumps([OPUS_MT_EN_ZH_CONFIG, OPUS_MT_EN_ZH_GENERATION, str(shaped_config)]).encode()
                ).hexdigest()[:8]
                key = f"opus-mt-en-zh-shaped-seed{settings.seed}-{config_key}"

                def build(tmp: Path) -> None:
                    _log("building the opus-mt-en-zh-shaped model (first run only) ...")
                    build_shaped_model(tmp, seed=settings.seed, config_dir=shaped_config)

                hf_dir = _build_once(cache_dir / key / "hf", build)
                name = "opus-mt-en-zh-shaped"
                description = (
                    "opus-mt-en-zh's exact config (6+6 layers, d_model 512, 65,001 tokens), seeded random weights"
                )
        else:
            hf_dir = HF_MODEL_DIR
            key = f"demo-{_dir_fingerprint(HF_MODEL_DIR)}"
            name = "demo"
            description = "the embedded demo model (enzh/demo/model: 3+3 layers, d_model 256, 1,834 tokens)"
        dirs, unavailable = _prepare_engines(hf_dir, cache_dir / key, settings.engines, code_key)
        for engine_id, directory in list(dirs.items()):
            if ENGINE_BY_ID[engine_id].kind == "ct2":
                try:
                    _check_ct2_vocabulary(hf_dir, directory)
                except BenchError as exc:
                    unavailable[engine_id] = str(exc)
                    del dirs[engine_id]
        if group == "fixed":
            sources = fixed_sources(hf_dir, max(settings.batch_sizes), settings.source_tokens, settings.seed)
        else:
            sources = natural_sources(hf_dir, DEMO_TEST_SET, settings.natural_sentences)
        groups.append(
            ModelGroup(group, name, description, hf_dir, dirs, unavailable, make_cases(group, sources, settings))
        )
    return groups


def run_bench(
    settings: BenchSettings,
    *,
    cache_dir: Path,
    command: str,
    fixed_model: Path | None = None,
    shaped_config: Path | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """Prepare every model, run every engine in its own processes, and return the report (see ``SCHEMA``).

    With ``settings.rounds`` > 1 the whole sweep (every engine, one after another, in an order rotated each
    round) runs that many times with fresh processes, and each cell pools the timed runs of all rounds: load
    that comes and goes on a shared machine then hits every engine alike instead of whichever ran at the time.
    """
    machine = describe_machine()
    started = time.time()
    groups = prepare_groups(settings, cache_dir, fixed_model, shaped_config)
    engines = [ENGINE_BY_ID[e] for e in settings.engines]
    entries = {e.id: _engine_entry(e, groups) for e in engines}
    per_round: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (case, engine) -> one item per round
    workers: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (engine, group) -> load info of each process
    with tempfile.TemporaryDirectory(prefix="enzh-bench-") as tmp:
        for number in range(settings.rounds):
            shift = number % len(engines)
            if settings.rounds > 1:
                _log(f"round {number + 1} of {settings.rounds}")
            for engine in engines[shift:] + engines[:shift]:
                _run_engine(engine, groups, settings, Path(tmp), per_round, workers)
    results: list[dict[str, Any]] = []
    for engine in engines:
        for group in groups:
            info = entries[engine.id]["groups"][group.group]
            for case in group.cases:
                if "unavailable" in info:
                    results.append(
                        {"case": case.id, "engine": engine.id, "status": "skipped"} | {"error": info["unavailable"]}
                    )
                else:
                    results.append(_merge_rounds(case.id, engine.id, per_round.get((case.id, engine.id), [])))
            if workers.get((engine.id, group.group)):
                info.update(_load_info(workers[(engine.id, group.group)]))
    all_cases = [c for g in groups for c in g.cases]
    _finish_results(results, all_cases)
    for engine in engines:
        for group in groups:
            ids = {c.id for c in group.cases}
            peaks = [
                r["peak_rss_mib"]
                for r in results
                if r["engine"] == engine.id and r["status"] == "ok" and r["case"] in ids
            ]
            info = entries[engine.id]["groups"][group.group]
            if peaks or "load_peak_rss_mib" in info:
                info["peak_rss_mib"] = max([*peaks, info.get("load_peak_rss_mib", 0.0)])
    machine["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return {
        "schema": SCHEMA,
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "duration_s": round(time.time() - started, 1),
        "command": command,
        "note": note,
        "machine": machine,
        "settings": {**asdict(settings)},
        "models": {g.group: {"name": g.name, "description": g.description, "hf_dir": str(g.hf_dir)} for g in groups},
        "engines": [entries[e.id] for e in engines],
        "cases": [c.describe() for c in all_cases],
        "results": results,
    }


def _engine_entry(engine: Engine, groups: Sequence[ModelGroup]) -> dict[str, Any]:
    entry: dict[str, Any] = {**asdict(engine), "groups": {}}
    for group in groups:
        if engine.id in group.dirs:
            directory = group.dirs[engine.id]
            entry["groups"][group.group] = {"model_dir": str(directory), "model_bytes": _model_size(engine, directory)}
        else:
            reason = group.unavailable.get(engine.id, "not prepared")
            entry["groups"][group.group] = {"unavailable": reason}
            _log(f"{engine.id} on {group.name}: skipped ({reason})")
    return entry


def _run_engine(
    engine: Engine,
    groups: Sequence[ModelGroup],
    settings: BenchSettings,
    workdir: Path,
    per_round: dict[tuple[str, str], list[dict[str, Any]]],
    workers: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    """One round of ``engine`` on every group's cases: fresh process(es), items appended to ``per_round``.

    Groups whose model is the same directory for this engine (``--quick``: the demo model for both) share
    one process.
    """
    buckets: dict[Path, list[ModelGroup]] = {}
    for group in groups:
        if engine.id in group.dirs:
            buckets.setdefault(group.dirs[engine.id], []).append(group)
    for directory, members in buckets.items():
        cases = [c for g in members for c in g.cases]
        for batch in [cases] if settings.isolate == "engine" else [[c] for c in cases]:
            _log(f"{engine.id}: {', '.join(c.id for c in batch)} ...")
            out = _run_worker(engine, directory, batch, settings, workdir)
            load = {k: out[k] for k in LOAD_KEYS if k in out}
            if "load_s" in load:
                for group in members:
                    if any(c in group.cases for c in batch):
                        workers.setdefault((engine.id, group.group), []).append(load)
            for item in out["results"]:
                item = {"engine": engine.id, **item, **{k: load.get(k) for k in LOAD_KEYS[:3]}}
                per_round.setdefault((item["case"], engine.id), []).append(item)
                shown = dict(item)
                if shown["status"] == "ok":
                    _add_stats(shown)
                _log(f"  {_summary_line(shown)}")


LOAD_KEYS = ("load_s", "first_translation_s", "rss_after_load_mib", "load_peak_rss_mib", "load_average")


def _load_info(loads: list[dict[str, Any]]) -> dict[str, Any]:
    """Load time and memory of an engine's processes on one model: medians over rounds, the peak's maximum."""
    rss = [o["rss_after_load_mib"] for o in loads if o.get("rss_after_load_mib") is not None]
    averages = [a for o in loads for a in o.get("load_average") or []]
    return {
        "processes": len(loads),
        "load_s": statistics.median(o["load_s"] for o in loads),
        "first_translation_s": statistics.median(o["first_translation_s"] for o in loads),
        "rss_after_load_mib": statistics.median(rss) if rss else None,
        "load_peak_rss_mib": max(o["load_peak_rss_mib"] for o in loads),
        "load_average_range": [min(averages), max(averages)] if averages else None,
    }


def _merge_rounds(case: str, engine: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """One cell from its rounds: timed runs pooled, peak RSS the largest, load times the median."""
    if not items:
        return {"case": case, "engine": engine, "status": "error", "error": "no result"}
    failed = [i for i in items if i["status"] != "ok"]
    if failed:
        return {"case": case, "engine": engine, "status": "error", "error": failed[0].get("error")}
    merged: dict[str, Any] = {
        "case": case,
        "engine": engine,
        "status": "ok",
        "rounds": len(items),
        "times_s": [t for i in items for t in i["times_s"]],
        "tokens": [t for i in items for t in i["tokens"]],
        "exact_length": items[0]["exact_length"],
        "peak_rss_mib": max(i["peak_rss_mib"] for i in items),
        "rss_scope": items[0]["rss_scope"],
        "outputs": items[-1]["outputs"],
    }
    for key in LOAD_KEYS[:3]:
        values = [i[key] for i in items if i.get(key) is not None]
        merged[key] = statistics.median(values) if values else None
    _add_stats(merged)
    return merged


def _summary_line(item: dict[str, Any]) -> str:
    if item["status"] != "ok":
        return f"{item['case']}: {item['status']}: {item.get('error')}"
    return (
        f"{item['case']}: median {item['median_ms']:.1f} ms (min {item['min_ms']:.1f}, max {item['max_ms']:.1f}), "
        f"{item['tokens_per_s']:.0f} tokens/s, peak RSS {item['peak_rss_mib']:.0f} MiB"
    )


def _finish_results(results: list[dict[str, Any]], cases: Sequence[Case]) -> None:
    """Statistics, ratios to the baselines and agreement with PyTorch; drop the raw outputs."""
    for item in results:
        if item["status"] != "ok" or "median_ms" in item:
            continue
        _add_stats(item)
    by_key = {(r["case"], r["engine"]): r for r in results}
    fixed = {c.id: c.fixed for c in cases}
    for item in results:
        if item["status"] != "ok":
            continue
        for name, baseline in (("ratio_ct2_int8", CT2_BASELINE), ("ratio_torch", TORCH_BASELINE)):
            base = by_key.get((item["case"], baseline))
            item[name] = item["median_ms"] / base["median_ms"] if base and base["status"] == "ok" else None
        torch = by_key.get((item["case"], TORCH_BASELINE))
        item["agreement_torch"] = None
        # Agreement only means something on a trained model with natural lengths (random weights tie logits).
        if not fixed[item["case"]] and torch and torch["status"] == "ok":
            pairs = list(zip(item["outputs"], torch["outputs"], strict=True))
            item["agreement_torch"] = sum(a == b for a, b in pairs) / len(pairs)
    for item in results:
        item.pop("outputs", None)


def _add_stats(item: dict[str, Any]) -> None:
    times_ms = [t * 1000 for t in item.pop("times_s")]
    median = statistics.median(times_ms)
    tokens = statistics.median(item["tokens"])
    item.update(
        times_ms=[round(t, 3) for t in times_ms],
        median_ms=median,
        min_ms=min(times_ms),
        max_ms=max(times_ms),
        q1_ms=_percentile(times_ms, 0.25),
        q3_ms=_percentile(times_ms, 0.75),
        tokens_per_s=tokens / (median / 1000),
    )


# ---------------------------------------------------------------------------------------------------------
# the report: markdown, JSON, chart
# ---------------------------------------------------------------------------------------------------------


# Issue 6's targets on the opus-mt-en-zh-shaped model: (what, engine, case, baseline engine, max latency ratio).
LATENCY_TARGETS: tuple[tuple[str, str, str, str, float], ...] = (
    ("int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b1-greedy", CT2_BASELINE, 0.5),
    ("int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b1-beam4", CT2_BASELINE, 0.5),
    ("int8 ≤ 0.5× CTranslate2 int8", "enzh-int8", "fixed-b16-greedy", CT2_BASELINE, 0.5),
    ("int8 ≤ 0.8× CTranslate2 int8", "enzh-int8", "fixed-b16-beam4", CT2_BASELINE, 0.8),
    ("int8 ≥ 5× faster than PyTorch", "enzh-int8", "fixed-b1-greedy", TORCH_BASELINE, 0.2),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b1-greedy", "ct2-float32", 1.0),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b1-beam4", "ct2-float32", 1.0),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b16-greedy", "ct2-float32", 1.0),
    ("fp32 ≤ 1.0× CTranslate2 float32", "enzh-fp32", "fixed-b16-beam4", "ct2-float32", 1.0),
    ("fp32 ≥ 2.5× faster than PyTorch", "enzh-fp32", "fixed-b1-greedy", TORCH_BASELINE, 0.4),
)
SHAPED_NAME = "opus-mt-en-zh-shaped"


NOISY_SPREAD = 2.0  # a cell whose slowest timed run took more than this many times its fastest is "noisy"


def evaluate_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 6's targets checked against this run (only for the opus-mt-en-zh-shaped model); [] otherwise.

    Latency targets give the ratio of medians (``value``, what ``met`` judges) and the ratio of the fastest
    runs (``value_min``: the least disturbed estimate when other processes compete for the CPUs), and flag
    ``noisy`` when either cell's max/min exceeds :data:`NOISY_SPREAD`.
    """
    if report["models"].get("fixed", {}).get("name") != SHAPED_NAME:
        return []
    by_key = {(r["case"], r["engine"]): r for r in report["results"]}
    labels = {c["id"]: c["label"] for c in report["cases"]}
    out = []
    for what, engine, case, baseline, limit in LATENCY_TARGETS:
        mine, base = by_key.get((case, engine)), by_key.get((case, baseline))
        if case not in labels or not (mine and base and mine["status"] == base["status"] == "ok"):
            continue
        value = mine["median_ms"] / base["median_ms"]
        out.append(
            {
                "target": what,
                "cell": labels[case],
                "value": value,
                "value_min": mine["min_ms"] / base["min_ms"],
                "limit": limit,
                "met": value <= limit,
                "noisy": any(r["max_ms"] > NOISY_SPREAD * r["min_ms"] for r in (mine, base)),
            }
        )
    groups = {e["id"]: e["groups"].get("fixed", {}) for e in report["engines"]}
    mine_info, ct2_info = groups.get("enzh-int8", {}), groups.get(CT2_BASELINE, {})
    if mine_info.get("peak_rss_mib") and ct2_info.get("peak_rss_mib"):
        value = mine_info["peak_rss_mib"] / ct2_info["peak_rss_mib"]
        out.append(
            {"target": "int8 peak RSS ≤ CTranslate2 int8's", "cell": "whole run", "value": value, "limit": 1.0}
            | {"value_min": None, "met": value <= 1.0, "noisy": False}
        )
    if "first_translation_s" in mine_info:
        value = mine_info["first_translation_s"]
        out.append(
            {"target": "int8 load ≤ 1.5 s (start → first translation)", "cell": "—", "value": value, "limit": 1.5}
            | {"value_min": None, "met": value <= 1.5, "noisy": False}
        )
    return out


def _targets_table(report: dict[str, Any]) -> list[str]:
    targets = evaluate_targets(report)
    if not targets:
        return []
    lines = [
        "## Issue 6 targets in this run",
        "",
        "Latency targets: the ratio of the two engines' medians in the fixed-length cell (what *met* judges) and "
        "the ratio of their fastest runs (the least disturbed estimate when other processes compete for the "
        f"CPUs); *noisy*: the slowest run of either cell took over {NOISY_SPREAD:g}× its fastest, so that ratio "
        "says little. RSS: the ratio of the two processes' peaks on the shaped model. Load: seconds.",
        "",
        "| target | cell | ratio of medians | ratio of fastest runs | limit | met |",
        "|---|---|---|---|---|---|",
    ]
    for t in targets:
        fastest = "—" if t.get("value_min") is None else f"{t['value_min']:.2f}"
        verdict = ("yes" if t["met"] else "**no**") + (" (noisy)" if t.get("noisy") else "")
        lines.append(f"| {t['target']} | {t['cell']} | {t['value']:.2f} | {fastest} | {t['limit']:.2f} | {verdict} |")
    met = sum(t["met"] for t in targets)
    noisy = sum(bool(t.get("noisy")) for t in targets)
    summary = f"{met} of {len(targets)} targets met by the medians" + (
        f"; {noisy} of the {len(targets)} noisy." if noisy else "."
    )
    return [*lines, "", summary, ""]


def _runs_text(settings: dict[str, Any]) -> str:
    rounds = settings.get("rounds", 1)
    if rounds == 1:
        return f"{settings['warmup']} warm-up run(s), then the median of {settings['repeats']} timed runs"
    return (
        f"{rounds} rounds (every engine in turn, order rotated each round, a fresh process per engine and "
        f"round), each with {settings['warmup']} warm-up run(s) and {settings['repeats']} timed run(s); the "
        f"median of the {rounds * settings['repeats']} timed runs"
    )


def _busiest_load(report: dict[str, Any]) -> float | None:
    """The highest 1-minute load average seen at the start or end of any engine process (None: not recorded)."""
    seen = [
        info["load_average_range"][1]
        for engine in report["engines"]
        for info in engine["groups"].values()
        if info.get("load_average_range")
    ]
    return max(seen) if seen else None


def _ms(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def _machine_line(report: dict[str, Any]) -> str:
    m = report["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
    memory = f", {m['memory_bytes'] / 1024**3:.1f} GiB RAM" if m.get("memory_bytes") else ""
    load = ""
    if m.get("load_average_start") and m.get("load_average_end"):
        load = (
            f" Load average (1 min) {m['load_average_start'][0]:.2f} at the start, "
            f"{m['load_average_end'][0]:.2f} at the end."
        )
    return (
        f"{m['cpu']}, {m['logical_cpus']} logical CPUs ({m['usable_cpus']} usable){memory}, {m['platform']}, "
        f"Python {m['python']}; {versions}.{load}"
    )


def render_markdown(report: dict[str, Any], chart: str | None = None, rendered_by: str | None = None) -> str:
    settings = report["settings"]
    by_key = {(r["case"], r["engine"]): r for r in report["results"]}
    labels = {e["id"]: e["label"] for e in report["engines"]}
    lines = [
        "# Benchmarks: enzh vs transformers (PyTorch) and CTranslate2",
        "",
        f"Generated by `{report['command']}` on {report['created']} in {report['duration_s'] / 60:.1f} minutes "
        "(every table and the chart below come from that command's output; nothing is typed by hand).",
        "",
        *([f"Rendered from that run's JSON by `{rendered_by}`.", ""] if rendered_by else []),
        f"**Machine**: {_machine_line(report)}",
        "",
    ]
    if report.get("note"):
        lines += [f"**Note**: {report['note']}", ""]
    busiest = _busiest_load(report)
    if busiest is not None and busiest > report["machine"]["logical_cpus"]:
        lines += [
            f"**Warning (automatic)**: the machine's load average reached {busiest:.1f} on "
            f"{report['machine']['logical_cpus']} logical CPUs while engines ran: other processes competed for "
            f"the CPUs, so these timings are not representative (engines that synchronise {settings['threads']} "
            "threads at every operator suffer most). Rerun on an idle machine.",
            "",
        ]
    lines += [
        f"**Method**: every engine runs in its own fresh process ({settings['isolate']} isolation: one process "
        f"per {'engine and model' if settings['isolate'] == 'engine' else 'engine and case'}) with "
        f"{settings['threads']} threads (ONNX Runtime intra-op, `torch.set_num_threads`, CTranslate2 "
        "`intra_threads`; inter-op 1), on the same source ids. Each cell: "
        f"{_runs_text(settings)} (min–max in brackets). Tokens/s counts the generated tokens of the "
        "returned hypothesis (eos included). Peak RSS is the process's high-water mark during the cell "
        "(reset before it through `/proc/self/clear_refs`, so it includes the loaded model). Ratios are "
        "latency ÷ the baseline's latency in the same cell: below 1 is faster.",
        "",
    ]
    for group in GROUPS:
        cases = [c for c in report["cases"] if c["group"] == group]
        if not cases:
            continue
        model = report["models"][group]
        if group == "fixed":
            lines += [
                f"## Fixed length: {model['name']} model, {settings['source_tokens']} source tokens, "
                f"exactly {settings['new_tokens']} generated tokens",
                "",
                f"Model: {model['description']}. Each call translates one batch of random source ids; every "
                f"sentence generates exactly {settings['new_tokens']} tokens in every engine (minimum = maximum: "
                f"enzh `min_length={settings['new_tokens'] + 1}, max_new_tokens={settings['new_tokens']}`, "
                f"transformers `min_new_tokens=max_new_tokens={settings['new_tokens']}`, CTranslate2 "
                f"`min_decoding_length=max_decoding_length={settings['new_tokens']}`). The harness checks the "
                "length of every output of every run and fails the cell otherwise; enzh and transformers "
                "end on the forced eos (the model's `forced_eos_token_id`), CTranslate2 on an ordinary token: "
                "the same number of decoder steps.",
                "",
                "Milliseconds per call:",
            ]
        else:
            lines += [
                f"## Natural length: {model['name']} model, first {settings['natural_sentences']} sentences of "
                "its test set",
                "",
                f"Model: {model['description']}. Each run translates the same {settings['natural_sentences']} "
                "sentences (`enzh/demo/model/test.tsv`, in file order) in calls of the given batch size; every "
                f"engine stops at eos (at most {settings['natural_max_new_tokens']} new tokens). "
                "*Same as PyTorch* is the share of outputs whose token ids equal transformers' output "
                "(CTranslate2's beam search scores and stops differently, so its beam outputs may differ).",
                "",
                f"Milliseconds for all {settings['natural_sentences']} sentences:",
            ]
        lines += _grid(report, cases, labels, by_key)
        lines += ["", "Latency ÷ CTranslate2 int8 / latency ÷ PyTorch:", ""]
        lines += _grid(report, cases, labels, by_key, ratios=True)
        lines += ["", "Every cell:", ""]
        lines += _detail(cases, report, labels, by_key)
        lines.append("")
    lines += _targets_table(report)
    lines += ["## Load time and memory per engine", ""]
    lines += _engine_table(report)
    if chart:
        lines += ["", f"![latency per engine and case]({chart})"]
    problems = [r for r in report["results"] if r["status"] != "ok"]
    if problems:
        lines += ["", "## Not measured", ""]
        lines += [f"* {labels[r['engine']]}, {r['case']}: {r['status']}: {r.get('error')}" for r in problems]
    return "\n".join(lines) + "\n"


def _grid(
    report: dict[str, Any],
    cases: list[dict[str, Any]],
    labels: dict[str, str],
    by_key: dict[tuple[str, str], dict[str, Any]],
    *,
    ratios: bool = False,
) -> list[str]:
    lines = ["| engine | " + " | ".join(c["label"] for c in cases) + " |", "|---|" + "---|" * len(cases)]
    for engine in report["engines"]:
        cells = []
        for case in cases:
            r = by_key.get((case["id"], engine["id"]))
            if r is None or r["status"] != "ok":
                cells.append("—" if r is None or r["status"] == "skipped" else "error")
            elif ratios:
                parts = [f"{r[k]:.2f}" if r.get(k) is not None else "—" for k in ("ratio_ct2_int8", "ratio_torch")]
                cells.append(" / ".join(parts))
            else:
                cells.append(f"{_ms(r['median_ms'])} ({_ms(r['min_ms'])}–{_ms(r['max_ms'])})")
        if any(c not in ("—",) for c in cells):
            lines.append(f"| {labels[engine['id']]} | " + " | ".join(cells) + " |")
    return lines


def _detail(
    cases: list[dict[str, Any]],
    report: dict[str, Any],
    labels: dict[str, str],
    by_key: dict[tuple[str, str], dict[str, Any]],
) -> list[str]:
    fixed = cases[0]["fixed_length"]
    last = "exactly N tokens" if fixed else "same as PyTorch"
    lines = [
        f"| case | engine | median ms | min–max ms | IQR ms | tokens/run | tokens/s | peak RSS MiB | "
        f"÷ CT2 int8 | ÷ PyTorch | {last} |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in cases:
        for engine in report["engines"]:
            r = by_key.get((case["id"], engine["id"]))
            if r is None or r["status"] == "skipped":
                continue
            if r["status"] != "ok":
                lines.append(f"| {case['label']} | {labels[engine['id']]} | error | | | | | | | | |")
                continue
            ratio = [f"{r[k]:.2f}" if r.get(k) is not None else "—" for k in ("ratio_ct2_int8", "ratio_torch")]
            if fixed:
                check = "yes" if r.get("exact_length") else "NO"
            else:
                check = f"{100 * r['agreement_torch']:.0f} %" if r.get("agreement_torch") is not None else "—"
            tokens = statistics.median(r["tokens"])
            lines.append(
                f"| {case['label']} | {labels[engine['id']]} | {_ms(r['median_ms'])} | "
                f"{_ms(r['min_ms'])}–{_ms(r['max_ms'])} | {r['q3_ms'] - r['q1_ms']:.1f} | {tokens:.0f} | "
                f"{r['tokens_per_s']:.0f} | {r['peak_rss_mib']:.0f} | {ratio[0]} | {ratio[1]} | {check} |"
            )
    return lines


def _engine_table(report: dict[str, Any]) -> list[str]:
    lines = [
        "| engine | model | size on disk | start → loaded s | start → first translation s | RSS after load MiB "
        "| peak RSS MiB | machine load average while it ran |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for engine in report["engines"]:
        seen = set()
        for group in GROUPS:
            info = engine["groups"].get(group, {})
            if "load_s" not in info or info["model_dir"] in seen:
                continue
            seen.add(info["model_dir"])
            model = report["models"][group]["name"]
            rss = info.get("rss_after_load_mib")
            peak = info.get("peak_rss_mib")
            load = info.get("load_average_range")
            lines.append(
                f"| {engine['label']} | {model} | {info['model_bytes'] / 1e6:.1f} MB | {info['load_s']:.2f} | "
                f"{info['first_translation_s']:.2f} | {'—' if rss is None else f'{rss:.0f}'} | "
                f"{'—' if peak is None else f'{peak:.0f}'} | {'—' if not load else f'{load[0]:.1f}–{load[1]:.1f}'} |"
            )
    lines += [
        "",
        "*start → loaded*: from the parent starting the process (interpreter start and imports included) to the "
        "model being ready; *first translation*: to the end of the first one-sentence greedy call. *Size on "
        "disk*: what the engine loads (enzh: the model directory; PyTorch: the safetensors; CTranslate2: its "
        "converted directory). enzh loads with its defaults, which include checking the sha256 of every file. "
        "*Peak RSS*: the largest of all cells of that model (and of loading). Times are medians over the "
        "engine's processes (one per round); the load average (1 min, at the start and end of each of its "
        f"processes) shows how busy the {report['machine']['logical_cpus']}-CPU machine was meanwhile.",
    ]
    return lines


def render_chart(report: dict[str, Any], path: Path) -> None:
    """Grouped bars: median latency per case and engine (min–max as error bars), log scale; one panel per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [g for g in GROUPS if any(c["group"] == g for c in report["cases"])]
    engines = [e for e in report["engines"]]
    by_key = {(r["case"], r["engine"]): r for r in report["results"]}
    fig, axes = plt.subplots(1, len(groups), figsize=(7 * len(groups), 4.8), squeeze=False)
    width = 0.8 / max(1, len(engines))
    for ax, group in zip(axes[0], groups, strict=True):
        cases = [c for c in report["cases"] if c["group"] == group]
        for k, engine in enumerate(engines):
            xs, ys, low, high = [], [], [], []
            for i, case in enumerate(cases):
                r = by_key.get((case["id"], engine["id"]))
                if r and r["status"] == "ok":
                    xs.append(i + (k - (len(engines) - 1) / 2) * width)
                    ys.append(r["median_ms"])
                    low.append(r["median_ms"] - r["min_ms"])
                    high.append(r["max_ms"] - r["median_ms"])
            if xs:
                ax.bar(xs, ys, width, yerr=[low, high], capsize=2, label=engine["label"])
        ax.set_xticks(range(len(cases)), [c["label"] for c in cases], rotation=15)
        ax.set_yscale("log")
        model = report["models"][group]["name"]
        unit = "ms per call" if group == "fixed" else f"ms for {cases[0]['sentences']} sentences"
        ax.set_ylabel(f"{unit} (log scale)")
        ax.set_title(f"{group} length, {model} model")
        ax.grid(axis="y", which="both", alpha=0.3)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=min(len(names), 6), fontsize=8, frameon=False)
    settings = report["settings"]
    runs = settings["repeats"] * settings.get("rounds", 1)
    fig.suptitle(f"enzh bench, {settings['threads']} threads, median of {runs} runs (bars: min–max)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(
    report: dict[str, Any], out_dir: Path, markdown: Path | None = None, rendered_by: str | None = None
) -> dict[str, Path]:
    """Write ``bench.json`` and ``bench.png`` into ``out_dir`` and the markdown to ``markdown`` (default
    ``out_dir/bench.md``), its chart link relative to the markdown file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "bench.json", "png": out_dir / "bench.png", "md": markdown or out_dir / "bench.md"}
    report = {**report, "targets": evaluate_targets(report)}
    paths["json"].write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    render_chart(report, paths["png"])
    paths["md"].parent.mkdir(parents=True, exist_ok=True)
    chart = Path(os.path.relpath(paths["png"], paths["md"].parent)).as_posix()
    paths["md"].write_text(render_markdown(report, chart, rendered_by), encoding="utf-8")
    return paths


def check_report(report: dict[str, Any]) -> None:
    """Raise ValueError unless ``report`` has the bench.json layout (used by the tests and --from-json)."""

    def need(obj: dict[str, Any], keys: Sequence[str], where: str) -> None:
        missing = [k for k in keys if k not in obj]
        if missing:
            raise ValueError(f"{where} lacks {', '.join(missing)}")

    need(
        report,
        ("schema", "created", "command", "machine", "settings", "models", "engines", "cases", "results"),
        "report",
    )
    if report["schema"] != SCHEMA:
        raise ValueError(f"schema is {report['schema']!r}, expected {SCHEMA!r}")
    need(report["machine"], ("cpu", "logical_cpus", "platform", "python", "versions"), "machine")
    case_ids = {c["id"] for c in report["cases"]}
    engine_ids = {e["id"] for e in report["engines"]}
    for case in report["cases"]:
        need(case, ("id", "group", "label", "batch", "beams", "fixed_length", "new_tokens", "sentences"), "case")
    for engine in report["engines"]:
        need(engine, ("id", "label", "kind", "precision", "groups"), "engine")
    for r in report["results"]:
        need(r, ("case", "engine", "status"), "result")
        if r["case"] not in case_ids or r["engine"] not in engine_ids:
            raise ValueError(f"result names an unknown case or engine: {r['case']}, {r['engine']}")
        if r["status"] == "ok":
            need(
                r,
                (
                    "times_ms",
                    "median_ms",
                    "min_ms",
                    "max_ms",
                    "q1_ms",
                    "q3_ms",
                    "tokens",
                    "tokens_per_s",
                    "peak_rss_mib",
                    "load_s",
                    "first_translation_s",
                    "ratio_ct2_int8",
                    "ratio_torch",
                    "exact_length",
                    "agreement_torch",
                ),
                f"result {r['case']}/{r['engine']}",
            )
        elif r["status"] not in ("error", "skipped"):
            raise ValueError(f"unknown status {r['status']!r}")


# ---------------------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------------------


def _int_list(value: str) -> tuple[int, ...]:
    try:
        items = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {value!r}") from None
    if not items or min(items) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {value!r}")
    return items


def _name_list(choices: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    def parse(value: str) -> tuple[str, ...]:
        items = tuple(v.strip() for v in value.split(",") if v.strip())
        unknown = [v for v in items if v not in choices]
        if not items or unknown:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)}; got {value!r}")
        return items

    return parse


# (flag, settings field, type) of the options that override BenchSettings; None keeps the mode's default.
_SETTING_FLAGS: tuple[tuple[str, str, Callable[[str], Any], str], ...] = (
    ("--engines", "engines", _name_list([e.id for e in ENGINES]), "engines to run (default: all)"),
    ("--groups", "groups", _name_list(GROUPS), "case groups: fixed, natural (default: both)"),
    ("--repeats", "repeats", positive_int, "timed runs per cell and round (default 5; --quick 2)"),
    ("--rounds", "rounds", positive_int, "sweeps over all engines, fresh processes each, runs pooled (default 1)"),
    ("--warmup", "warmup", int, "untimed runs per cell before timing (default 1)"),
    ("--threads", "threads", positive_int, "threads of every engine (default 2)"),
    ("--batch-sizes", "batch_sizes", _int_list, "batch sizes (default 1,16; --quick 1,4)"),
    ("--beams", "beams", _int_list, "beam widths, 1 = greedy (default 1,4; --quick 1,2)"),
    ("--source-tokens", "source_tokens", positive_int, "fixed cases: source length (default 24; --quick 12)"),
    ("--new-tokens", "new_tokens", positive_int, "fixed cases: generated tokens (default 32; --quick 8)"),
    ("--natural-sentences", "natural_sentences", positive_int, "natural cases: test sentences (default 64)"),
    ("--natural-max-new-tokens", "natural_max_new_tokens", positive_int, "natural cases: bound (default 128)"),
    ("--seed", "seed", int, "seed of the shaped model's weights and the fixed sources (default 0)"),
    ("--timeout", "timeout_s", float, "seconds one engine process may run (default 3600; --quick 300)"),
)


def add_bench_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` subcommand to the ``enzh`` parser's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "bench", help="measure enzh fp32/int8/int4 against transformers (PyTorch) and CTranslate2"
    )
    p.add_argument("--out", default="bench-results", help="directory for bench.json and bench.png (and bench.md)")
    p.add_argument("--markdown", help="write the markdown report here (default: OUT/bench.md)")
    p.add_argument("--quick", action="store_true", help="smoke test: the demo model, tiny cases, 2 repeats")
    p.add_argument("--model", help="fixed cases: this HF Marian directory instead of the opus-mt-en-zh-shaped model")
    p.add_argument("--shaped-config", help="directory with config.json + generation_config.json for the shaped model")
    p.add_argument(
        "--cache-dir", help="where models are built once (default: $ENZH_CACHE/bench or ~/.cache/enzh/bench)"
    )
    p.add_argument(
        "--isolate", choices=["engine", "cell"], help="one process per engine and model (default) or per cell"
    )
    p.add_argument("--note", help="a line for the report (e.g. that the machine was shared)")
    p.add_argument("--from-json", help="re-render bench.md and bench.png from an earlier bench.json (no measuring)")
    for flag, _, kind, text in _SETTING_FLAGS:
        p.add_argument(flag, type=kind, help=text)
    return p


def settings_from_args(args: argparse.Namespace) -> BenchSettings:
    settings = BenchSettings.quick_defaults() if args.quick else BenchSettings()
    overrides = {
        name: getattr(args, flag[2:].replace("-", "_"))
        for flag, name, _, _ in _SETTING_FLAGS
        if getattr(args, flag[2:].replace("-", "_")) is not None
    }
    if args.isolate:
        overrides["isolate"] = args.isolate
    if overrides.get("warmup", 0) < 0:
        raise ValueError("--warmup must be >= 0")
    return replace(settings, **overrides)


def command_line(args: argparse.Namespace) -> str:
    """The ``enzh bench`` command that reproduces ``args`` (options in a fixed order)."""
    parts = ["enzh", "bench"]
    if args.quick:
        parts.append("--quick")
    for flag in ("--from-json", "--out", "--markdown", "--model", "--shaped-config", "--cache-dir", "--isolate"):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and not (flag == "--out" and value == "bench-results"):
            parts += [flag, str(value)]
    for flag, _, _, _ in _SETTING_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            parts += [flag, ",".join(map(str, value)) if isinstance(value, tuple) else str(value)]
    if args.note:
        parts += ["--note", args.note]
    return shlex.join(parts)


def cmd_bench(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    markdown = Path(args.markdown) if args.markdown else None
    if args.from_json:
        report = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        check_report(report)
    else:
        settings = settings_from_args(args)
        report = run_bench(
            settings,
            cache_dir=Path(args.cache_dir) if args.cache_dir else default_cache_dir(),
            command=command_line(args),
            fixed_model=Path(args.model) if args.model else None,
            shaped_config=Path(args.shaped_config) if args.shaped_config else None,
            note=args.note,
        )
    rendered_by = command_line(args) if args.from_json else None
    paths = write_outputs(report, out_dir, markdown, rendered_by)
    print(paths["md"].read_text(encoding="utf-8"))
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}", file=sys.stderr)
    failed = [r for r in report["results"] if r["status"] == "error"]
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m enzh.tools.bench --worker JOB OUT`` (used by the bench itself) or the ``bench`` options."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1], argv[2])
    parser = argparse.ArgumentParser(prog="enzh bench")
    add_bench_parser(parser.add_subparsers(dest="command", required=True))
    return cmd_bench(parser.parse_args(["bench", *argv]))


if __name__ == "__main__":
    sys.exit(main())
