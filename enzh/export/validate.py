"""Check an exported model directory against the PyTorch model it came from.

Two checks, both reporting every output at once:

* numerics: encoder cross keys/values, decoder logits at every teacher-forced step and the self-attention
  cache, and (when the directory has the aligner) its cross-attention weights against ``output_attentions``,
  on several batches with padding; max abs difference per output against ``atol``;
* tokens: greedy and beam search token ids against ``transformers`` ``generate()`` on a sentence set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from enzh.export.samples import random_source_batches, token_range
from enzh.runtime.batching import pad_batch
from enzh.runtime.errors import ExportError
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
    """Each output's error against a PyTorch float64 reference of the same inputs, for ONNX Runtime and for
    PyTorch float32 itself.

    Float32 arithmetic has an error of its own that grows with the model's activations (large weights make
    logits differ from float64 by 1e-2 in PyTorch alone). A fixed tolerance would judge that noise, so an output
    passes when ONNX Runtime's error is at most ``factor`` times PyTorch float32's error plus ``atol`` (the floor
    for outputs where both are tiny) plus ``rtol`` times the largest reference value. A real export bug (a wrong
    scale, a missing bias) is orders of magnitude above that.
    """

    atol: float
    factor: float = 4.0
    rtol: float = 1e-5
    ort_error: dict[str, float] = field(default_factory=dict)
    torch_error: dict[str, float] = field(default_factory=dict)
    max_ref: dict[str, float] = field(default_factory=dict)

    def record(self, name: str, ours: np.ndarray, torch32: np.ndarray, reference: np.ndarray) -> None:
        """Record one comparison: ONNX Runtime's ``ours`` and PyTorch float32 against the float64 reference."""
        self.ort_error[name] = max(self.ort_error.get(name, 0.0), _max_abs_diff(ours, reference))
        self.torch_error[name] = max(self.torch_error.get(name, 0.0), _max_abs_diff(torch32, reference))
        ref = float(np.max(np.abs(reference))) if reference.size else 0.0
        self.max_ref[name] = max(self.max_ref.get(name, 0.0), ref)

    @property
    def max_diff(self) -> dict[str, float]:
        """ONNX Runtime's max abs error per output (against float64)."""
        return self.ort_error

    def tolerance(self, name: str) -> float:
        return self.factor * self.torch_error[name] + self.atol + self.rtol * self.max_ref[name]

    def passed(self, name: str) -> bool:
        return self.ort_error[name] <= self.tolerance(name)

    @property
    def ok(self) -> bool:
        return all(self.passed(name) for name in self.ort_error)

    def format(self) -> str:
        lines = [
            "max abs error against PyTorch float64 (tolerance = "
            f"{self.factor:g} x torch float32's error + {self.atol:g} + {self.rtol:g} x max |ref|):",
            f"{'output':<16} {'onnxruntime':>12} {'torch fp32':>12} {'tolerance':>10} {'max |ref|':>10}  status",
        ]
        for name, error in self.ort_error.items():
            lines.append(
                f"{name:<16} {error:>12.3e} {self.torch_error[name]:>12.3e} {self.tolerance(name):>10.2e} "
                f"{self.max_ref[name]:>10.3g}  {'ok' if self.passed(name) else 'FAIL'}"
            )
        return "\n".join(lines)


def _max_abs_diff(ours: np.ndarray, reference: np.ndarray) -> float:
    if ours.shape != reference.shape:
        return float("inf")
    return float(np.max(np.abs(ours.astype(np.float64) - reference.astype(np.float64)))) if ours.size else 0.0


def _random_batches(vocab: int, special: dict[str, int], max_positions: int, seed: int = 0) -> list[np.ndarray]:
    """Source batches with padding: batch sizes 1..4, lengths from 1 token up to the position limit."""
    shapes = [(1, 1, 1), (3, 1, 7), (4, 1, 23), (2, 1, min(max_positions, 64)), (1, 1, max_positions)]
    rng = np.random.default_rng(seed)
    low, high = token_range(special, vocab)
    pad, eos = special["pad"], special["eos"]
    batches = random_source_batches(rng, shapes, pad=pad, eos=eos, low=low, high=high - 1, longest_first=True)
    return list(batches)


