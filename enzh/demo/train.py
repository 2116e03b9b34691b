"""Train a demo MarianMTModel (English->Chinese, or Chinese->English) on the generated corpus, on CPU, reproducibly.

``enzh train-demo OUT_DIR [--direction zh-en]`` (or ``python -m enzh.demo.train OUT_DIR``) writes a complete HF
model directory:
``model.safetensors``, ``config.json``, ``generation_config.json``, ``source.spm``, ``target.spm``,
``vocab.json``, ``tokenizer_config.json``, ``special_tokens_map.json``. The shape follows opus-mt-en-zh
(swish, static sinusoidal positions, scale_embedding, embeddings shared by encoder, decoder and output,
``</s>`` = 0 = eos, decoder start = pad = last id), only smaller.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from enzh.demo import DEFAULT_DIRECTION, Direction, direction
from enzh.demo.corpus import DEFAULT_TRAIN_SEED, generate_pairs
from enzh.demo.tokenizers import EOS, PAD, UNK, build_tokenizers

__all__ = ["MODEL_SHAPE", "encode_pairs", "main", "train_demo"]

# The recipe of the shipped models (see assets/demo-hf/README.md and assets/demo-zh-en-hf/README.md).
DEFAULT_SEED = 0
DEFAULT_STEPS = 2400
BATCH_SIZE = 96
PEAK_LR = 1.5e-3
WARMUP = 300
LABEL_SMOOTHING = 0.1
MODEL_SHAPE: dict[str, Any] = {
    "d_model": 256,
    "encoder_layers": 3,
    "decoder_layers": 3,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 512,
    "decoder_ffn_dim": 512,
    "dropout": 0.05,
    "attention_dropout": 0.0,
    "activation_dropout": 0.0,
}


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class _Encoder:
    """Fast batch encoding that gives the same ids as transformers.MarianTokenizer for this vocab layout."""

    def __init__(self, model_dir: Path, direction: Direction = DEFAULT_DIRECTION) -> None:
        import sentencepiece as spm

        self.vocab: dict[str, int] = json.loads((model_dir / "vocab.json").read_text(encoding="utf-8"))
        self.src = spm.SentencePieceProcessor(model_file=str(model_dir / "source.spm"))
        self.tgt = spm.SentencePieceProcessor(model_file=str(model_dir / "target.spm"))
        self.eos, self.unk, self.pad = self.vocab[EOS], self.vocab[UNK], self.vocab[PAD]
        token = direction.language_token
        self.prefix = [] if token is None else [self.vocab[token]]

    def _ids(self, sp: Any, texts: Sequence[str]) -> list[list[int]]:
        get, unk = self.vocab.get, self.unk
        return [[get(p, unk) for p in pieces] + [self.eos] for pieces in sp.encode(list(texts), out_type=str)]

    def source(self, texts: Sequence[str]) -> list[list[int]]:
        """``>>cmn_Hans<< text`` ids, as MarianTokenizer gives them (the language code is its own token; none for a
        direction without language tokens)."""
        return [[*self.prefix, *ids] for ids in self._ids(self.src, texts)]

    def target(self, texts: Sequence[str]) -> list[list[int]]:
        return self._ids(self.tgt, texts)


def encode_pairs(
    model_dir: str | Path, pairs: Sequence[tuple[str, str]], direction: Direction = DEFAULT_DIRECTION
) -> tuple[list[list[int]], list[list[int]]]:
    """(source ids, target ids) of (source, target) pairs with the tokenizer files in ``model_dir``."""
    enc = _Encoder(Path(model_dir), direction)
    return enc.source([source for source, _ in pairs]), enc.target([target for _, target in pairs])


def _batches(src: list[list[int]], tgt: list[list[int]], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Index batches of similar source length (less padding), in random order."""
    order = list(range(len(src)))
    rng.shuffle(order)
    chunk = batch_size * 50
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: (len(src[i]), len(tgt[i])))
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return [b for b in batches if len(b) == batch_size]


