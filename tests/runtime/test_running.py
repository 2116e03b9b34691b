"""The running batch (enzh.runtime.running): sentences join a decode between steps and leave it when done, and each
gets the tokens it gets decoded alone (fp32), whatever joins or leaves beside it."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from enzh.runtime.default_model import DEMO_TEST_SET
from enzh.runtime.running import RowDecoder
from enzh.runtime.translator import Translator


def _sources(translator: Translator, count: int, seed: int = 0) -> list[list[int]]:
    """Model inputs of held-out sentences, a quarter of them long (three or four sentences joined into one)."""
    lines = [line.split("\t")[0] for line in DEMO_TEST_SET.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        if rng.random() < 0.25:
            texts.append(", and ".join(s.rstrip(".?!") for s in rng.sample(lines, rng.randint(3, 4))) + ".")
        else:
            texts.append(rng.choice(lines))
    return [translator.prepare_text(text, None).sources[0][0] for text in texts]


def _run(batch: Any, sources: list[list[int]], *, every: int, per: int) -> tuple[dict[int, Any], list[int]]:
    """Add ``per`` sources every ``every`` steps until all are in; step until all are done. The hypotheses by
    index, and the order they finished in."""
    found: dict[int, Any] = {}
    order: list[int] = []
    added = steps = 0
    while len(found) < len(sources):
        if added < len(sources) and steps % every == 0:
            batch.add(sources[added : added + per], list(range(added, min(added + per, len(sources)))))
            added += per
        for tag, hypotheses in batch.step():
            assert tag not in found
            found[tag] = hypotheses[0]
            order.append(tag)
        steps += 1
        assert steps < 2000
    assert batch.rows == 0 and batch.sentences == 0 and batch.tokens == 0
    return found, order


@pytest.mark.parametrize("beam", [1, 4])
def test_sentences_joining_mid_decode_get_their_translation_alone(demo_translator: Translator, beam: int) -> None:
    sources = _sources(demo_translator, 24)
    alone = [demo_translator.generate_ids([s], beam_size=beam)[0] for s in sources]
    batch = demo_translator.running_batch(beam_size=beam)
    assert batch is not None
    found, order = _run(batch, sources, every=3, per=2)
    assert [found[i].token_ids for i in range(len(sources))] == [h.token_ids for h in alone]
    # scores as a padded batch gives them (float rounding of the batched products, nothing more)
    np.testing.assert_allclose([found[i].score for i in range(len(sources))], [h.score for h in alone], rtol=1e-5)
    # a short sentence added after a long one leaves first: nobody waits for the batch to end
    assert order != sorted(order)


@pytest.mark.parametrize("beam", [1, 4])
def test_sentences_that_join_take_the_rows_of_those_that_left(
    demo_translator: Translator, beam: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As many sentences join as have just left: they decode in the vacant rows, so the decoder never grows past
    its first 8 sentences and (greedy) is only reordered when more than a quarter of its rows left at once; each
    sentence gets its translation alone."""
    sources = _sources(demo_translator, 30, seed=7)
    alone = [demo_translator.generate_ids([s], beam_size=beam)[0].token_ids for s in sources]
    batch = demo_translator.running_batch(beam_size=beam, one_thread=True)
    assert batch is not None
    (lane,) = batch.lanes
    reorders: list[int] = []
    original = RowDecoder.reorder
    monkeypatch.setattr(RowDecoder, "reorder", lambda self, rows: (reorders.append(1), original(self, rows))[1])
    batch.add(sources[:8], list(range(8)))
    added, widest, many_left, reordered = 8, 0, 0, 0
    found: dict[int, tuple[int, ...]] = {}
    while len(found) < len(sources):
        done = batch.step()
        found.update({tag: hypotheses[0].token_ids for tag, hypotheses in done})
        joining = min(len(done), len(sources) - added)
        if added < len(sources):
            many_left += len(done) * 4 > 8
            reordered = len(reorders)
        batch.add(sources[added : added + joining], list(range(added, added + joining)))
        added += joining
        widest = max(widest, lane._decoder.rows if lane._decoder is not None else 0)
    assert widest == 8 * beam
    if beam == 1:
        assert reordered == many_left, (reordered, many_left)
    assert [found[i] for i in range(len(sources))] == alone


def test_processors_that_read_each_row_run_per_cohort(demo_translator: Translator) -> None:
    """A repetition penalty reads every row's history: such greedy sentences are searched per cohort
    (greedy_steps) instead of in the pooled vectorized step; the same tokens as alone."""
    sources = _sources(demo_translator, 10, seed=3)
    alone = [
        h.token_ids for s in sources for h in demo_translator.generate_ids([s], beam_size=1, repetition_penalty=1.3)
    ]
    batch = demo_translator.running_batch(beam_size=1, repetition_penalty=1.3)
    assert batch is not None
    found, _ = _run(batch, sources, every=2, per=3)
    assert [found[i].token_ids for i in range(len(sources))] == alone


