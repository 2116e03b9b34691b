"""gettext po and pot files (polib): every untranslated message gets its msgstr; everything else stays byte for byte.

polib parses the file (its syntax errors are refused with their line) and says where each entry starts; the
writer then rewrites only the lines of the entries it fills, so msgid, msgctxt, comments, references, flags of
other entries, obsolete (``#~``) entries and the file's wrapping come out as they were.

* An entry is translated when it is not obsolete and has no translation yet (every msgstr empty); with
  ``retranslate`` the translated and fuzzy ones too. Messages without a word in the source language stay empty.
* Its msgstr lines are replaced: ``msgstr "..."`` on one line, or ``msgstr ""`` and one line per line of a
  message with line breaks (not wrapped at a width: gettext tools read any line length).
* Plurals (``msgid_plural``): ``msgstr[0]`` .. ``msgstr[n-1]`` with ``n`` the header's ``nplurals`` (Chinese: 1).
  With one form, ``msgstr[0]`` is the translation of ``msgid_plural`` (it holds the number's placeholder);
  with more, ``msgstr[0]`` translates ``msgid`` and the others ``msgid_plural``.
* Machine output is marked ``fuzzy`` (``#, fuzzy`` added to its flags, gettext's "needs review"), unless
  ``fuzzy`` is off.
* printf and Python placeholders (``%s``, ``%(name)d``, ``%1$s``; ``{name}`` for ``python-brace-format``) in
  an entry flagged ``c-format``, ``python-format`` and the like are written back exactly as they were: the
  model reads them, and each comes back once, where the translation has it or else at the same relative place.
  An entry without a format flag gets the same for the unambiguous ones (``%d``, ``%s``, ``%(name)s``,
  ``{name}``, ``{0}``; not ``% s``); one flagged ``no-c-format`` (or another ``no-*-format``) for none.
* The header: ``Language`` is set when empty or absent (``zh_CN``, ``zh_TW``, ``en``) and refused when it names
  another language; ``Plural-Forms`` is set when absent or a template's placeholder; a ``charset`` other than
  UTF-8 becomes UTF-8 (the output is UTF-8). When one of these changes, the header's msgstr is rewritten with
  one field per line; its comments and flags (a template's ``#, fuzzy``) stay. A file without a header gets
  none, and its plurals get the target language's forms.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from enzh.documents.errors import DocumentError
from enzh.documents.formats import Units
from enzh.documents.inline import Block, Mark, TranslatedBlock
from enzh.documents.locales import PLURAL_FORMS, SIMPLIFIED, Locale, target_locale
from enzh.documents.markup import Tag, render
from enzh.documents.options import DocumentOptions
from enzh.runtime.optional import import_optional
from enzh.runtime.segment import needs_translation

_PRINTF = r"%(?:\d+\$|\([^()\s]{1,64}\))?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[a-zA-Z%]"
_BRACE = r"\{[^{}\s]{0,64}\}"
# Which placeholders an entry's format flag says its message has.
_PLACEHOLDERS = {
    flag: re.compile(_BRACE if flag == "python-brace-format" else _PRINTF)
    for flag in ("c-format", "python-format", "python-brace-format", "php-format", "perl-format", "sh-format")
}
# An entry without a format flag (not every extractor writes one): the unambiguous placeholders only, printf
# conversions without the space flag (so "100% sure" stays text), %(name)s and {name}, {0}.
_LIKELY = re.compile(
    r"%(?:\d+\$|\([A-Za-z_]\w{0,63}\))?[-+#0]*\d*(?:\.\d+)?[sdifuxXeEgGc]|\{(?:[A-Za-z_]\w{0,63}|\d{1,2})?\}"
)


def _placeholder(flags: list[str]) -> re.Pattern[str] | None:
    """The placeholders of an entry with these flags: those of its format flag; none when a ``no-*-format``
    flag says it has none; else the likely ones."""
    for flag in flags:
        if flag in _PLACEHOLDERS:
            return _PLACEHOLDERS[flag]
    if any(flag.startswith("no-") and flag.endswith("-format") for flag in flags):
        return None
    return _LIKELY


_MAX_PLURALS = 10  # polib reads msgstr[0] .. msgstr[9]
_PLACEHOLDER_TEMPLATE = ("INTEGER", "EXPRESSION")  # a .pot's Plural-Forms before msginit fills it


@dataclass(frozen=True)
class _Edit:
    """One entry to fill: its msgstr lines ``[start, end)``, where ``#, fuzzy`` goes (a flags line to extend,
    or the line to insert one before), how many blocks it has and how many msgstr forms it gets."""

    start: int
    end: int
    flags_line: int | None
    insert_at: int
    blocks: int
    forms: int  # 0: a singular msgstr; n: msgstr[0] .. msgstr[n-1]
    fuzzy: bool


@dataclass(frozen=True)
class PoFormat:
    name: str = "po"
    extensions: tuple[str, ...] = (".po", ".pot")
    binary: bool = False
    fuzzy: bool = True
    retranslate: bool = False
    locale: Locale = SIMPLIFIED

    def configure(self, options: DocumentOptions) -> PoFormat:
        return dataclasses.replace(
            self, fuzzy=options.fuzzy, retranslate=options.retranslate, locale=target_locale(options)
        )

    def read(self, source: str, field: str | None = None) -> Units:
        entries, header = _parse(source)
        lines = source.splitlines(keepends=True)  # the lines polib counts (str.splitlines)
        starts = sorted({max(e.linenum - 1, 0) for e in [*entries, *([header] if header else [])]})
        header_edit, forms = _header(header, lines, starts, self.locale)
        blocks: list[Block] = []
        edits: list[_Edit] = []
        for entry in entries:
            if entry.obsolete or not entry.msgid or (_translated(entry) and not self.retranslate):
                continue
            texts = _sources(entry, forms)
            placeholder = _placeholder(entry.flags)
            if not any(needs_translation(placeholder.sub(" ", t) if placeholder else t) for t in texts):
                continue  # no words outside the placeholders
            start, end = _msgstr_lines(lines, _span(entry, starts, len(lines)), entry.linenum)
            flags_line, insert_at = _flags_place(lines, _span(entry, starts, len(lines)))
            blocks += [_block(text, placeholder) for text in texts]
            fuzzy = self.fuzzy and "fuzzy" not in entry.flags
            edits.append(
                _Edit(start, end, flags_line, insert_at, len(texts), forms if entry.msgid_plural else 0, fuzzy)
            )
        return Units(blocks, (lines, header_edit, edits))

    def write(self, units: Units, translated: Sequence[TranslatedBlock]) -> str:
        lines, header_edit, edits = units.layout
        out = list(lines)
        if header_edit is not None:
            start, end, text = header_edit
            out[start:end] = [text] + [""] * (end - start - 1)
        position = 0
        for edit in edits:
            done = [
                render(block, result)
                for block, result in zip(
                    units.blocks[position : position + edit.blocks],
                    translated[position : position + edit.blocks],
                    strict=True,
                )
            ]
            position += edit.blocks
            last_end = _line_end(lines[edit.end - 1])  # "" when the file ends there without a line end
            newline = _line_end(lines[edit.start]) or "\n"
            if edit.forms == 0:
                written = _field("msgstr", done[0], newline)
            else:  # one form: the plural's translation; more: the singular's, then the plural's
                values = [done[0]] + [done[-1]] * (edit.forms - 1)
                written = "".join(_field(f"msgstr[{i}]", value, newline) for i, value in enumerate(values))
            written = written[: len(written) - len(newline)] + last_end
            indent = lines[edit.start][: len(lines[edit.start]) - len(lines[edit.start].lstrip())]
            out[edit.start : edit.end] = [indent + written] + [""] * (edit.end - edit.start - 1)
            if edit.fuzzy:
                if edit.flags_line is not None:
                    line = out[edit.flags_line]
                    at = line.index("#,") + 2
                    out[edit.flags_line] = line[:at] + " fuzzy," + line[at:]
                else:
                    out[edit.insert_at] = "#, fuzzy" + (_line_end(lines[edit.insert_at]) or "\n") + out[edit.insert_at]
        return "".join(out)


def _parse(source: str) -> tuple[list[Any], Any]:
    """The entries polib reads (in file order) and the header entry (None: no header)."""
    polib = import_optional("polib", "gettext po translation")

    class Read(polib.POFile):  # type: ignore[name-defined]
        header_entry: Any = None

        def remove(self, entry: Any) -> None:  # polib removes the header entry (msgid "") from the list
            self.header_entry = entry
            super().remove(entry)

    # polib takes a string without a line break for a file name: one is added (no file name ends with one here).
    text = source if "\n" in source or "\r" in source else source + "\n"
    try:
        parsed = polib.pofile(text, klass=Read, encoding="utf-8")
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise DocumentError(f"the input is not a gettext po file: {exc}") from None
    return list(parsed), parsed.header_entry


def entry_lines(source: str) -> tuple[int | None, list[int]]:
    """Where each entry of a po document starts (indices into ``source.splitlines(keepends=True)``): the header
    entry's line (None: no header) and the other entries' lines, in order (obsolete ones too)."""
    entries, header = _parse(source)
    return (None if header is None else max(header.linenum - 1, 0)), sorted(max(e.linenum - 1, 0) for e in entries)


def _translated(entry: Any) -> bool:
    return bool(entry.msgstr) or any(entry.msgstr_plural.values())


def _sources(entry: Any, forms: int) -> list[str]:
    """The texts to translate for an entry: its msgid; for plurals, msgid_plural (and msgid when forms > 1)."""
    if not entry.msgid_plural:
        return [entry.msgid]
    return [entry.msgid_plural] if forms == 1 else [entry.msgid, entry.msgid_plural]


def _block(text: str, placeholder: re.Pattern[str] | None) -> Block:
    if placeholder is None:
        return Block(text)
    marks = tuple(Mark(m.start(), m.end(), Tag("placeholder", verbatim=m.group())) for m in placeholder.finditer(text))
    return Block(text, marks)


def _span(entry: Any, starts: list[int], total: int) -> tuple[int, int]:
    """The lines ``[start, end)`` of an entry: from where polib started it to where the next one starts."""
    start = max(entry.linenum - 1, 0)
    after = bisect.bisect_right(starts, start)
    return start, starts[after] if after < len(starts) else total


def _keyword(line: str) -> str:
    return line.strip().split(None, 1)[0] if line.strip() else ""


def _msgstr_lines(lines: list[str], span: tuple[int, int], number: int) -> tuple[int, int]:
    """The lines of an entry's msgstr (and msgstr[n]) fields with their continuation lines."""
    start = next((i for i in range(*span) if _keyword(lines[i]).startswith("msgstr")), None)
    if start is None:
        raise DocumentError(f"the entry at line {max(number, 1)} has no msgstr; every msgid needs one")
    end = start + 1
    while end < span[1] and (lines[end].lstrip().startswith('"') or _keyword(lines[end]).startswith("msgstr[")):
        end += 1
    return start, end