def _tensors(idx: list[int], src: list[list[int]], tgt: list[list[int]], pad: int) -> tuple[Any, Any, Any, Any]:
    import torch

    s_len = max(len(src[i]) for i in idx)
    t_len = max(len(tgt[i]) for i in idx)
    input_ids = torch.full((len(idx), s_len), pad, dtype=torch.long)
    attention = torch.zeros((len(idx), s_len), dtype=torch.long)
    labels = torch.full((len(idx), t_len), -100, dtype=torch.long)
    dec_in = torch.full((len(idx), t_len), pad, dtype=torch.long)
    for row, i in enumerate(idx):
        s, t = src[i], tgt[i]
        input_ids[row, : len(s)] = torch.tensor(s)
        attention[row, : len(s)] = 1
        labels[row, : len(t)] = torch.tensor(t)
        dec_in[row, 1 : len(t)] = torch.tensor(t[:-1])  # decoder starts from pad, like opus-mt
    return input_ids, attention, dec_in, labels


# Keys of opus-mt-en-zh's config.json that MarianConfig keeps as plain attributes (Marian's positions are
# always static sinusoids in transformers); written for parity with the reference config.
_REFERENCE_FLAGS: dict[str, Any] = {
    "static_position_embeddings": True,
    "normalize_before": False,
    "normalize_embedding": False,
    "add_final_layer_norm": False,
}


def model_config(vocab_size: int) -> Any:
    from transformers import MarianConfig

    pad = vocab_size - 1
    return MarianConfig(
        vocab_size=vocab_size,
        decoder_vocab_size=vocab_size,
        max_position_embeddings=512,
        activation_function="swish",
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=pad,
        decoder_start_token_id=pad,
        eos_token_id=0,
        bos_token_id=0,
        forced_eos_token_id=0,
        init_std=0.02,
        use_cache=True,
        architectures=["MarianMTModel"],
        **MODEL_SHAPE,
        **_REFERENCE_FLAGS,
    )


def generation_config(pad: int) -> dict[str, Any]:
    """As opus-mt-en-zh's generation_config.json, with this vocabulary's pad id."""
    return {
        "bad_words_ids": [[pad]],
        "bos_token_id": 0,
        "decoder_start_token_id": pad,
        "eos_token_id": 0,
        "forced_eos_token_id": 0,
        "max_length": 512,
        "num_beams": 4,
        "pad_token_id": pad,
        "renormalize_logits": True,
    }


def _lr(step: int, steps: int) -> float:
    if step < WARMUP:
        return PEAK_LR * (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, steps - WARMUP)
    return PEAK_LR * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * progress)))


def default_threads() -> int:
    """2 torch threads on an idle 2-core machine; 1 when other processes keep the CPU busy.

    With 2 threads on a loaded machine every parallel region waits for the descheduled thread, which made
    a training step 3x slower than with 1 thread when measured here.
    """
    cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:  # pragma: no cover - platforms without getloadavg
        busy = 0.0
    return max(1, min(2, cores) if busy < 0.8 else min(2, cores) - 1)


# One function, top to bottom: the recipe (data, tokenizers, model, schedule, checkpoint) is easier to audit whole.
def training_pairs(
    *, seed: int = DEFAULT_SEED, steps: int = DEFAULT_STEPS, batch_size: int = BATCH_SIZE
) -> list[tuple[str, str]]:
    """The (English, Chinese) pairs :func:`train_demo` trains on with these settings (the shipped demo models'
    with the defaults, in either direction): ``steps x batch_size`` pairs of corpus seed
    ``DEFAULT_TRAIN_SEED + seed``."""
    return generate_pairs(steps * batch_size, DEFAULT_TRAIN_SEED + seed, "train")


