"""A stand-in for :class:`enzh.runtime.translator.Translator` in the tests of the HTTP layer: no model, instant
(or as slow as asked), deterministic.

It has what the service uses: ``adapter`` (the real MarianAdapter, with the demo model's two target tokens),
``prepare_text``/``assemble_text`` (the real ones), ``_encode_parts``, ``generate_ids`` and
``tokenizer.decode_batch``. A sentence's ids are the code points of
the sentence behind its target token, and its "translation" is the sentence in upper case, marked ``(Hant)``
for Traditional: see :func:`fake_translation`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from types import SimpleNamespace

from enzh.runtime.adapter import LANGUAGE_TOKEN, MarianAdapter
from enzh.runtime.translator import Translator

HANS, HANT = ">>cmn_Hans<<", ">>cmn_Hant<<"


def fake_translation(sentence: str, target: str | None = None) -> str:
    """What FakeTranslator answers for one sentence (``target``: None, zh-Hans or zh-Hant)."""
    return sentence.strip().upper() + (" (Hant)" if target == "zh-Hant" else "")


class FakeTranslator:
    """``delay_s``: how long every batch takes (queue, deadline and disconnect tests).

    ``batches`` records (sentences, beam size) of every batch run.
    """

    def __init__(self, delay_s: float = 0.0, num_beams: int = 4) -> None:
        self.adapter = MarianAdapter(
            decoder_start_token_id=1,
            eos_token_id=0,
            pad_token_id=1,
            unk_token_id=2,
            language_tokens=(HANS, HANT),
            default_language=HANS,
            max_positions=512,
            generation={"num_beams": num_beams},
        )
        self.tokenizer = SimpleNamespace(decode_batch=self._decode_batch)
        self.delay_s = delay_s
        self.batches: list[tuple[int, int | None]] = []
        self._lock = threading.Lock()

    # The real segmentation stage (it needs only the adapter and _encode_parts below).
    prepare_text = Translator.prepare_text
    assemble_text = Translator.assemble_text

    def _encode_parts(self, text: str, language_token: str | None) -> list[list[int]]:
        if not text.strip():
            return []
        return [[ord(c) for c in self.adapter.with_language_token(text, language_token)]]

    def generate_ids(self, sources: Sequence[Sequence[int]], *, beam_size: int | None = None) -> list[SimpleNamespace]:
        with self._lock:
            self.batches.append((len(sources), beam_size))
        if self.delay_s:
            time.sleep(self.delay_s)
        return [SimpleNamespace(token_ids=tuple(ids)) for ids in sources]

    def _decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        outputs = []
        for ids in batch:
            text = "".join(map(chr, ids))
            token = LANGUAGE_TOKEN.match(text)
            rest = text[token.end() :] if token else text
            target = "zh-Hant" if token and token.group() == HANT else None
            outputs.append(fake_translation(rest, target))
        return outputs