def check_numerics(
    directory: Path,
    model: Any,
    *,
    atol: float = 1e-4,
    factor: float = 4.0,
    rtol: float = 1e-5,
    decode_steps: int = 12,
    seed: int = 0,
) -> NumericReport:
    """Teacher-forced comparison of every graph output, and of PyTorch float32, with PyTorch float64."""
    import copy

    import torch

    manifest = Manifest.load(directory)
    sessions = ModelSessions(Path(directory), manifest, RuntimeOptions(verify_hashes=False))
    reference_model = copy.deepcopy(model).double().eval()
    ids_ = manifest.special_ids
    report = NumericReport(atol=atol, factor=factor, rtol=rtol)
    vocab = int(manifest.architecture["source_vocab_size"])
    target_vocab = int(manifest.architecture["target_vocab_size"])
    # Cross keys are [B, H, S, dh] (older exports: [B, H, dh, S]); compared as PyTorch's [B, S, H, dh].
    key_dims = sessions.encoder.get_outputs()[1].shape
    key_axes = (0, 2, 1, 3) if key_dims[2] == "src_len" else (0, 3, 1, 2)
    rng = np.random.default_rng(seed + 1)
    target_low, target_high = token_range(ids_, target_vocab)
    for src in _random_batches(vocab, ids_, manifest.max_positions, seed):
        mask = (src != ids_["pad"]).astype(np.int64)
        steps = min(decode_steps, manifest.max_positions)
        dec_in = np.concatenate(
            [
                np.full((src.shape[0], 1), ids_["decoder_start"]),
                rng.integers(target_low, target_high, (src.shape[0], steps - 1)),
            ],
            axis=1,
        ).astype(np.int64)
        inputs = {
            "input_ids": torch.from_numpy(src),
            "attention_mask": torch.from_numpy(mask),
            "decoder_input_ids": torch.from_numpy(dec_in),
        }
        with torch.no_grad():
            torch32 = _teacher_forced(model, inputs, sessions.heads)
            torch64 = _teacher_forced(reference_model, inputs, sessions.heads)
        encoded = sessions.encode(src, mask)
        # Padded source positions are masked out in attention, so only real positions must agree.
        keep = mask.astype(bool)
        for i in range(sessions.layers):
            ours_k = np.transpose(encoded.cross[2 * i], key_axes)[keep]
            ours_v = np.transpose(encoded.cross[2 * i + 1], (0, 2, 1, 3))[keep]
            report.record("cross_key", ours_k, torch32["cross_key"][i][keep], torch64["cross_key"][i][keep])
            report.record("cross_value", ours_v, torch32["cross_value"][i][keep], torch64["cross_value"][i][keep])
        decoder = sessions.decoder_for(encoded)
        for t in range(dec_in.shape[1]):
            step = decoder.step(dec_in[:, t], top_k=4)
            assert step.logits is not None
            for name, ours in (("logits", step.logits), ("log_probs", step.log_probs)):
                report.record(name, ours, torch32[name][:, t], torch64[name][:, t])
            # The top-k output: the k largest log-probabilities, in order (ids may swap only on near-ties).
            report.record("top_log_probs", step.top_log_probs, torch32["top4"][:, t], torch64["top4"][:, t])
        for i in range(sessions.layers):
            for kind in ("key", "value"):
                name = f"present_{kind}"
                ours = decoder.past[2 * i + (kind == "value")]
                report.record(name, ours, torch32[name][i], torch64[name][i])
        if manifest.has_aligner:
            layers, heads = manifest.alignment["layers"], manifest.alignment["heads"]
            with torch.no_grad():
                attention32 = _cross_attention(model, inputs, layers, heads)
                attention64 = _cross_attention(reference_model, inputs, layers, heads)
            report.record("cross_attention", sessions.align(src, mask, dec_in), attention32, attention64)
    return report


