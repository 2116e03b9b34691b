"""Options of a document translation, validated once for the API, the command line and files."""

from __future__ import annotations

from dataclasses import dataclass

from enzh.documents.formats import FORMAT_NAMES
from enzh.runtime.errors import require
from enzh.runtime.glossary import Glossary

CONVERSIONS = ("s2t", "s2tw", "s2twp", "s2hk")  # OpenCC configurations (docs/documents.md)
TARGETS = ("zh-Hans", "zh-Hant", "en")
SOURCES = ("en", "zh")  # the language a document is in: which of its pieces are translated
FIELD_FORMATS = ("jsonl", "tsv", "csv")  # the formats whose --field names a field or column
L10N_FORMATS = ("po", "xliff")  # localisation files: translations marked for review, translated ones skipped


@dataclass(frozen=True, kw_only=True)
class DocumentOptions:
    """``format``: a name of :data:`enzh.documents.formats.FORMAT_NAMES` (already resolved, never ``auto``);
    ``field``: the jsonl field / tsv column (None: ``text``); ``beam_size``/``target``: as
    :meth:`Translator.translate`; ``convert``: an OpenCC conversion of the Simplified output (None or ``none``:
    no conversion); ``source``: the document's language (en: pieces with Latin letters are translated, the rest
    kept; zh: pieces with Han characters); po and xliff only: ``fuzzy`` marks each machine translation as
    needing review (po: the ``fuzzy`` flag; XLIFF: its state), ``retranslate`` translates entries that already
    have a translation too (by default they are kept); xlsx only: ``sheet_names`` translates the names of the
    sheets too (references to them in formulas, defined names and charts follow); ``glossary``: terms with a
    fixed translation (:mod:`enzh.runtime.glossary`)."""

    format: str
    field: str | None = None
    beam_size: int | None = None
    target: str | None = None
    convert: str | None = None
    source: str = "en"
    fuzzy: bool = True
    retranslate: bool = False
    glossary: Glossary | None = None
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
            self.field is None or self.format in FIELD_FORMATS,
            f"field applies to the jsonl, tsv and csv formats only, not {self.format}",
        )
        require(
            (self.fuzzy and not self.retranslate) or self.format in L10N_FORMATS,
            f"fuzzy and retranslate apply to the po and xliff formats only, not {self.format}",
        )
        require(not self.sheet_names or self.format == "xlsx", f"sheet_names applies to xlsx only, not {self.format}")
        require(self.source in SOURCES, f"unknown source {self.source!r}; accepted: {', '.join(SOURCES)}")
        require(
            self.glossary is None or isinstance(self.glossary, Glossary),
            f"glossary must be a Glossary (Glossary.read(path)) or None, got {type(self.glossary).__name__}",
        )
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
        key: dict[str, object] = {
            "format": self.format,
            "field": self.field,
            "beam_size": self.beam_size,
            "target": self.target,
            "convert": self.convert,
            "source": self.source,
        }
        # the newer options only when not their default, so journals written before they existed stay valid
        for name, value, default in (
            ("fuzzy", self.fuzzy, True),
            ("retranslate", self.retranslate, False),
            ("sheet_names", self.sheet_names, False),
        ):
            if value != default:
                key[name] = value
        if self.glossary:
            key["glossary"] = self.glossary.fingerprint()
        return key