def test_cancelled_sentences_leave_after_the_next_step(demo_translator: Translator) -> None:
    sources = _sources(demo_translator, 6, seed=5)
    batch = demo_translator.running_batch(beam_size=4)
    assert batch is not None
    batch.add(sources, list(range(6)))
    batch.step()
    rows = batch.rows
    assert rows == 6 * 4
    batch.cancel([1, 4])
    done = batch.step()  # the searches see the cancellation after this step
    batch.step()  # and their rows are gone before the next one
    assert batch.rows <= rows - 2 * 4
    found = {tag for tag, _ in done}
    while batch.sentences:
        found |= {tag for tag, _ in batch.step()}
    assert found == {0, 2, 3, 5}


def test_bad_sources_are_refused_before_anything_runs(demo_translator: Translator) -> None:
    batch = demo_translator.running_batch(beam_size=1)
    assert batch is not None
    with pytest.raises(ValueError, match="source 1 has 0 tokens; the model accepts 1..512"):
        batch.add([[5, 0], []], ["a", "b"])
    with pytest.raises(ValueError, match="add\\(\\) got 1 tags for 2 sources"):
        batch.add([[5, 0], [6, 0]], ["a"])
    assert batch.rows == 0 and batch.sentences == 0


def test_an_old_decoder_cannot_join_mid_decode_until_upgraded(demo_dir: Path, tmp_path: Path) -> None:
    """A decoder exported before per-row positions (position [1]) gives no running batch (the service then
    batches dynamically); ``python -m enzh.export.upgrade`` rewrites it, after which it can, with the same
    numbers for position [1] as before."""
    onnx = pytest.importorskip("onnx")
    from enzh.export.upgrade import has_row_positions, upgrade_directory
    from enzh.runtime.manifest import Manifest, describe_files

    old = tmp_path / "old"
    shutil.copytree(demo_dir, old)
    model = onnx.load(str(old / "decoder.onnx"), load_external_data=False)
    assert has_row_positions(model)
    _downgrade(model)
    (old / "decoder.onnx").write_bytes(model.SerializeToString())
    manifest = Manifest.load(old)
    manifest.files["decoder.onnx"] = describe_files(old, ["decoder.onnx"])["decoder.onnx"]
    manifest.save(old)
    translator = Translator.load(old)
    sources = _sources(translator, 4, seed=7)
    before = translator.generate_ids(sources, beam_size=2)
    assert translator.running_batch(beam_size=1) is None
    assert upgrade_directory(old) is True
    assert upgrade_directory(old) is False  # already done
    upgraded = Translator.load(old)
    assert [(h.token_ids, h.score) for h in upgraded.generate_ids(sources, beam_size=2)] == [
        (h.token_ids, h.score) for h in before
    ]
    batch = upgraded.running_batch(beam_size=1)
    assert batch is not None
    found, _ = _run(batch, sources, every=2, per=1)
    assert [found[i].token_ids for i in range(4)] == [h.token_ids for h in upgraded.generate_ids(sources)]


def _downgrade(model: Any) -> None:
    """The decoder graph as enzh exported it before per-row positions: ``position [1]`` straight into the lookup,
    total length = position + 1."""
    graph = model.graph
    column = next(n for n in graph.node if n.op_type == "Reshape" and n.input[0] == "position")
    longest = next(n for n in graph.node if n.op_type == "ReduceMax")
    for node in graph.node:
        node.input[:] = [
            "position" if name == column.output[0] else longest.input[0] if name == longest.output[0] else name
            for name in node.input
        ]
    graph.node.remove(column)
    graph.node.remove(longest)
    item = next(i for i in graph.input if i.name == "position")
    item.type.tensor_type.shape.dim[0].dim_value = 1


@pytest.mark.usefixtures("one_torch_thread")
def test_a_multilingual_family_joins_mid_decode(tmp_path_factory: pytest.TempPathFactory) -> None:
    """M2M100: the target language forced as the first token (not pooled: its first step differs) and pad-aware
    positions; the same tokens as alone."""
    pytest.importorskip("torch")
    from enzh.export.pipeline import ExportOptions, export
    from enzh.tools.models import build_tiny_multilingual

    hf = build_tiny_multilingual(tmp_path_factory.mktemp("hf-m2m"), "m2m100", seed=1, eos_bias=4.0)
    out = tmp_path_factory.mktemp("onnx-m2m")
    export(str(hf), out, ExportOptions(force=True, progress=False))
    translator = Translator.load(out)
    target = translator.resolve_target("zh")
    texts = ["The weather is nice today.", "Hello", "I like tea", "Where is the train station?", "a"]
    sources = [translator.prepare_text(t, target, "en").sources[0][0] for t in texts]
    for beam in (1, 3):
        alone = [
            translator.generate_ids([s], beam_size=beam, target=target, max_new_tokens=None)[0].token_ids
            for s in sources
        ]
        batch = translator.running_batch(beam_size=beam, target=target)
        assert batch is not None
        found, _ = _run(batch, sources, every=2, per=2)
        assert [found[i].token_ids for i in range(len(sources))] == alone
