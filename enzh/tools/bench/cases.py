"""The source ids every engine translates: random fixed-length ids, or the demo test set's sentences."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from enzh.tools.bench.settings import (
    FIXED_GROUPS,
    LANGUAGE_TOKEN,
    NLLB_SOURCE,
    NLLB_TARGET,
    BenchError,
    BenchSettings,
    Case,
)


def hf_vocab(hf_dir: Path) -> tuple[dict[str, int], set[int]]:
    """(token -> id, the ids of special tokens) of a HF directory's tokenizer: a Marian vocab.json, else a
    tokenizer.json (its model's pieces and its added tokens, those marked special among the special ids; the
    fairseq families' <s> <pad> </s> <unk>, language codes and <mask>)."""
    if (hf_dir / "vocab.json").is_file():
        vocab: dict[str, int] = json.loads((hf_dir / "vocab.json").read_text(encoding="utf-8"))
        return vocab, set()
    path = hf_dir / "tokenizer.json"
    if not path.is_file():
        raise BenchError(f"{hf_dir} has neither vocab.json nor tokenizer.json: its token ids cannot be read")
    data = json.loads(path.read_text(encoding="utf-8"))
    pieces = data["model"]["vocab"]
    if isinstance(pieces, list):  # Unigram: [piece, score] in id order
        vocab = {str(piece): i for i, (piece, _) in enumerate(pieces)}
    else:
        vocab = {str(piece): int(i) for piece, i in pieces.items()}
    special = set()
    for added in data.get("added_tokens", []):
        vocab[str(added["content"])] = int(added["id"])
        if added.get("special"):
            special.add(int(added["id"]))
    return vocab, special


def hf_ids(hf_dir: Path) -> tuple[dict[str, int], int, int]:
    """(token -> id, pad id, eos id) of a HF directory (:func:`hf_vocab`, config.json)."""
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    return hf_vocab(hf_dir)[0], int(config["pad_token_id"]), int(config["eos_token_id"])


def is_nllb(hf_dir: Path) -> bool:
    """Whether ``hf_dir`` holds an NLLB tokenizer (tokenizer_config.json's tokenizer_class)."""
    path = hf_dir / "tokenizer_config.json"
    if not path.is_file():
        return False
    name = str(json.loads(path.read_text(encoding="utf-8")).get("tokenizer_class", ""))
    return name.startswith("NllbTokenizer")


def forced_target(hf_dir: Path) -> tuple[str, int] | None:
    """The code and id every engine must generate first: NLLB's target language (:data:`NLLB_TARGET`); None
    for a Marian model (its target token is part of the source)."""
    if not is_nllb(hf_dir):
        return None
    return NLLB_TARGET, hf_vocab(hf_dir)[0][NLLB_TARGET]


def fixed_sources(hf_dir: Path, count: int, length: int, seed: int) -> list[tuple[int, ...]]:
    """``count`` random source id lists of exactly ``length`` tokens: language token, ordinary ids, eos.

    The ids of docs/benchmarks.md: ``random.Random(seed).choice`` over vocab.json's ordinary ids (no pad, eos,
    unk or language token), drawn sentence by sentence. Changing how they are drawn changes that table.
    An NLLB model: ``[eng_Latn] ids </s>`` (its tokenizer's source layout), the ids drawn from its
    tokenizer.json's ordinary pieces (no special token, language code or <mask>).
    """
    vocab, pad, eos = hf_ids(hf_dir)
    special = {pad, eos, vocab.get("<unk>", -1)} | hf_vocab(hf_dir)[1]
    ordinary = sorted(i for t, i in vocab.items() if i not in special and not (t.startswith(">>") and t.endswith("<<")))
    code = NLLB_SOURCE if is_nllb(hf_dir) else LANGUAGE_TOKEN
    prefix = [vocab[code]] if code in vocab else []
    body = length - 1 - len(prefix)
    if body < 1:
        raise BenchError(f"--source-tokens must be at least {len(prefix) + 2}, got {length}")
    rng = random.Random(seed)
    return [tuple([*prefix, *(rng.choice(ordinary) for _ in range(body)), eos]) for _ in range(count)]


def natural_texts(test_tsv: Path, count: int) -> list[str]:
    """The first ``count`` English sentences of a ``english<TAB>chinese`` test file."""
    from enzh.demo.corpus import read_tsv

    english = [en for en, _ in read_tsv(test_tsv)[:count]]
    if len(english) < count:
        raise BenchError(f"{test_tsv} has {len(english)} sentences, fewer than the {count} asked for")
    return english


def natural_sources(hf_dir: Path, texts: Sequence[str]) -> list[tuple[int, ...]]:
    """The source ids of ``texts`` (language token, pieces, eos), as the Marian tokenizer gives them."""
    from enzh.runtime.tokenizer import MarianTokenizer

    tokenizer = MarianTokenizer.from_dir(hf_dir)
    return [tuple(tokenizer.encode(f"{LANGUAGE_TOKEN} {text}")) for text in texts]


def make_cases(
    group: str,
    sources: Sequence[tuple[int, ...]],
    settings: BenchSettings,
    target: tuple[str, int] | None = None,
    texts: Sequence[str] | None = None,
) -> tuple[Case, ...]:
    """Batch sizes x beam widths. Fixed (and nllb): one call of the first ``batch`` sources; natural: all,
    ``batch`` a call. ``target``: the code every engine generates first (:func:`forced_target`). ``texts``: the
    sources' sentences (natural): every engine then translates text to text, its tokenizing counted."""
    cases = []
    for batch in settings.batch_sizes:
        for beams in settings.beams:
            search = "greedy" if beams == 1 else f"beam{beams}"
            fixed = group in FIXED_GROUPS
            if fixed:
                calls: tuple[tuple[tuple[int, ...], ...], ...] = (tuple(sources[:batch]),)
                new_tokens = settings.new_tokens
            else:
                calls = tuple(tuple(sources[i : i + batch]) for i in range(0, len(sources), batch))
                new_tokens = settings.natural_max_new_tokens
            text_calls = None
            if texts is not None and not fixed:
                text_calls = tuple(tuple(texts[i : i + batch]) for i in range(0, len(texts), batch))
            case_id = f"{group}-b{batch}-{search}"
            cases.append(Case(case_id, group, batch, beams, fixed, new_tokens, calls, target, text_calls))
    return tuple(cases)
