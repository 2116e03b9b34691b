"""A small fp32 model decodes a batch's sentences in shards on several threads: same n-best lists, tokens and
scores bit for bit as one decoder over the whole batch."""

from __future__ import annotations

import os
import select
import signal
import threading

import numpy as np
import pytest

from enzh.runtime.errors import OptionsError
from enzh.runtime.options import SMALL_MODEL_PARAMETERS, RuntimeOptions
from enzh.runtime.parallel import ShardRunner, shard_sentences
from enzh.runtime.translator import Translator


def test_shards_for_each_model_and_setting():
    small = SMALL_MODEL_PARAMETERS - 1
    assert RuntimeOptions(intra_op_threads=2).shards_for(small, "fp32") == 2
    assert RuntimeOptions(intra_op_threads=3).shards_for(small, "fp32") == 3
    assert RuntimeOptions(intra_op_threads=2).shards_for(small, "int8") == 1  # per-batch activation scales
    assert RuntimeOptions(intra_op_threads=2).shards_for(77_943_296, "fp32") == 1  # large: ORT's own threads pay
    assert RuntimeOptions(intra_op_threads=1).shards_for(small, "fp32") == 1
    assert RuntimeOptions(intra_op_threads=2, serial_decoder_rows=0).shards_for(small, "fp32") == 1
    assert RuntimeOptions(intra_op_threads=1, decode_shards=2).shards_for(77_943_296, "int8") == 2
    with pytest.raises(OptionsError, match="decode_shards must be None .automatic. or a thread count >= 1"):
        RuntimeOptions(decode_shards=0)


def test_shard_sentences_deals_longest_first():
    assert [s.tolist() for s in shard_sentences([3, 9, 5, 12, 7], 2)] == [[0, 3, 4], [1, 2]]
    assert [s.tolist() for s in shard_sentences([4, 4, 4], 2)] == [[0, 2], [1]]
    assert [s.tolist() for s in shard_sentences([4], 2)] == [[0]]
    assert [s.tolist() for s in shard_sentences([1, 2, 3], 8)] == [[2], [1], [0]]


def _sources(translator: Translator, count: int) -> list[tuple[int, ...]]:
    lines = (translator.directory / "test.tsv").read_text("utf-8").splitlines()[:count]
    return [tuple(translator.tokenizer.encode(f">>cmn_Hans<< {line.split(chr(9))[0]}")) for line in lines]


@pytest.mark.parametrize("threads", [2, 3])
def test_sharded_batches_equal_one_decoder(demo_dir, threads):
    sharded = Translator.load(demo_dir, intra_op_threads=threads)
    whole = Translator.load(demo_dir, intra_op_threads=threads, decode_shards=1)
    assert sharded._shards.threads == threads and whole._shards.threads == 1
    sources = _sources(whole, 37)
    decoded_on: set[str] = set()
    encoded_on: set[str] = set()
    step = sharded.sessions.decoder_serial.run_with_iobinding
    sharded.sessions.decoder_serial.run_with_iobinding = lambda io: (
        decoded_on.add(threading.current_thread().name),
        step(io),
    )[1]
    encode = sharded.sessions.encoder_serial.run
    sharded.sessions.encoder_serial.run = lambda names, feeds: (
        encoded_on.add(threading.current_thread().name),
        encode(names, feeds),
    )[1]
    for beams, batch in ((1, sources), (4, sources[:20]), (1, sources[:2]), (2, sources[5:8])):
        got = sharded.generate_nbest_ids(batch, beam_size=beams, num_return_sequences=beams)
        want = whole.generate_nbest_ids(batch, beam_size=beams, num_return_sequences=beams)
        assert [[(h.token_ids, h.score) for h in hs] for hs in got] == [
            [(h.token_ids, h.score) for h in hs] for hs in want
        ]
    # The calling thread and every worker encoded and decoded a shard, each on a one-thread session.
    assert len(decoded_on) == len(encoded_on) == threads
    assert whole.sessions.encoder_serial is None


def test_one_sentence_is_encoded_on_one_thread(demo_dir):
    """A batch of one sentence is not sharded, but its encoder run uses the one-thread session: same results."""
    sharded, whole = Translator.load(demo_dir, intra_op_threads=2), Translator.load(demo_dir, decode_shards=1)
    runs = []
    encode = sharded.sessions.encoder_serial.run
    sharded.sessions.encoder_serial.run = lambda names, feeds: (
        runs.append(len(feeds["input_ids"])),
        encode(names, feeds),
    )[1]
    for source in _sources(whole, 5):
        got, want = sharded.generate_ids([source], beam_size=4), whole.generate_ids([source], beam_size=4)
        assert [(h.token_ids, h.score) for h in got] == [(h.token_ids, h.score) for h in want]
    assert runs == [1] * 5


def test_text_translation_is_unchanged_by_shards(demo_dir):
    sharded, whole = Translator.load(demo_dir, intra_op_threads=2), Translator.load(demo_dir, decode_shards=1)
    texts = [line.split("\t")[0] for line in (demo_dir / "test.tsv").read_text("utf-8").splitlines()[40:70]]
    assert sharded.translate(texts, beam_size=4) == whole.translate(texts, beam_size=4)


def test_a_failing_shard_raises_after_every_shard_ended():
    ended = []

    def work(shard: np.ndarray) -> int:
        if shard[0] == 0:
            raise ValueError("shard 0 failed")
        threading.Event().wait(0.2 if shard[0] == 2 else 0.0)  # shard 2 is the slow one
        ended.append(int(shard[0]))
        return int(shard[0])

    runner = ShardRunner(3)
    with pytest.raises(ValueError, match="shard 0 failed"):
        runner.map(work, [np.array([0]), np.array([1]), np.array([2])])
    assert sorted(ended) == [1, 2]
    ended.clear()
    with pytest.raises(ValueError, match="shard 0 failed"):  # a worker's shard fails, the last one still runs
        runner.map(work, [np.array([7]), np.array([0]), np.array([2])])
    assert sorted(ended) == [2, 7]
    assert runner.map(work, [np.array([5]), np.array([6])]) == [5, 6]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_starts_its_own_workers(demo_dir):
    """A translator used before fork() translates in the child too (the parent's worker threads are not there)."""
    translator = Translator.load(demo_dir, intra_op_threads=2)
    sources = _sources(translator, 6)
    want = [h.token_ids for h in translator.generate_ids(sources)]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether it got the parent's tokens, then leave at once
        try:
            got = [h.token_ids for h in translator.generate_ids(sources)]
            os.write(write, b"same" if got == want else b"different")
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 120)  # a child stuck waiting for absent workers: killed, failed
    answer = os.read(read, 16) if ready else b"no answer in 120 s"
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert answer == b"same"