def _cross_attention(model: Any, inputs: dict[str, Any], layers: list[int], heads: list[int]) -> np.ndarray:
    """PyTorch's cross-attention weights (``output_attentions``, eager attention: SDPA returns none), the mean over
    ``heads`` of ``layers`` as the aligner computes it: ``[B, T, S]``."""
    import torch

    implementation = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        out = model(**inputs, output_attentions=True)
    finally:
        model.set_attn_implementation(implementation)
    chosen = torch.stack([out.cross_attentions[i][:, heads] for i in layers])  # [layers, B, heads, T, S]
    result: np.ndarray = chosen.mean(dim=(0, 2)).numpy()
    return result


def _teacher_forced(model: Any, inputs: dict[str, Any], heads: int) -> dict[str, Any]:
    """Every output the graphs compute, from one teacher-forced forward pass of ``model`` (numpy arrays)."""
    import torch

    out = model(**inputs, use_cache=True)
    logits = out.logits
    log_probs = torch.log_softmax(logits, dim=-1)
    enc_h = out.encoder_last_hidden_state
    batch, length = inputs["input_ids"].shape
    cross_key, cross_value = [], []
    for layer in model.model.decoder.layers:
        cross_key.append(layer.encoder_attn.k_proj(enc_h).view(batch, length, heads, -1).numpy())
        cross_value.append(layer.encoder_attn.v_proj(enc_h).view(batch, length, heads, -1).numpy())
    cache = out.past_key_values.self_attention_cache
    return {
        "logits": logits.numpy(),
        "log_probs": log_probs.numpy(),
        "top4": torch.topk(log_probs, 4, dim=-1).values.numpy(),
        "cross_key": cross_key,
        "cross_value": cross_value,
        "present_key": [layer.keys.numpy() for layer in cache.layers],
        "present_value": [layer.values.numpy() for layer in cache.layers],
    }


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
        lines = ["numerics (teacher-forced):", self.numerics.format(), "", "token parity (vs generate()):"]
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
    token = translator.resolve_target(None)
    # each sentence is one model input (the default source language; Marian: the default target token first)
    sources = [ids for s in sentences for piece in translator.prepare_text(s, token).sources for ids in piece]
    settings = translator.settings(max_new_tokens=max_new_tokens, target=token)
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
                    for h in translator.generate_ids(
                        group, beam_size=beams_n, max_new_tokens=max_new_tokens, target=token
                    )
                ]
                ids, mask = pad_batch(group, settings.pad_token_id)
                with torch.no_grad():
                    out = model.generate(
                        input_ids=torch.from_numpy(ids),
                        attention_mask=torch.from_numpy(mask),
                        num_beams=beams_n,
                        max_length=max_new_tokens + 1,  # counts the start token, like max_new_tokens here
                        do_sample=False,
                        bad_words_ids=[list(s) for s in settings.bad_words_ids] or None,
                        forced_bos_token_id=settings.forced_bos_token_id,
                    )
                theirs += [_strip(row, settings.eos_token_id) for row in out.tolist()]
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
    from enzh.export.families import loader_for
    from enzh.export.source import resolve_source

    precision = Manifest.load(Path(directory)).precision
    if precision != "fp32":
        raise ExportError(
            f"{directory} is an {precision} variant: validate checks an fp32 export against PyTorch to float32 "
            f"tolerance, which an {precision} variant is not meant to meet. Validate the fp32 directory it was "
            f"derived from, and measure the variant's quality with `enzh eval --model {directory}`"
        )
    local, _, _ = resolve_source(source)
    model = loader_for(local).load_model(local)
    numerics = check_numerics(Path(directory), model, atol=atol)
    parity, mismatches = check_tokens(Path(directory), model, sentences or SENTENCES)
    return ValidationReport(numerics=numerics, parity=parity, mismatches=mismatches)
