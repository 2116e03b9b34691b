"""The language a localisation file is translated into, as its own headers name it (gettext po, XLIFF).

A po file's ``Language`` header and an XLIFF file's target language say what language its translations are in.
enzh fills them in when they are empty. When the run names its target (``target`` or ``convert``; the command
line and the service always name one), a file that names another language (or the other Chinese script) is
refused, since filling it would mix two languages in one file; a run that names none (a Python call without
``target``, the service reading a file to detect its language) keeps the file's language as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from enzh.documents.errors import DocumentError
from enzh.documents.options import DocumentOptions

_TRADITIONAL = ("hant", "tw", "hk", "mo")  # subtags that mean Traditional characters
_CONVERTED = {"s2t": ("zh-Hant", "zh_Hant"), "s2tw": ("zh-TW", "zh_TW"), "s2twp": ("zh-TW", "zh_TW")}
_CONVERTED["s2hk"] = ("zh-HK", "zh_HK")
# gettext's Plural-Forms for the languages enzh writes (Chinese has one form, English two).
PLURAL_FORMS = {"zh": "nplurals=1; plural=0;", "en": "nplurals=2; plural=(n != 1);"}


@dataclass(frozen=True)
class Locale:
    """``tag``: the BCP 47 tag (XLIFF); ``gettext``: the locale name (po); ``base``: zh or en;
    ``traditional``: Chinese written in Traditional characters (None: English); ``named``: the run named it
    (else a file's own language is not checked)."""

    tag: str
    gettext: str
    base: str
    traditional: bool | None
    named: bool = False

    def check(self, found: str, where: str) -> None:
        """Refuse a file whose own target language ``found`` (from ``where``) is not this one."""
        subtags = found.strip().replace("_", "-").lower().split("-")
        if not subtags[0] or not self.named:
            return
        wrong = subtags[0] != self.base
        if not wrong and self.base == "zh":
            wrong = any(s in _TRADITIONAL for s in subtags[1:]) != self.traditional
        if wrong:
            if subtags[0] == "zh" and self.base == "zh":
                fix = "--target zh-Hans" if self.traditional else "--target zh-Hant (or --convert s2tw, s2hk)"
                hint = f"translate it with {fix}"
            else:
                hint = (
                    "enzh writes Chinese and English; translate a template (.pot, or XLIFF without a target language)"
                )
            raise DocumentError(
                f"{where} says its translations are in {found.strip()!r}, but this run writes {self.tag}; "
                f"{hint} or a file meant for {self.tag}"
            )


SIMPLIFIED = Locale("zh-CN", "zh_CN", "zh", False)


def target_locale(options: DocumentOptions) -> Locale:
    """The language a run with ``options`` writes: English from Chinese, else Chinese in the target's script."""
    named = options.target is not None or options.convert is not None
    if options.source == "zh" or options.target == "en":
        return Locale("en", "en", "en", None, named)
    if options.convert in _CONVERTED:
        tag, gettext = _CONVERTED[options.convert]
        return Locale(tag, gettext, "zh", True, named)
    if options.target == "zh-Hant":
        return Locale("zh-TW", "zh_TW", "zh", True, named)
    return Locale(SIMPLIFIED.tag, SIMPLIFIED.gettext, "zh", False, named)
