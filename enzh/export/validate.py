"""Check an exported model directory against the PyTorch model it came from.

Two checks, both reporting every output at once:

* numerics: encoder cross keys/values, decoder logits at every teacher-forced step and the self-attention
  cache, on several batches with padding; max abs difference per output against ``atol``;
* tokens: greedy and beam search token ids against ``transformers`` ``generate()`` on a sentence set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from enzh.runtime.batching import pad_batch
from enzh.runtime.manifest import Manifest
from enzh.runtime.options import RuntimeOptions
from enzh.runtime.sessions import ModelSessions

SENTENCES = [
    "The weather is nice today.",
    "I would like a cup of coffee.",
    "The meeting has been postponed.",
    "Where is the train station?",
    "She has lived in Shanghai for three years, and she still loves the food there.",
    "Please send me the report before Friday.",
    "Hello!",
    "How much does this book cost?",
    "My brother is taller than me.",
    "We visited the museum on March 5, 2024.",
    "The children are playing in the park.",
    "Could you speak more slowly, please?",
]


@dataclass
class NumericReport:
    """Max abs difference per output; an output passes when diff <= atol + rtol * max|reference|."""

    atol: float
    rtol: float = 1e-5
    max_diff: dict[str, float] = field(default_factory=dict)
    max_ref: dict[str, float] = field(default_factory=dict)

    def record(self, name: str, ours: np.ndarray, reference: np.ndarray) -> None:
        if ours.shape != reference.shape:
            self.max_diff[name] = float("inf")
            self.max_ref.setdefault(name, 0.0)
            return
        diff = float(np.max(np.abs(ours.astype(np.float64) - reference.astype(np.float64)))) if ours.size else 0.0
        ref = float(np.max(np.abs(reference))) if reference.size else 0.0
        self.max_diff[name] = max(self.max_diff.get(name, 0.0), diff)
        self.max_ref[name] = max(self.max_ref.get(name, 0.0), ref)

    def tolerance(self, name: str) -> float:
        return self.atol + self.rtol * self.max_ref[name]

    @property
    def ok(self) -> bool:
        return all(d <= self.tolerance(n) for n, d in self.max_diff.items())

    def format(self) -> str:
        lines = [f"{'output':<16} {'max abs diff':>12} {'tolerance':>10} {'max |ref|':>10}  status"]
        for name, diff in self.max_diff.items():
            tol = self.tolerance(name)
            lines.append(
                f"{name:<16} {diff:>12.3e} {tol:>10.2e} {self.max_ref[name]:>10.3g}  {'ok' if diff <= tol else 'FAIL'}"
            )
        return "\n".join(lines)


def _random_batches(vocab: int, pad: int, eos: int, max_positions: int, seed: int = 0) -> list[np.ndarray]:
    """Source batches with padding: batch sizes 1..4, lengths from 1 token up to the position limit."""
    rng = np.random.default_rng(seed)
    batches = []
    for batch, longest in ((1, 1), (3, 7), (4, 23), (2, min(max_positions, 64)), (1, max_positions)):
        lengths = [longest, *rng.integers(1, longest + 1, size=batch - 1)]
        ids = np.full((batch, longest), pad, dtype=np.int64)
        for row, n in enumerate(lengths):
            ids[row, : n - 1] = rng.integers(2, min(vocab, pad) - 1, size=n - 1)
            ids[row, n - 1] = eos
        batches.append(ids)
    return batches


def check_numerics(
    directory: Path,
    model: Any,
    *,
    atol: float = 1e-4,
    rtol: float = 1e-5,
    decode_steps: int = 12,
    seed: int = 0,
) -> NumericReport:
    """Teacher-forced comparison of every graph output with the PyTorch model."""
    import torch

    manifest = Manifest.load(directory)
    sessions = ModelSessions(Path(directory), manifest, RuntimeOptions(verify_hashes=False))
    ids_ = manifest.special_ids
    report = NumericReport(atol=atol, rtol=rtol)
    vocab = int(manifest.architecture["source_vocab_size"])
    target_vocab = int(manifest.architecture["target_vocab_size"])
    rng = np.random.default_rng(seed + 1)
    for src in _random_batches(vocab, ids_["pad"], ids_["eos"], manifest.max_positions, seed):
        mask = (src != ids_["pad"]).astype(np.int64)
        steps = min(decode_steps, manifest.max_positions)
        dec_in = np.concatenate(
            [
                np.full((src.shape[0], 1), ids_["decoder_start"]),
                rng.integers(2, target_vocab - 1, (src.shape[0], steps - 1)),
            ],
            axis=1,
        ).astype(np.int64)
        with torch.no_grad():
            out = model(
                input_ids=torch.from_numpy(src),
                attention_mask=torch.from_numpy(mask),
                decoder_input_ids=torch.from_numpy(dec_in),
                use_cache=True,
            )
        encoded = sessions.encode(src, mask)
        enc_h = out.encoder_last_hidden_state
        with torch.no_grad():
            for i, layer in enumerate(model.model.decoder.layers):
                k = layer.encoder_attn.k_proj(enc_h).view(src.shape[0], src.shape[1], sessions.heads, -1)
                v = layer.encoder_attn.v_proj(enc_h).view(src.shape[0], src.shape[1], sessions.heads, -1)
                # Padded source positions are masked out in attention, so only real positions must agree.
                keep = torch.from_numpy(mask.astype(bool))
                ours_k = np.transpose(encoded.cross[2 * i], (0, 3, 1, 2))
                ours_v = np.transpose(encoded.cross[2 * i + 1], (0, 2, 1, 3))
                report.record("cross_key", ours_k[mask.astype(bool)], k[keep].numpy())
                report.record("cross_value", ours_v[mask.astype(bool)], v[keep].numpy())
        decoder = sessions.decoder_for(encoded)
        for t in range(dec_in.shape[1]):
            step = decoder.step(dec_in[:, t], top_k=4)
            reference = out.logits[:, t]
            assert step.logits is not None
            report.record("logits", step.logits, reference.numpy())
            report.record("log_probs", step.log_probs, torch.log_softmax(reference, dim=-1).numpy())
            # The top-k output: the k largest log-probabilities, in order (ids may swap only on near-ties).
            report.record("top_log_probs", step.top_log_probs, torch.topk(reference.log_softmax(-1), 4).values.numpy())
        cache = out.past_key_values.self_attention_cache
        for i in range(sessions.layers):
            report.record("present_key", decoder.past[2 * i], cache.layers[i].keys.numpy())
            report.record("present_value", decoder.past[2 * i + 1], cache.layers[i].values.numpy())
    return report


@dataclass
class ValidationReport:
    """Numerics plus token parity of an exported directory against its HF model."""

    numerics: NumericReport
    parity: dict[str, tuple[int, int]] = field(default_factory=dict)  # case -> (identical, total)
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.numerics.ok and all(same == total for same, total in self.parity.values())

    def format(self) -> str:
        lines = ["numerics (teacher-forced, vs PyTorch):", self.numerics.format(), "", "token parity (vs generate()):"]
        for case, (same, total) in self.parity.items():
            lines.append(f"  {case:<24} {same}/{total} identical  {'ok' if same == total else 'FAIL'}")
        lines += [f"  mismatch: {m}" for m in self.mismatches[:10]]
        lines.append("RESULT: " + ("ok" if self.ok else "FAIL"))
        return "\n".join(lines)


def check_tokens(
    directory: Path, model: Any, sentences: list[str], *, max_new_tokens: int = 32, beams: tuple[int, ...] = (1, 4)
) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Greedy and beam token ids of the ONNX translator vs ``model.generate()``, batched and one by one."""
    import torch

    from enzh.runtime.translator import Translator

    translator = Translator.load(directory, verify_hashes=False)
    token = translator.adapter.resolve_target(None)
    sources = [translator.tokenizer.encode(translator.adapter.with_language_token(s, token)) for s in sentences]
    parity: dict[str, tuple[int, int]] = {}
    mismatches: list[str] = []
    for beams_n in beams:
        for mode in ("batched", "one by one"):
            groups = [sources] if mode == "batched" else [[s] for s in sources]
            ours: list[tuple[int, ...]] = []
            theirs: list[tuple[int, ...]] = []
            for group in groups:
                ours += [
                    h.token_ids
                    for h in translator.generate_ids(group, beam_size=beams_n, max_new_tokens=max_new_tokens)
                ]
                ids, mask = pad_batch(group, translator.adapter.pad_token_id)
                with torch.no_grad():
                    out = model.generate(
                        input_ids=torch.from_numpy(ids),
                        attention_mask=torch.from_numpy(mask),
                        num_beams=beams_n,
                        max_length=max_new_tokens + 1,  # counts the start token, like max_new_tokens here
                        do_sample=False,
                        bad_words_ids=[list(s) for s in translator.adapter.generation["bad_words_ids"]],
                    )
                theirs += [_strip(row, translator.adapter.eos_token_id) for row in out.tolist()]
            case = f"{'greedy' if beams_n == 1 else f'beam {beams_n}'}, {mode}"
            same = sum(a == b for a, b in zip(ours, theirs, strict=True))
            parity[case] = (same, len(ours))
            mismatches += [
                f"{case}: {sentences[i]!r}" for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b
            ]
    return parity, mismatches


def _strip(row: list[int], eos: int) -> tuple[int, ...]:
    ids = row[1:]  # generate() returns the decoder start token first and pads after eos
    return tuple(ids[: ids.index(eos) + 1] if eos in ids else ids)


def validate_directory(
    directory: str | Path, source: str, *, atol: float = 1e-4, sentences: list[str] | None = None
) -> ValidationReport:
    from enzh.export.pipeline import load_model, resolve_source

    local, _, _ = resolve_source(source)
    model = load_model(local)
    numerics = check_numerics(Path(directory), model, atol=atol)
    parity, mismatches = check_tokens(Path(directory), model, sentences or SENTENCES)
    return ValidationReport(numerics=numerics, parity=parity, mismatches=mismatches)