def train_demo(
    out_dir: str | Path,
    *,
    seed: int = DEFAULT_SEED,
    steps: int = DEFAULT_STEPS,
    batch_size: int = BATCH_SIZE,
    progress: bool = True,
    threads: int | None = None,
    direction: Direction = DEFAULT_DIRECTION,
) -> Path:
    """Build the tokenizers, train the model of ``direction`` for ``steps`` batches and save everything into
    ``out_dir``."""
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm
    from transformers import GenerationConfig, MarianMTModel

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    threads = threads or default_threads()
    torch.set_num_threads(threads)
    _seed_everything(seed)

    def say(msg: str) -> None:
        if progress:
            print(f"[{time.time() - t0:6.0f}s] {msg}", file=sys.stderr, flush=True)

    say(f"tokenizers -> {out}")
    vocab = build_tokenizers(out, direction=direction)
    pad = vocab[PAD]
    assert pad == len(vocab) - 1 and vocab[EOS] == 0

    n_pairs = steps * batch_size
    say(f"generating {n_pairs:,} training pairs (corpus seed {DEFAULT_TRAIN_SEED + seed}), {direction.name}")
    pairs = direction.orient(training_pairs(seed=seed, steps=steps, batch_size=batch_size))
    src, tgt = encode_pairs(out, pairs, direction)
    del pairs
    batches = _batches(src, tgt, batch_size, random.Random(seed))
    while len(batches) < steps:  # a few partial buckets were dropped: reuse from the start
        batches += batches[: steps - len(batches)]

    config = model_config(len(vocab))
    model = MarianMTModel(config)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    say(
        f"model: {n_params / 1e6:.2f} M parameters, vocab {len(vocab)}, {steps} steps of {batch_size}, "
        f"{threads} thread(s)"
    )
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optim = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=PEAK_LR,
        betas=(0.9, 0.98),
        eps=1e-9,
    )
    vocab_size = len(vocab)
    ema = None
    bar = tqdm(range(steps), desc="train-demo", disable=not progress, unit="step", dynamic_ncols=True)
    for step in bar:
        for group in optim.param_groups:
            group["lr"] = _lr(step, steps)
        input_ids, attention, dec_in, labels = _tensors(batches[step], src, tgt, pad)
        logits = model(input_ids=input_ids, attention_mask=attention, decoder_input_ids=dec_in).logits
        loss = F.cross_entropy(
            logits.view(-1, vocab_size), labels.view(-1), ignore_index=-100, label_smoothing=LABEL_SMOOTHING
        )
        optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if step % 20 == 0 or step == steps - 1:
            bar.set_postfix(loss=f"{ema:.3f}", lr=f"{_lr(step, steps):.1e}")
    bar.close()
    train_s = time.time() - t0
    say(f"trained in {train_s / 60:.1f} min; saving")

    model.eval()
    if not progress:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    model.generation_config = GenerationConfig(**generation_config(pad))
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").write_text(json.dumps(generation_config(pad), indent=2) + "\n")
    (out / "model.safetensors").chmod(0o644)  # saved through a private temp file; ship it readable
    info = {
        "seed": seed,
        "steps": steps,
        "batch_size": batch_size,
        "train_seconds": round(train_s, 1),
        "parameters": n_params,
        "vocab_size": vocab_size,
        "torch_threads": threads,
        "direction": direction.name,
    }
    say(json.dumps(info))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="enzh train-demo",
        description="Train a small demo Marian model on the generated corpus (2-core CPU: ~25 minutes).",
    )
    parser.add_argument("out_dir", metavar="OUT_DIR", help="directory to write the HF model into")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"training steps (default {DEFAULT_STEPS})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: 2, or 1 when the CPU is busy)"
    )
    parser.add_argument(
        "--direction", choices=("en-zh", "zh-en"), default="en-zh", help="the demo model to train (default en-zh)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    train_demo(
        args.out_dir,
        seed=args.seed,
        steps=args.steps,
        progress=not args.quiet,
        threads=args.threads,
        direction=direction(args.direction),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