def _flags_place(lines: list[str], span: tuple[int, int]) -> tuple[int | None, int]:
    """The entry's first ``#,`` line (None: it has none) and the line a new one goes before (the first
    previous-message ``#|`` line, msgctxt or msgid)."""
    flags = next((i for i in range(*span) if _keyword(lines[i]) == "#,"), None)
    before = next((i for i in range(*span) if _keyword(lines[i]) in ("#|", "msgctxt", "msgid")), None)
    if before is None:
        raise DocumentError(f"no msgid line found for the entry at line {span[0] + 1}; check the file's syntax")
    return flags, before


def _field(keyword: str, value: str, newline: str) -> str:
    """``keyword "value"`` in po syntax: one line, or ``""`` and one line per line of a multi-line value."""
    parts = re.findall(r"[^\n]*\n|[^\n]+", value)
    if len(parts) <= 1:
        return f'{keyword} "{_escape(value)}"{newline}'
    return f'{keyword} ""{newline}' + "".join(f'"{_escape(part)}"{newline}' for part in parts)


def _line_end(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _header(
    header: Any, lines: list[str], starts: list[int], locale: Locale
) -> tuple[tuple[int, int, str] | None, int]:
    """The header's new msgstr lines (None: unchanged) and the number of plural forms the entries get."""
    default = _nplurals(PLURAL_FORMS[locale.base], "the target language's Plural-Forms")
    if header is None:
        return None, default
    fields = header.msgstr.splitlines(keepends=True)
    values: dict[str, str] = {}
    for line in fields:
        name, _, value = line.partition(":")
        values.setdefault(name.strip().lower(), value.strip())
    changed = dict[str, str]()
    language = values.get("language", "")
    locale.check(language, "the header's Language")
    if not language:
        changed["Language"] = locale.gettext
    plural = values.get("plural-forms", "")
    if not plural or any(word in plural for word in _PLACEHOLDER_TEMPLATE):
        changed["Plural-Forms"] = plural = PLURAL_FORMS[locale.base]
    content = values.get("content-type", "")
    charset = re.search(r"charset\s*=\s*([^\s;]+)", content)
    if charset is not None and charset.group(1).lower().replace("-", "") != "utf8":
        changed["Content-Type"] = content[: charset.start(1)] + "UTF-8" + content[charset.end(1) :]
    forms = _nplurals(plural, "the header's Plural-Forms")
    if not changed:
        return None, forms
    written = []
    for line in fields:
        name = line.partition(":")[0].strip()
        if name in changed:
            line = f"{name}: {changed.pop(name)}\n"
        written.append(line)
    written += [f"{name}: {value}\n" for name, value in changed.items()]
    start, end = _msgstr_lines(lines, _span(header, starts, len(lines)), header.linenum)
    newline = _line_end(lines[start]) or "\n"
    text = f'msgstr ""{newline}' + "".join(f'"{_escape(line)}"{newline}' for line in written)
    return (start, end, text[: len(text) - len(newline)] + _line_end(lines[end - 1])), forms


def _escape(text: str) -> str:
    polib = import_optional("polib", "gettext po translation")
    escaped: str = polib.escape(text)
    return escaped


def _nplurals(plural: str, where: str) -> int:
    found = re.search(r"nplurals\s*=\s*(\d+)", plural)
    if found is None or not 1 <= int(found.group(1)) <= _MAX_PLURALS:
        raise DocumentError(
            f"{where} {plural!r} does not say how many plural forms there are (nplurals=1 to {_MAX_PLURALS})"
        )
    return int(found.group(1))


FORMAT = PoFormat()
