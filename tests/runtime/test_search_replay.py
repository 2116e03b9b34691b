"""enzh's search alone, fed ``generate()``'s own numbers: any difference is the search's, never float noise.

The other parity tests run enzh's search on logits computed separately (by ONNX Runtime, or by the torch model
in another batch layout); where two candidates are within float rounding of each other, such logits may order
them differently than ``generate()`` did. Here ``generate()`` runs with a recorder of the beams it keeps after
every step, and :class:`ReplayDecoder` serves enzh's beam search exactly the log-probabilities ``generate()``
computed for the row with the same history (``output_logits`` through torch's log_softmax, as transformers does).

Found so: an independent check reported enzh ending one token later than ``generate()`` (beam 2, min_length 6,
no_repeat_ngram_size 3, a large-weight model). Replaying 64,640 such sentences (three model kinds; large
weights, eos biases, forced eos, 12-30 new tokens) gave the search's decisions exactly every time; each mismatch
of the ONNX path came from logits 1e-4 apart in models whose candidates were closer than that.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import transformers.generation.utils as generation_utils  # noqa: E402
from test_decoding import ModelSpec, build_model, make_sources, pad_batch, settings_for  # noqa: E402

from enzh.runtime import decoding, processors  # noqa: E402
from enzh.runtime.decoding import Step  # noqa: E402
from enzh.runtime.options import DecodingSettings  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Weights at init_std 0.5 (Marian's default is 0.02): large activations, logits tens apart, near ties frequent.
LARGE = ModelSpec(22, 400, 48, 2, 4, True, True, 0.5, True, (1.0, 60.0))


class Diverged(AssertionError):
    """enzh's search kept a history that no beam of generate() has at that step."""


class Recorder:
    """Records, after every step of generate()'s beam search, the running sequences it keeps ``[B, K, len]``."""

    def __init__(self) -> None:
        self.running: list[np.ndarray] = []

    def __enter__(self) -> Recorder:
        mixin = generation_utils.GenerationMixin
        self._original = mixin._get_running_beams_for_next_iteration
        original, running = self._original, self.running

        def recorded(model: Any, **kwargs: Any) -> Any:
            out = original(model, **kwargs)
            running.append(out[0].numpy().copy())
            return out

        mixin._get_running_beams_for_next_iteration = recorded  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        generation_utils.GenerationMixin._get_running_beams_for_next_iteration = self._original  # type: ignore[method-assign]


class ReplayDecoder:
    """An IncrementalDecoder over generate()'s recorded steps: a row's scores are those of the generate() beam
    whose history equals the row's."""

    def __init__(self, log_probs: list[np.ndarray], running: list[np.ndarray], beams: int, start: int) -> None:
        self.log_probs, self.running, self.beams = log_probs, running, beams
        self.sentence = np.arange(len(running[0]))
        self.history = np.full((len(self.sentence), 1), start, dtype=np.int64)
        self.t = 0

    def reorder(self, rows: np.ndarray) -> None:
        self.sentence, self.history = self.sentence[rows], self.history[rows]

    def step(self, tokens: np.ndarray, top_k: int = 1, logits: bool = True) -> Step:
        if self.t > 0:
            self.history = np.concatenate([self.history, tokens[:, None]], axis=1)
        rows = [self._generate_row(r) for r in range(len(tokens))]
        log_probs = self.log_probs[self.t][rows].copy()
        self.t += 1
        ids = np.argsort(-log_probs, axis=1, kind="stable")[:, :top_k]
        return Step(log_probs.copy(), log_probs, np.take_along_axis(log_probs, ids, axis=1), ids)

    def _generate_row(self, row: int) -> int:
        sentence = int(self.sentence[row])
        if self.t == 0:  # every beam starts from the decoder start token
            return sentence * self.beams
        kept = self.running[self.t - 1][sentence, :, : self.history.shape[1]]
        for beam in range(self.beams):
            if np.array_equal(kept[beam], self.history[row]):
                return sentence * self.beams + beam
        raise Diverged(f"step {self.t}: sentence {sentence} kept {self.history[row].tolist()}; generate() kept {kept}")


def replay(spec: ModelSpec, sources: list[list[int]], settings: DecodingSettings) -> tuple[list[Any], list[Any]]:
    """(generate()'s (tokens, score) per sentence, enzh's search's on generate()'s own log-probabilities)."""
    ids, mask = pad_batch(spec, sources)
    with Recorder() as recorder, torch.no_grad():
        out = build_model(spec).generate(
            ids,
            attention_mask=mask,
            num_beams=settings.num_beams,
            do_sample=False,
            max_new_tokens=settings.max_length - 1,
            min_length=settings.min_length,
            no_repeat_ngram_size=settings.no_repeat_ngram_size,
            bad_words_ids=[list(s) for s in settings.bad_words_ids],
            length_penalty=settings.length_penalty,
            early_stopping=settings.early_stopping,
            return_dict_in_generate=True,
            output_scores=True,  # sequences_scores
            output_logits=True,
        )
    expected = []
    for row, sequence in enumerate(out.sequences[:, 1:].tolist()):
        while sequence and sequence[-1] == spec.pad:
            sequence.pop()
        expected.append((tuple(sequence), float(out.sequences_scores[row])))
    log_probs = [torch.log_softmax(step, dim=-1).numpy() for step in out.logits]
    decoder = ReplayDecoder(log_probs, recorder.running, settings.num_beams, settings.decoder_start_token_id)
    found = decoding.generate(decoder, len(sources), settings)
    return expected, [(h.token_ids, h.score) for h in found]


@pytest.mark.parametrize(
    ("beams", "options"),
    [
        (2, {"min_length": 6, "no_repeat_ngram_size": 3}),  # the reported settings
        (4, {"min_length": 4, "no_repeat_ngram_size": 2, "length_penalty": 0.6, "early_stopping": True}),
    ],
)
def test_search_on_generates_own_scores(beams: int, options: dict[str, Any]) -> None:
    settings = settings_for(LARGE, 30, num_beams=beams, **options)
    sources = make_sources(LARGE, 16, seed=beams)
    expected, found = replay(LARGE, sources, settings)
    assert [tokens for tokens, _ in found] == [tokens for tokens, _ in expected]
    np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], rtol=1e-6, atol=1e-6)
    # The sentences stop at different steps, min_length included (the case exercises finishing).
    lengths = [len(tokens) for tokens, _ in expected]
    assert len(set(lengths)) >= 4 and min(lengths) >= options["min_length"] - 1, lengths


def test_the_replay_catches_a_wrong_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search that forgets no_repeat_ngram_size takes decisions generate() did not: the replay says where."""
    settings = settings_for(LARGE, 30, num_beams=2, min_length=6, no_repeat_ngram_size=3)
    sources = make_sources(LARGE, 16, seed=2)
    monkeypatch.setattr(processors, "no_repeat_ngram", lambda history, scores, size: scores)
    with pytest.raises(Diverged, match="step"):
        replay(LARGE, sources, settings)
