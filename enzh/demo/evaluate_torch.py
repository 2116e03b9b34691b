"""Quality of a model directory on the held-out demo test set through PyTorch ``generate()``.

``python -m enzh.demo.evaluate_torch MODEL_DIR [--test TSV] [--beams 1 4]`` prints exact match, chrF and
BLEU (sacrebleu, ``tokenize="zh"`` for Chinese output, ``13a`` for English) for greedy and beam search. The
direction comes from the model's tokenizer_config.json; English sources get the ``>>cmn_Hans<<`` prefix.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from enzh.demo import DEFAULT_DIRECTION, Direction, direction_of
from enzh.demo.corpus import DEFAULT_TEST_SEED, generate_pairs, read_tsv
from enzh.demo.tokenizers import with_lang_token

__all__ = ["main", "score", "test_pairs", "translate"]

MAX_LENGTH = 128  # generous for this language (targets are at most ~30 tokens)


def test_pairs(
    path: str | Path | None = None, n: int = 1000, direction: Direction = DEFAULT_DIRECTION
) -> list[tuple[str, str]]:
    """The held-out (source, reference) pairs: from a TSV file (source first), else generated (n distinct
    test-split pairs of the test seed, in ``direction``)."""
    if path is not None:
        return read_tsv(path)
    return direction.orient(generate_pairs(n, DEFAULT_TEST_SEED, "test", unique=True))


def score(hyps: Sequence[str], refs: Sequence[str], target: str = "zh") -> dict[str, float]:
    """Exact match (%), chrF and BLEU (sacrebleu; its zh tokenizer for Chinese ``target``, 13a otherwise) of
    hypotheses against references."""
    import sacrebleu

    exact = 100.0 * sum(h == r for h, r in zip(hyps, refs, strict=True)) / max(1, len(refs))
    chrf = sacrebleu.corpus_chrf(list(hyps), [list(refs)]).score
    bleu = sacrebleu.corpus_bleu(list(hyps), [list(refs)], tokenize="zh" if target == "zh" else "13a").score
    return {"exact": exact, "chrf": chrf, "bleu": bleu}


def translate(
    model: Any,
    tokenizer: Any,
    sentences: Sequence[str],
    *,
    num_beams: int = 1,
    batch_size: int = 64,
    direction: Direction = DEFAULT_DIRECTION,
) -> list[str]:
    import torch

    out: list[str] = []
    for start in range(0, len(sentences), batch_size):
        chunk = [with_lang_token(s, direction) for s in sentences[start : start + batch_size]]
        batch = tokenizer(chunk, return_tensors="pt", padding=True)
        with torch.inference_mode():
            ids = model.generate(**batch, num_beams=num_beams, do_sample=False, max_length=MAX_LENGTH)
        out += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return out


def evaluate(
    model_dir: str | Path,
    pairs: Sequence[tuple[str, str]],
    beams: Sequence[int] = (1, 4),
    *,
    threads: int = 2,
    show_errors: int = 0,
) -> dict[int, dict[str, float]]:
    import warnings

    import torch
    from transformers import MarianMTModel, MarianTokenizer

    torch.set_num_threads(threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        tokenizer = MarianTokenizer.from_pretrained(str(model_dir))
    model = MarianMTModel.from_pretrained(str(model_dir)).eval()
    way = direction_of(model_dir)
    sources = [source for source, _ in pairs]
    refs = [ref for _, ref in pairs]
    results: dict[int, dict[str, float]] = {}
    for b in beams:
        t0 = time.time()
        hyps = translate(model, tokenizer, sources, num_beams=b, direction=way)
        results[b] = score(hyps, refs, way.target) | {"seconds": time.time() - t0}
        if show_errors:
            wrong = [(s, h, r) for s, h, r in zip(sources, hyps, refs, strict=True) if h != r]
            for s, h, r in wrong[:show_errors]:
                print(f"  beam {b}: {s}\n    got  {h}\n    want {r}", file=sys.stderr)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m enzh.demo.evaluate_torch",
        description="Exact match / chrF / BLEU of a model directory on the demo test set, through PyTorch.",
    )
    parser.add_argument("model_dir", metavar="MODEL_DIR")
    parser.add_argument("--test", metavar="TSV", help="test set (source<TAB>reference); default: generated")
    parser.add_argument("-n", type=int, default=1000, help="generated test size when --test is not given")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 4], help="beam sizes (default: 1 4)")
    parser.add_argument("--errors", type=int, default=0, help="print this many wrong translations per beam")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    way = direction_of(args.model_dir)
    pairs = test_pairs(args.test, args.n, way)
    results = evaluate(args.model_dir, pairs, args.beams, threads=args.threads, show_errors=args.errors)
    prefix = f", sources prefixed with {way.language_token}" if way.language_token else ""
    print(f"{len(pairs)} held-out sentences ({way.name}), PyTorch generate(){prefix}")
    for b, r in results.items():
        name = "greedy" if b == 1 else f"beam {b}"
        print(
            f"{name:8s} exact match {r['exact']:5.1f} %   chrF {r['chrf']:5.1f}   BLEU {r['bleu']:5.1f}"
            f"   ({r['seconds']:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
