"""Translated sheet names for .xlsx (``--sheet-names``, off by default): the names in ``xl/workbook.xml`` and every
reference to them, so that no formula breaks.

A sheet's new name is its translation made valid for Excel: the characters ``[ ] : * ? / \\`` become spaces, a
quote at either end is dropped, it is cut to 31 characters, and a name that is then empty, ``History`` (reserved)
or the name of another sheet (compared without case) keeps the original or gets `` (2)``, `` (3)``... The
references that follow the rename: formulas of cells (``f``), of conditional formats and data validations
(``formula``, ``formula1``, ``formula2``, ``xm:f``), calculated table columns, defined names (print areas and
titles too), chart series and titles (``c:f``), hyperlinks inside the workbook (``location``), pivot caches'
sources (``worksheetSource sheet``) and the list of titles in ``docProps/app.xml``. In a formula a reference is
``Name!A1``, ``'Name with spaces'!A1`` or ``First:Last!A1``; text in double quotes is never touched, and a
renamed reference is always written quoted (``'新名称'!A1``), which Excel reads for any name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from enzh.documents.inline import Block, TranslatedBlock
from enzh.documents.parts import PartText
from enzh.runtime.segment import needs_translation

_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_VT = "{http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes}"
_SML = "application/vnd.openxmlformats-officedocument.spreadsheetml."
# Parts that may refer to a sheet by its name.
REFERRING = (
    f"{_SML}worksheet+xml",
    f"{_SML}sheet.main+xml",
    f"{_SML}template.main+xml",
    f"{_SML}table+xml",
    f"{_SML}pivotCacheDefinition+xml",
    "application/vnd.openxmlformats-officedocument.drawingml.chart+xml",
    "application/vnd.openxmlformats-officedocument.extended-properties+xml",
)
_FORMULAS = frozenset({"f", "formula", "formula1", "formula2", "calculatedColumnFormula", "definedName"})
_INVALID = re.compile(r"[\[\]:*?/\\]")
MAX_NAME = 31  # characters of a sheet name (Excel's limit)
# A string literal (kept), a quoted sheet reference, or an unquoted one (a name, or First:Last, before "!").
_REFERENCE = re.compile(r"""("(?:[^"]|"")*")|'((?:[^']|'')+)'!|(?<![\w.\]'])([^\W\d][\w.]*(?::[^\W\d][\w.]*)?)!""")


def valid_name(translated: str, original: str, taken: set[str]) -> str:
    """``translated`` as a sheet name Excel accepts, not in ``taken`` (lower-cased names; the result is added)."""
    name = _INVALID.sub(" ", " ".join(translated.split())).strip().strip("'").strip()[:MAX_NAME].strip()
    if not name or name.lower() == "history":
        name = original
    base, number = name, 2
    while name.lower() in taken:
        suffix = f" ({number})"
        name, number = base[: MAX_NAME - len(suffix)] + suffix, number + 1
    taken.add(name.lower())
    return name


def rename_references(formula: str, renames: dict[str, str]) -> str:
    """``formula`` with every reference to a sheet in ``renames`` (old name lower-cased -> new name; Excel
    compares sheet names without case) naming its new name, quoted."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(0)  # a string literal
        quoted = match.group(2)
        names = (quoted.replace("''", "'") if quoted is not None else match.group(3)).split(":")
        if not any(name.lower() in renames for name in names):
            return match.group(0)
        new = ":".join(renames.get(name.lower(), name) for name in names)
        return "'" + new.replace("'", "''") + "'!"

    return _REFERENCE.sub(replace, formula)


@dataclass
class SheetNames:
    """The sheet names of a workbook as blocks (``part``), and, once their translations are written, the renames
    applied to every referring part (:meth:`apply`: member name -> changed root)."""

    workbook: str
    roots: Callable[[str], Any]  # member name -> its parsed root (one tree per member, shared with other writers)
    referring: list[str]
    sheets: list[Any] = field(default_factory=list)  # the <sheet> elements
    translations: dict[int, str] = field(default_factory=dict)  # index into sheets -> translated name

    def part(self, finish: Callable[[], bytes]) -> PartText:
        part = PartText(self.workbook, finish)
        self.sheets = list(self.roots(self.workbook).iter(f"{_S}sheet"))
        for index, sheet in enumerate(self.sheets):
            name = sheet.get("name") or ""
            if needs_translation(name):
                part.add(Block(name), self._writer(index))
        return part

    def _writer(self, index: int) -> Callable[[Block, TranslatedBlock], bool]:
        def write(block: Block, done: TranslatedBlock) -> bool:
            self.translations[index] = done.text
            return False  # applied with the references, in apply()

        return write

    def apply(self) -> list[str]:
        """Rename the sheets and their references; the members whose tree changed."""
        originals = [sheet.get("name") or "" for sheet in self.sheets]
        taken = {name.lower() for i, name in enumerate(originals) if i not in self.translations}
        renames: dict[str, str] = {}
        for index, translation in sorted(self.translations.items()):
            new = valid_name(translation, originals[index], taken)
            if new != originals[index]:
                renames[originals[index].lower()] = new
                self.sheets[index].set("name", new)
        if not renames:
            return []
        changed = [self.workbook]
        for name in self.referring:
            if _rename_in(self.roots(name), renames) and name not in changed:
                changed.append(name)
        return changed


def _rename_in(root: Any, renames: dict[str, str]) -> bool:
    changed = False
    for element in root.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        local = tag.rsplit("}", 1)[-1]
        if local in _FORMULAS and element.text:
            new = rename_references(element.text, renames)
        elif tag == f"{_VT}lpstr" and element.text and element.text.lower() in renames:
            new = renames[element.text.lower()]  # docProps/app.xml: the sheets' titles
        else:
            new = element.text
        if new != element.text:
            element.text, changed = new, True
        for attribute in ("location", "sheet"):
            value = element.get(attribute)
            if value is None or local not in ("hyperlink", "worksheetSource"):
                continue
            new = rename_references(value, renames) if attribute == "location" else renames.get(value.lower(), value)
            if new != value:
                element.set(attribute, new)
                changed = True
    return changed
