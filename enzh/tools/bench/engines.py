"""The three engines behind one interface: load a model directory, generate token sequences for a batch, or
translate a batch of sentences text to text (each engine's own tokenizing and detokenizing counted).

Each runner imports its engine when it is built, in the worker process that measures it, never before.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from enzh.tools.bench.settings import ENGINE_BY_ID, LANGUAGE_TOKEN, BenchError, Case


class Runner:
    """Loads one engine and generates token sequences for a batch of sources.

    ``target``: (code, id) of the target-language code the model generates first (NLLB's
    ``forced_bos_token_id``), counted in ``new_tokens`` in every engine; None for a Marian model.
    """

    def generate(self, call: Sequence[Any], beams: int, new_tokens: int, fixed: bool) -> list[list[Any]]:
        raise NotImplementedError

    def to_ids(self, hyps: list[list[Any]]) -> list[list[int]]:
        return [[int(t) for t in h] for h in hyps]

    def translate(self, texts: Sequence[str], beams: int, new_tokens: int) -> list[tuple[str, int]]:
        """Each English sentence's Chinese translation and the number of tokens generated for it (eos
        included), at most ``new_tokens``; a Marian model's sentences (its target token added here)."""
        raise NotImplementedError


class EnzhRunner(Runner):
    def __init__(
        self, directory: str, threads: int, target: tuple[str, int] | None = None, **runtime_options: Any
    ) -> None:
        from enzh.runtime.translator import Translator

        self.translator = Translator.load(directory, intra_op_threads=threads, inter_op_threads=1, **runtime_options)
        self.target = target

    def generate(self, call: Sequence[Any], beams: int, new_tokens: int, fixed: bool) -> list[list[Any]]:
        # min_length counts the decoder start token (HF semantics): N + 1 forbids eos before the N-th token.
        extra: dict[str, Any] = {"min_length": new_tokens + 1} if fixed else {}
        if self.target is not None:  # forced first, as generate()'s forced_bos_token_id: one of the N tokens
            extra["target"] = self.target[0]
        hyps = self.translator.generate_ids(call, beam_size=beams, max_new_tokens=new_tokens, **extra)
        return [list(h.token_ids) for h in hyps]

    def translate(self, texts: Sequence[str], beams: int, new_tokens: int) -> list[tuple[str, int]]:
        found = self.translator.translate_detailed(texts, beam_size=beams, max_new_tokens=new_tokens)
        return [(t.text, sum(len(part) for part in t.token_ids)) for t in found]


class TorchRunner(Runner):
    def __init__(self, directory: str, threads: int, target: tuple[str, int] | None = None) -> None:
        import torch
        import transformers
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        transformers.logging.set_verbosity_error()
        self.torch = torch
        # The class config.json names (MarianMTModel, M2M100ForConditionalGeneration, ...).
        self.model = AutoModelForSeq2SeqLM.from_pretrained(directory, dtype=torch.float32).eval()
        self.hf_tokenizer = AutoTokenizer.from_pretrained(directory)
        self.target = target
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
        extra: dict[str, Any] = {"min_new_tokens": new_tokens} if fixed else {}
        if self.target is not None:  # the first of the max_new_tokens, as NLLB is run
            extra["forced_bos_token_id"] = self.target[1]
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                num_beams=beams,
                do_sample=False,
                max_new_tokens=new_tokens,
                **extra,
            )
        return [self._trim(row) for row in out[:, 1:].tolist()]  # drop the decoder start token

    def translate(self, texts: Sequence[str], beams: int, new_tokens: int) -> list[tuple[str, int]]:
        batch = self.hf_tokenizer([f"{LANGUAGE_TOKEN} {t}" for t in texts], return_tensors="pt", padding=True)
        with self.torch.inference_mode():
            out = self.model.generate(**batch, num_beams=beams, do_sample=False, max_new_tokens=new_tokens)
        rows = [self._trim(row) for row in out[:, 1:].tolist()]
        texts_out = self.hf_tokenizer.batch_decode(rows, skip_special_tokens=True)
        return [(text, len(row)) for text, row in zip(texts_out, rows, strict=True)]

    def _trim(self, row: list[int]) -> list[int]:
        """The tokens up to eos (included), without the padding of shorter beams."""
        tokens = []
        for token in row:
            if token == self.pad:
                break
            tokens.append(token)
            if token == self.eos:
                break
        return tokens


