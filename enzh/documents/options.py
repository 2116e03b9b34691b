"""Options of a document translation, validated once for the API, the command line and files."""

from __future__ import annotations

from dataclasses import dataclass

from enzh.documents.formats import FORMAT_NAMES
from enzh.runtime.errors import require

CONVERSIONS = ("s2t", "s2tw", "s2twp", "s2hk")  # OpenCC configurations (docs/documents.md)
TARGETS = ("zh-Hans", "zh-Hant", "en")
SOURCES = ("en", "zh")  # the language a document is in: which of its pieces are translated


@dataclass(frozen=True, kw_only=True)
class DocumentOptions:
    """``format``: a name of :data:`enzh.documents.formats.FORMAT_NAMES` (already resolved, never ``auto``);
    ``field``: the jsonl field / tsv column (None: ``text``); ``beam_size``/``target``: as
    :meth:`Translator.translate`; ``convert``: an OpenCC conversion of the Simplified output (None or ``none``:
    no conversion); ``source``: the document's language (en: pieces with Latin letters are translated, the rest
    kept; zh: pieces with Han characters); xlsx only: ``sheet_names`` translates the names of the sheets too
    (references to them in formulas, defined names and charts follow)."""

    format: str
    field: str | None = None
    beam_size: int | None = None
    target: str | None = None
    convert: str | None = None
    source: str = "en"
    sheet_names: bool = False

    def __post_init__(self) -> None:
        require(self.format in FORMAT_NAMES, f"unknown format {self.format!r}; accepted: {', '.join(FORMAT_NAMES)}")
        require(self.field is None or self.field != "", "field must be a non-empty name or column index")
        require(
            self.beam_size is None or (isinstance(self.beam_size, int) and self.beam_size >= 1),
            f"beam_size must be a positive integer, got {self.beam_size!r}",
        )
        if self.convert == "none":
            object.__setattr__(self, "convert", None)
        require(
            self.convert is None or self.convert in CONVERSIONS,
            f"unknown conversion {self.convert!r}; accepted: none, {', '.join(CONVERSIONS)}",
        )
        require(
            self.field is None or self.format in ("jsonl", "tsv"),
            f"field applies to the jsonl and tsv formats only, not {self.format}",
        )
        require(not self.sheet_names or self.format == "xlsx", f"sheet_names applies to xlsx only, not {self.format}")
        require(self.source in SOURCES, f"unknown source {self.source!r}; accepted: {', '.join(SOURCES)}")
        require(
            self.convert is None or self.source == "en",
            "convert turns Chinese output into Traditional characters; a document translated from Chinese has none",
        )

    @property
    def script(self) -> str:
        """The letters that mark a piece of this document as one to translate (enzh.runtime.segment.SCRIPTS)."""
        return "han" if self.source == "zh" else "latin"

    def key(self) -> dict[str, object]:
        """Everything that changes the output (the journal's key)."""
        return {
            "format": self.format,
            "field": self.field,
            "beam_size": self.beam_size,
            "target": self.target,
            "convert": self.convert,
            "source": self.source,
            "sheet_names": self.sheet_names,
        }
