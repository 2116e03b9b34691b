"""Small models run decoder steps of few rows in a one-thread session: same tokens and scores, bit for bit."""

from __future__ import annotations

import pytest

from enzh.runtime.errors import OptionsError
from enzh.runtime.options import SERIAL_DECODER_ROWS, SMALL_MODEL_PARAMETERS, RuntimeOptions
from enzh.runtime.translator import Translator


def test_serial_rows_for_each_model_size_and_thread_count():
    auto = RuntimeOptions(intra_op_threads=2)
    assert auto.serial_rows_for(4_685_312) == SERIAL_DECODER_ROWS  # the demo model
    assert auto.serial_rows_for(77_943_296) == 0  # opus-mt-en-zh's shape: two threads pay from one row on
    assert auto.serial_rows_for(0) == 0  # a manifest without a parameter count
    assert RuntimeOptions(intra_op_threads=0).serial_rows_for(SMALL_MODEL_PARAMETERS - 1) == SERIAL_DECODER_ROWS
    assert RuntimeOptions(intra_op_threads=1).serial_rows_for(1000) == 0  # one thread everywhere already
    assert RuntimeOptions(intra_op_threads=2, serial_decoder_rows=4).serial_rows_for(77_943_296) == 4
    assert RuntimeOptions(intra_op_threads=2, serial_decoder_rows=0).serial_rows_for(1000) == 0
    with pytest.raises(OptionsError, match="serial_decoder_rows must be None .automatic., 0 .never. or a row count"):
        RuntimeOptions(serial_decoder_rows=-1)


def test_switching_sessions_mid_batch_changes_nothing(demo_dir):
    """20 sentences x 4 beams start at 80 rows (the threaded session) and end below 16 (the one-thread one) as
    sentences finish; n-best lists equal those of a translator without the one-thread session."""
    both = Translator.load(demo_dir, intra_op_threads=2)
    single = Translator.load(demo_dir, intra_op_threads=2, serial_decoder_rows=0)
    assert len(both.sessions.decoder_sessions) == 2 and single.sessions.decoder_serial is None
    texts = [line.split("\t")[0] for line in (demo_dir / "test.tsv").read_text("utf-8").splitlines()[:20]]
    ids = [tuple(single.tokenizer.encode(f">>cmn_Hans<< {t}")) for t in texts]
    used = []
    run = both.sessions.decoder_serial.run_with_iobinding
    both.sessions.decoder_serial.run_with_iobinding = lambda io: (used.append(1), run(io))[1]
    for beams in (1, 4):
        got = both.generate_nbest_ids(ids, beam_size=beams, num_return_sequences=beams)
        want = single.generate_nbest_ids(ids, beam_size=beams, num_return_sequences=beams)
        assert [[(h.token_ids, h.score) for h in hs] for hs in got] == [
            [(h.token_ids, h.score) for h in hs] for hs in want
        ]
    assert used  # the one-thread session did run the last steps