class CT2Runner(Runner):
    def __init__(
        self,
        directory: str,
        threads: int,
        compute_type: str,
        target: tuple[str, int] | None = None,
        hf_dir: str | None = None,
    ) -> None:
        import ctranslate2

        self.directory = Path(directory)
        self.hf_dir = None if hf_dir is None else Path(hf_dir)  # its source.spm and target.spm: translate()
        self.target = target
        self.translator = ctranslate2.Translator(
            directory, device="cpu", compute_type=compute_type, intra_threads=threads, inter_threads=1
        )

    def generate(self, call: Sequence[Any], beams: int, new_tokens: int, fixed: bool) -> list[list[Any]]:
        # The target code as a one-token target prefix: CTranslate2 counts it in max/min_decoding_length and
        # returns it as the hypothesis's first token, as enzh and generate() count the forced code.
        extra: dict[str, Any] = {"target_prefix": [[self.target[0]]] * len(call)} if self.target else {}
        results = self.translator.translate_batch(
            [list(s) for s in call],
            beam_size=beams,
            max_decoding_length=new_tokens,
            min_decoding_length=new_tokens if fixed else 1,
            return_end_token=True,
            max_input_length=0,
            **extra,
        )
        return [list(r.hypotheses[0]) for r in results]

    def translate(self, texts: Sequence[str], beams: int, new_tokens: int) -> list[tuple[str, int]]:
        source, target = self._pieces
        # The Marian tokenizer's layout: target token, the sentence's pieces, eos.
        tokens = [[LANGUAGE_TOKEN, *source.encode(t, out_type=str), "</s>"] for t in texts]
        results = self.translator.translate_batch(
            tokens, beam_size=beams, max_decoding_length=new_tokens, return_end_token=True, max_input_length=0
        )
        hyps = [r.hypotheses[0] for r in results]
        return [(target.decode_pieces([t for t in h if t != "</s>"]), len(h)) for h in hyps]

    @functools.cached_property
    def _pieces(self) -> tuple[Any, Any]:
        """The HF directory's SentencePiece models (source, target), loaded on first use."""
        import sentencepiece

        if self.hf_dir is None:
            raise BenchError("translating text with CTranslate2 needs the HF directory's SentencePiece models")
        source, target = (
            sentencepiece.SentencePieceProcessor(model_file=str(self.hf_dir / name))
            for name in ("source.spm", "target.spm")
        )
        return source, target

    def to_ids(self, hyps: list[list[Any]]) -> list[list[int]]:
        index = {t: i for i, t in enumerate(ct2_vocabulary(self.directory))}
        return [[index.get(t, -1) for t in h] for h in hyps]


def ct2_vocabulary(directory: Path) -> list[str]:
    path = directory / "shared_vocabulary.json"
    if path.is_file():
        return list(json.loads(path.read_text(encoding="utf-8")))
    text = directory / "shared_vocabulary.txt"
    return text.read_text(encoding="utf-8").splitlines()


def make_runner(
    engine_id: str, directory: str, threads: int, target: tuple[str, int] | None = None, hf_dir: str | None = None
) -> Runner:
    """``hf_dir``: the HF model the engine's directory was made from (CTranslate2 reads its tokenizer there)."""
    engine = ENGINE_BY_ID[engine_id]
    if engine.kind == "enzh":
        return EnzhRunner(directory, threads, target)
    if engine.kind == "torch":
        return TorchRunner(directory, threads, target)
    return CT2Runner(directory, threads, engine.precision, target, hf_dir)


def job_calls(engine_id: str, case: Case, directory: Path) -> list[list[list[Any]]]:
    """A case's calls as the engine takes them: source ids, or for CTranslate2 the token strings of its own
    vocabulary at the same ids."""
    if ENGINE_BY_ID[engine_id].kind != "ct2":
        return [[list(s) for s in call] for call in case.calls]
    vocabulary = ct2_vocabulary(directory)
    return [[[vocabulary[i] for i in s] for s in call] for call in case.calls]
