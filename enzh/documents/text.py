"""Plain text: every line that has English is translated, one sentence per model input; everything else stays.

Line and paragraph structure come out byte for byte: line ends (``\\n``, ``\\r\\n``, ``\\r``), blank lines and
each line's leading and trailing whitespace are kept outside the translated text. A line is a unit of its
own (a heading or a list item without final punctuation never merges with the next line); a sentence wrapped
over two lines is translated as two parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from enzh.documents.formats import Units
from enzh.documents.inline import Block, TranslatedBlock
from enzh.runtime.segment import needs_translation

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


@dataclass(frozen=True)
class TextFormat:
    name: str = "txt"
    extensions: tuple[str, ...] = (".txt", ".text")
    binary: bool = False

    def read(self, source: str, field: str | None = None) -> Units:
        parts: list[str] = []  # kept text and translatable cores, alternating: kept, core, kept, core, ..., kept
        blocks: list[Block] = []
        kept = ""
        for match in _LINE.finditer(source):
            line = match.group()
            if not line:
                continue
            core = line.strip()
            if not needs_translation(core):
                kept += line
                continue
            lead = len(line) - len(line.lstrip())
            parts += [kept + line[:lead], core]
            kept = line[lead + len(core) :]
            blocks.append(Block(core))
        parts.append(kept)
        return Units(blocks, parts)

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        parts: list[str] = units.layout
        out = [parts[0]]
        for block, kept in zip(translated, parts[2::2], strict=True):
            out += [block.text, kept]
        return "".join(out)


FORMAT = TextFormat()
