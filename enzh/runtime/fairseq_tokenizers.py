"""NLLB-200, M2M100 and mBART-50 tokenizers on plain ``sentencepiece`` and ``json``: no transformers, no torch.

Each class gives the ids and strings of its transformers 5.23 counterpart (``tokenizers`` 0.23) for the same HF
model directory:

* ``encode(text, lang)`` == ``tokenizer(text)["input_ids"]`` with ``tokenizer.src_lang = lang``
* ``decode(ids)`` == ``tokenizer.decode(ids, skip_special_tokens=True)``

:class:`M2M100Tokenizer` mirrors a Python ("slow") transformers tokenizer: SentencePiece pieces looked up in
``vocab.json``. :class:`NllbTokenizer` (BPE) and :class:`MBart50Tokenizer` (Unigram) mirror tokenizers that
transformers 5 backs by the Rust ``tokenizers`` library, whose pipeline differs from SentencePiece's own encoder
(no trimming of outer spaces, a grapheme-wise normalizer, its own BPE merge order and Unigram lattice over a
vocabulary that also holds the special tokens): that pipeline is reimplemented here step by step, from
``tokenizer.json`` when the directory has one (as transformers reads it) or else from ``sentencepiece.bpe.model``
(as transformers converts it). ``sentencepiece`` then only serves :meth:`source_spans` / :meth:`target_spans`.

The comments marked "quirk" describe transformers/tokenizers behaviour that is reproduced on purpose. Deliberate
differences: text with a lone surrogate -> ValueError (transformers raises an opaque TypeError/RuntimeError); an id
no token has -> IndexError (transformers drops it silently, or writes "<unk>" for M2M100); an unknown language ->
ValueError (transformers uses the <unk> id or raises KeyError); an NLLB directory without ``tokenizer.json`` gets
the fairseq layout (language codes after the SentencePiece pieces, then <mask>) where transformers 5.23 loses the
language codes (they become <unk>); M2M100's language tokens are always special tokens (cut out of the text,
skipped when decoding), as with the hub's files, where transformers 5.23 ignores them in a directory whose config
does not list them (one it saved itself); ``truncation`` stored in ``tokenizer.json`` is not applied.
"""

from __future__ import annotations

import array
import base64
import functools
import gzip
import heapq
import json
import os
import re
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import sentencepiece

from enzh.runtime.pieces import Span, pieces_with_spans

__all__ = [
    "M2M100_LANGUAGE_CODES",
    "MBART50_LANGUAGE_CODES",
    "NLLB_LANGUAGE_CODES",
    "TOKENIZERS",
    "WMT21_LANGUAGE_CODES",
    "M2M100Tokenizer",
    "MBart50Tokenizer",
    "NllbTokenizer",
]

_SPIECE_UNDERLINE = "▁"

# The file names a HF model directory uses.
SPM_FILE = "sentencepiece.bpe.model"
TOKENIZER_JSON_FILE = "tokenizer.json"
CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
VOCAB_FILE = "vocab.json"

# transformers' FAIRSEQ_LANGUAGE_CODES of each family, in transformers' order (the order of their ids).
NLLB_LANGUAGE_CODES = tuple(
    "ace_Arab ace_Latn acm_Arab acq_Arab aeb_Arab afr_Latn ajp_Arab aka_Latn amh_Ethi apc_Arab arb_Arab ars_Arab "
    "ary_Arab arz_Arab asm_Beng ast_Latn awa_Deva ayr_Latn azb_Arab azj_Latn bak_Cyrl bam_Latn ban_Latn bel_Cyrl "
    "bem_Latn ben_Beng bho_Deva bjn_Arab bjn_Latn bod_Tibt bos_Latn bug_Latn bul_Cyrl cat_Latn ceb_Latn ces_Latn "
    "cjk_Latn ckb_Arab crh_Latn cym_Latn dan_Latn deu_Latn dik_Latn dyu_Latn dzo_Tibt ell_Grek eng_Latn epo_Latn "
    "est_Latn eus_Latn ewe_Latn fao_Latn pes_Arab fij_Latn fin_Latn fon_Latn fra_Latn fur_Latn fuv_Latn gla_Latn "
    "gle_Latn glg_Latn grn_Latn guj_Gujr hat_Latn hau_Latn heb_Hebr hin_Deva hne_Deva hrv_Latn hun_Latn hye_Armn "
    "ibo_Latn ilo_Latn ind_Latn isl_Latn ita_Latn jav_Latn jpn_Jpan kab_Latn kac_Latn kam_Latn kan_Knda kas_Arab "
    "kas_Deva kat_Geor knc_Arab knc_Latn kaz_Cyrl kbp_Latn kea_Latn khm_Khmr kik_Latn kin_Latn kir_Cyrl kmb_Latn "
    "kon_Latn kor_Hang kmr_Latn lao_Laoo lvs_Latn lij_Latn lim_Latn lin_Latn lit_Latn lmo_Latn ltg_Latn ltz_Latn "
    "lua_Latn lug_Latn luo_Latn lus_Latn mag_Deva mai_Deva mal_Mlym mar_Deva min_Latn mkd_Cyrl plt_Latn mlt_Latn "
    "mni_Beng khk_Cyrl mos_Latn mri_Latn zsm_Latn mya_Mymr nld_Latn nno_Latn nob_Latn npi_Deva nso_Latn nus_Latn "
    "nya_Latn oci_Latn gaz_Latn ory_Orya pag_Latn pan_Guru pap_Latn pol_Latn por_Latn prs_Arab pbt_Arab quy_Latn "
    "ron_Latn run_Latn rus_Cyrl sag_Latn san_Deva sat_Beng scn_Latn shn_Mymr sin_Sinh slk_Latn slv_Latn smo_Latn "
    "sna_Latn snd_Arab som_Latn sot_Latn spa_Latn als_Latn srd_Latn srp_Cyrl ssw_Latn sun_Latn swe_Latn swh_Latn "
    "szl_Latn tam_Taml tat_Cyrl tel_Telu tgk_Cyrl tgl_Latn tha_Thai tir_Ethi taq_Latn taq_Tfng tpi_Latn tsn_Latn "
    "tso_Latn tuk_Latn tum_Latn tur_Latn twi_Latn tzm_Tfng uig_Arab ukr_Cyrl umb_Latn urd_Arab uzn_Latn vec_Latn "
    "vie_Latn war_Latn wol_Latn xho_Latn ydd_Hebr yor_Latn yue_Hant zho_Hans zho_Hant zul_Latn".split()
)
MBART50_LANGUAGE_CODES = tuple(
    "ar_AR cs_CZ de_DE en_XX es_XX et_EE fi_FI fr_XX gu_IN hi_IN it_IT ja_XX kk_KZ ko_KR lt_LT lv_LV my_MM ne_NP "
    "nl_XX ro_RO ru_RU si_LK tr_TR vi_VN zh_CN af_ZA az_AZ bn_IN fa_IR he_IL hr_HR id_ID ka_GE km_KH mk_MK ml_IN "
    "mn_MN mr_IN pl_PL ps_AF pt_XX sv_SE sw_KE ta_IN te_IN th_TH tl_XX uk_UA ur_PK xh_ZA gl_ES sl_SI".split()
)
M2M100_LANGUAGE_CODES = tuple(
    "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he hi hr ht hu "
    "hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or pa pl ps pt "
    "ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu".split()
)
WMT21_LANGUAGE_CODES = tuple("en ha is ja cs ru zh de".split())

_NAMED_SPECIALS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


# ---------------------------------------------------------------------------------------------------- files


def _read_json(path: Path) -> Any:
    try:
        # an exported model directory may store JSON gzipped (name.json.gz), a HF model directory as plain JSON
        with (
            gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8") as f
        ):
            return json.load(f)  # duplicate keys: last one wins, as in transformers
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc


def _find(directory: Path, name: str) -> Path | None:
    """``directory / name``, or its gzipped copy ``name.gz``, or None."""
    for candidate in (directory / name, directory / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _load_spm(path: Path) -> Any:
    sp = sentencepiece.SentencePieceProcessor()
    try:
        sp.Load(str(path))
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"cannot load SentencePiece model {path}: {exc}") from exc
    return sp


def _directory(path: str | os.PathLike[str], expected: str) -> Path:
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(
            f"tokenizer directory {str(directory)!r} does not exist or is not a directory (expected {expected} in it)"
        )
    return directory


def _required(directory: Path, name: str) -> Path:
    file = _find(directory, name)
    if file is None:
        raise FileNotFoundError(f"tokenizer file {name!r} not found in directory {str(directory)!r}")
    return file


def _config(
    directory: Path, name: str = "tokenizer_config.json", special_map: str = "special_tokens_map.json"
) -> dict[str, Any]:
    """tokenizer_config.json, updated with special_tokens_map.json's entries when the config has no
    ``added_tokens_decoder`` (when transformers reads that file at all)."""
    config: dict[str, Any] = {}
    file = _find(directory, name)
    if file is not None:
        data = _read_json(file)
        if not isinstance(data, dict):
            raise ValueError(f"{file} must hold a JSON object")
        config = data
    file = _find(directory, special_map)
    if file is not None and "added_tokens_decoder" not in config:
        data = _read_json(file)
        if isinstance(data, dict):
            config.update(data)  # as in transformers, the map's entries win over the config's
    return config


def _content(value: Any) -> str | None:
    """A token as tokenizer_config.json stores it: a string, or an AddedToken object with its ``content``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _extra_tokens(config: dict[str, Any]) -> list[str]:
    """The extra special tokens named by the config (transformers 5 ``extra_special_tokens``, 4.x
    ``additional_special_tokens``)."""
    out: list[str] = []
    for key in ("extra_special_tokens", "additional_special_tokens"):
        values = config.get(key)
        if isinstance(values, list):
            out.extend(token for token in map(_content, values) if token)
    return out


def _check_text(text: object, where: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{where} expects str, got {type(text).__module__}.{type(text).__qualname__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as bad:
        raise ValueError(
            f"text cannot be encoded as UTF-8 (lone surrogate {text[bad.start]!r} at offset {bad.start}): "
            f"{text[max(0, bad.start - 20) : bad.start + 20]!r}"
        ) from None
    return text


def _check_ids(ids: object, where: str) -> Sequence[Any]:
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"{where} expects a sequence of int ids, got {type(ids).__name__}")
    return ids  # type: ignore[return-value]


def _clean_up_tokenization(text: str) -> str:
    # transformers' clean_up_tokenization (applied when the config sets clean_up_tokenization_spaces)
    return (
        text.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
    )


def _literal_regex(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """A regex matching any of ``patterns``, leftmost-longest (the added-token matchers of both transformers
    backends); built as a trie, so one text scan costs little however many tokens there are."""
    trie: dict[str, Any] = {}
    for pattern in patterns:
        if not pattern:
            continue
        node = trie
        for ch in pattern:
            node = node.setdefault(ch, {})
        node[""] = True
    if not trie:
        return None

    def build(node: dict[str, Any]) -> str:
        children = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not children:
            return ""
        body = children[0] if len(children) == 1 else "(?:" + "|".join(children) + ")"
        if "" in node:  # a token ends here: the longer ones are tried first (greedy), this one on backtracking
            return "(?:" + body + ")?"
        return body

    return re.compile(build(trie))


def _protobuf_fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of one protobuf message; fixed-width values as raw ints."""
    i = 0
    n = len(data)
    while i < n:
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            yield field, wire, value
        elif wire == 2:
            length, i = _varint(data, i)
            yield field, wire, data[i : i + length]
            i += length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield field, wire, int.from_bytes(data[i : i + width], "little")
            i += width
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} in a SentencePiece model")


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _spm_charsmap(sp: Any) -> bytes | None:
    """The precompiled normalization rules of a loaded SentencePiece model (NormalizerSpec.precompiled_charsmap);
    None when it has none (identity normalization), as transformers' SentencePieceExtractor reports it."""
    for field, wire, value in _protobuf_fields(sp.serialized_model_proto()):
        if field == 3 and wire == 2 and isinstance(value, bytes):  # ModelProto.normalizer_spec
            for sub, sub_wire, item in _protobuf_fields(value):
                if sub == 2 and sub_wire == 2 and isinstance(item, bytes):  # precompiled_charsmap
                    return item or None
            return None
    return None


# ---------------------------------------------------------------------------------------------------- normalizer

# Grapheme_Cluster_Break classes (UAX #29), as far as the normalizer below needs them.
_OTHER, _CR, _LF, _CONTROL, _EXTEND, _ZWJ, _RI, _PREPEND, _SPACING, _L, _V, _T, _LV, _LVT = range(14)


def _code_points(spec: str) -> frozenset[int]:
    """Code points written as hex numbers and ranges: "0600-0605 06DD"."""
    out: set[int] = set()
    for item in spec.split():
        low, _, high = item.partition("-")
        out.update(range(int(low, 16), int(high or low, 16) + 1))
    return frozenset(out)


_OTHER_GRAPHEME_EXTEND = _code_points(  # PropList.txt Other_Grapheme_Extend (U+200C ZWNJ among them)
    "09BE 09D7 0B3E 0B57 0BBE 0BD7 0CC2 0CD5-0CD6 0D3E 0D57 0DCF 0DDF 1B35 200C 302E-302F FF9E-FF9F 1133E 11357 "
    "114B0 114BD 115AF 11930 1D165 1D16E-1D172"
)
_NOT_SPACING_MARK = _code_points(  # UAX #29: Spacing_Mark characters that are not SpacingMark
    "102B 102C 1038 1062-1064 1067-106D 1083 1087-108C 108F 109A-109C 1A61 1A63 1A64 AA7B AA7D 11720 11721"
)
_PREPEND_CHARS = _code_points(  # Prepended_Concatenation_Mark and the InSC prefixed / repha consonants
    "0600-0605 06DD 070F 0890-0891 08E2 0D4E 110BD 110CD 111C2-111C3 1193F 11941 11A3A 11A84-11A89 11D46 11F02"
)


@functools.lru_cache(maxsize=1 << 16)
def _grapheme_class(ch: str) -> int:
    cp = ord(ch)
    if cp < 0x80:
        if cp == 0x0D:
            return _CR
        if cp == 0x0A:
            return _LF
        return _CONTROL if cp < 0x20 or cp == 0x7F else _OTHER
    if cp == 0x200D:
        return _ZWJ
    if cp in _PREPEND_CHARS:
        return _PREPEND
    if 0x1F1E6 <= cp <= 0x1F1FF:
        return _RI
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return _L
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return _V
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return _T
    if 0xAC00 <= cp <= 0xD7A3:
        return _LV if (cp - 0xAC00) % 28 == 0 else _LVT
    if cp in _OTHER_GRAPHEME_EXTEND or 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F:
        return _EXTEND
    category = unicodedata.category(ch)
    if category in ("Mn", "Me"):
        return _EXTEND
    if category == "Mc" or cp in (0x0E33, 0x0EB3):
        return _OTHER if cp in _NOT_SPACING_MARK else _SPACING
    if category in ("Cc", "Cf", "Zl", "Zp", "Cs"):
        return _CONTROL
    if category == "Cn" and (
        0x2060 <= cp <= 0x206F or 0xFFF0 <= cp <= 0xFFF8 or 0xE0000 <= cp <= 0xE0FFF or 0x1BCA0 <= cp <= 0x1BCA3
    ):
        return _CONTROL  # unassigned default-ignorable code points
    return _OTHER


def _joins(prev: int, cur: int, regional: int) -> bool:
    """No grapheme boundary between a character of class ``prev`` and one of class ``cur`` (rules GB3-GB13;
    ``regional``: regional indicators right before the boundary). Not implemented: GB9c (Indic conjuncts) and GB11
    (emoji ZWJ sequences): both only join characters of 2+ bytes into clusters of 6+ bytes, which the normalizer
    handles character by character either way (see _Charsmap.normalize)."""
    if prev == _CR:
        return cur == _LF
    if prev in (_CONTROL, _LF) or cur in (_CONTROL, _CR, _LF):
        return False
    if cur in (_EXTEND, _ZWJ, _SPACING) or prev == _PREPEND:
        return True
    if prev == _L:
        return cur in (_L, _V, _LV, _LVT)
    if prev in (_LV, _V):
        return cur in (_V, _T)
    if prev in (_LVT, _T):
        return cur == _T
    return prev == _RI and cur == _RI and regional % 2 == 1


def _graphemes(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each extended grapheme cluster of ``text``."""
    start = 0
    prev = _grapheme_class(text[0])
    regional = 1 if prev == _RI else 0
    for k in range(1, len(text)):
        cur = _grapheme_class(text[k])
        if not _joins(prev, cur, regional):
            yield start, k
            start = k
        regional = regional + 1 if cur == _RI else 0
        prev = cur
    yield start, len(text)


class _Charsmap:
    """SentencePiece's precompiled normalization rules (a darts-clone double array over UTF-8 keys, then a pool
    of NUL-terminated replacements), applied as the ``tokenizers`` library's ``Precompiled`` normalizer does.

    quirk: that normalizer is not SentencePiece's (longest match anywhere): it walks grapheme clusters; a cluster
    under 6 UTF-8 bytes whose SHORTEST matching prefix is a rule is replaced WHOLE by that rule's output (so
    "Ａ" + U+0301 becomes "A", dropping the accent, and "\\r\\n" becomes one space), and every other cluster is
    normalized character by character (so "e" + three U+0301 stays decomposed, "ｶﾞ" becomes "カ" + U+3099).
    """

    def __init__(self, blob: bytes) -> None:
        if len(blob) < 4:
            raise ValueError("precompiled_charsmap is too short")
        size = int.from_bytes(blob[:4], "little")
        if size % 4 or 4 + size > len(blob):
            raise ValueError(f"precompiled_charsmap: trie size {size} does not fit the {len(blob)} bytes")
        units = array.array("I" if array.array("I").itemsize == 4 else "L", blob[4 : 4 + size])
        if sys.byteorder == "big":
            units.byteswap()
        self._units = units
        self._pool = blob[4 + size :]
        self._chars: dict[str, str] = {}  # character -> its normalization
        # printable ASCII has no rule in SentencePiece's standard rule sets: such text is left alone, fast
        self._ascii_identity = all(self._first_value(bytes([c])) is None for c in range(0x20, 0x7F))

    def _first_value(self, key: bytes) -> int | None:
        """Value of the shortest rule that is a prefix of ``key`` (darts-clone commonPrefixSearch, first hit)."""
        units = self._units
        try:
            unit = units[0]
            pos = (unit >> 10) << ((unit & 0x200) >> 6)
            for c in key:
                if c == 0:  # quirk (tokenizers): the search stops at a NUL byte
                    return None
                pos ^= c
                unit = units[pos]
                if (unit & 0x800000FF) != c:
                    return None
                pos ^= (unit >> 10) << ((unit & 0x200) >> 6)
                if (unit >> 8) & 1:
                    return int(units[pos] & 0x7FFFFFFF)
        except IndexError:
            return None
        return None

    def _replacement(self, value: int) -> str:
        end = self._pool.find(b"\0", value)
        return self._pool[value : end if end >= 0 else len(self._pool)].decode("utf-8", "replace")

    def _char(self, ch: str) -> str:
        out = self._chars.get(ch)
        if out is None:
            value = self._first_value(ch.encode("utf-8"))
            out = ch if value is None else self._replacement(value)
            if len(self._chars) < 1 << 16:
                self._chars[ch] = out
        return out

    def normalize(self, text: str) -> str:
        if not text or (self._ascii_identity and text.isascii() and _ASCII_CONTROL.search(text) is None):
            return text
        out: list[str] = []
        char = self._char
        for start, end in _graphemes(text):
            if end - start == 1:
                out.append(char(text[start]))
                continue
            cluster = text[start:end]
            raw = cluster.encode("utf-8")
            if len(raw) < 6:
                value = self._first_value(raw)
                if value is not None:
                    out.append(self._replacement(value))
                    continue
            out.extend(char(ch) for ch in cluster)
        return "".join(out)


_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SPACE_RUNS = re.compile(" {2,}")


class _Normalizer:
    """The normalizer transformers gives NLLB / mBART-50: Precompiled(charsmap), then runs of spaces -> one."""

    def __init__(self, charsmap: bytes | None, collapse_spaces: bool) -> None:
        self._charsmap = _Charsmap(charsmap) if charsmap else None
        self._collapse = collapse_spaces

    def __call__(self, text: str) -> str:
        if self._charsmap is not None:
            text = self._charsmap.normalize(text)
        if self._collapse and "  " in text:
            text = _SPACE_RUNS.sub(" ", text)
        return text


# ---------------------------------------------------------------------------------------------------- added tokens


@dataclass(frozen=True)
class _AddedToken:
    id: int
    content: str
    special: bool = True
    normalized: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False

    @classmethod
    def parse(cls, idx: Any, data: Any, where: str) -> _AddedToken:
        content = _content(data)
        try:
            token_id = int(idx)
        except (TypeError, ValueError):
            token_id = -1
        if content is None or token_id < 0:
            raise ValueError(f"{where}: malformed added token {idx!r}: {data!r}")
        flags = data if isinstance(data, dict) else {}
        return cls(
            token_id,
            content,
            special=bool(flags.get("special", True)),
            normalized=bool(flags.get("normalized", not flags.get("special", True))),
            lstrip=bool(flags.get("lstrip", False)),
            rstrip=bool(flags.get("rstrip", False)),
            single_word=bool(flags.get("single_word", False)),
        )


def _is_whitespace(ch: str) -> bool:
    # Rust's char::is_whitespace (Unicode White_Space); Python's isspace() adds U+001C..U+001F
    return ch.isspace() and not "\x1c" <= ch <= "\x1f"


_WORD_CHAR = re.compile(r"\w")


class _Matcher:
    """Finds added tokens in a text like tokenizers' AddedVocabulary.find_matches (leftmost-longest, then the
    token's single_word / lstrip / rstrip options)."""

    def __init__(self, tokens: dict[str, _AddedToken]) -> None:
        self._tokens = tokens
        self._regex = _literal_regex(list(tokens))

    def split(self, text: str) -> list[tuple[str, _AddedToken | None]]:
        regex = self._regex
        if regex is None or not text:
            return [(text, None)]
        out: list[tuple[str, _AddedToken | None]] = []
        offset = 0
        for m in regex.finditer(text):
            token = self._tokens[m.group()]
            start, stop = m.span()
            if token.single_word and (
                (start > 0 and _WORD_CHAR.match(text[start - 1])) or (stop < len(text) and _WORD_CHAR.match(text[stop]))
            ):
                continue
            if token.lstrip:
                while start > 0 and _is_whitespace(text[start - 1]):
                    start -= 1
                start = max(start, offset)  # spaces a previous match already took stay with it
            if token.rstrip:
                while stop < len(text) and _is_whitespace(text[stop]):
                    stop += 1
            if offset < start:
                out.append((text[offset:start], None))
            out.append((text[start:stop], token))
            offset = stop
        if offset != len(text):
            out.append((text[offset:], None))
        return out


# ---------------------------------------------------------------------------------------------------- models

_K_UNK_PENALTY = 10.0
_WORD_CACHE = 1 << 16


class _Bpe:
    """tokenizers' BPE model (dropout off, fuse_unk on, no byte fallback, no continuing prefix)."""

    def __init__(self, vocab: dict[str, int], merges: Sequence[tuple[str, str]], unk_token: str) -> None:
        self.vocab = vocab
        self._id_to_token = {idx: token for token, idx in vocab.items()}
        self._unk = vocab.get(unk_token)
        table: dict[int, int] = {}
        for rank, (left, right) in enumerate(merges):
            a, b, merged = vocab.get(left), vocab.get(right), vocab.get(left + right)
            if a is None or b is None or merged is None:
                missing = next(t for t, i in ((left, a), (right, b), (left + right, merged)) if i is None)
                raise ValueError(f"BPE merge {left!r} + {right!r}: {missing!r} is not in the vocabulary")
            table[(a << 32) | b] = (rank << 32) | merged  # a later duplicate of a pair wins, as in tokenizers
        self._merges = table
        self._cache: dict[str, list[int]] = {}

    def id_to_token(self, idx: int) -> str | None:
        return self._id_to_token.get(idx)

    def encode(self, word: str) -> list[int]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        vocab = self.vocab
        symbols: list[int] = []
        pending_unk = False
        for ch in word:
            idx = vocab.get(ch)
            if idx is None:
                pending_unk = self._unk is not None  # quirk: a run of unknown characters is ONE <unk> (fuse_unk)
                continue
            if pending_unk:
                symbols.append(self._unk)  # type: ignore[arg-type]
                pending_unk = False
            symbols.append(idx)
        if pending_unk:
            symbols.append(self._unk)  # type: ignore[arg-type]
        out = self._merge(symbols) if len(symbols) > 1 else symbols
        if len(self._cache) >= _WORD_CACHE:
            self._cache.clear()
        self._cache[word] = out
        return out

    def _merge(self, symbols: list[int]) -> list[int]:
        # Lowest merge rank first, leftmost among equal ranks (tokenizers' Word::merge_all, with its stale checks).
        merges = self._merges
        n = len(symbols)
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        alive = [True] * n
        heap: list[tuple[int, int, int]] = []
        for i in range(n - 1):
            m = merges.get((symbols[i] << 32) | symbols[i + 1])
            if m is not None:
                heap.append((m >> 32, i, m & 0xFFFFFFFF))
        heapq.heapify(heap)
        while heap:
            _, pos, new_id = heapq.heappop(heap)
            if not alive[pos]:
                continue
            right = nxt[pos]
            if right >= n:
                continue
            m = merges.get((symbols[pos] << 32) | symbols[right])
            if m is None or (m & 0xFFFFFFFF) != new_id:
                continue  # stale: one of the two symbols was merged since
            symbols[pos] = new_id
            alive[right] = False
            nxt[pos] = nxt[right]
            if nxt[pos] < n:
                prv[nxt[pos]] = pos
            left = prv[pos]
            if left >= 0:
                m = merges.get((symbols[left] << 32) | new_id)
                if m is not None:
                    heapq.heappush(heap, (m >> 32, left, m & 0xFFFFFFFF))
            if nxt[pos] < n:
                m = merges.get((new_id << 32) | symbols[nxt[pos]])
                if m is not None:
                    heapq.heappush(heap, (m >> 32, pos, m & 0xFFFFFFFF))
        return [s for s, keep in zip(symbols, alive, strict=True) if keep]


class _Unigram:
    """tokenizers' Unigram model (Viterbi over every vocabulary entry, fuse_unk on, no byte fallback)."""

    def __init__(self, pieces: Sequence[tuple[str, float]], unk_id: int) -> None:
        if not 0 <= unk_id < len(pieces):
            raise ValueError(f"Unigram unk_id {unk_id} is outside the vocabulary of {len(pieces)} pieces")
        self._pieces = [piece for piece, _ in pieces]
        self._scores = [float(score) for _, score in pieces]
        # quirk: EVERY entry is a candidate, special tokens and language codes included (score 0.0, the best
        # score there is), so text that normalizes to "</s>" or "en_XX" inside a word becomes that token.
        self.vocab: dict[str, int] = {}
        for idx, piece in enumerate(self._pieces):
            self.vocab[piece] = idx  # a later duplicate wins, as in tokenizers
        longest: dict[str, int] = {}
        for piece in self.vocab:
            if piece and len(piece) > longest.get(piece[0], 0):
                longest[piece[0]] = len(piece)
        self._longest = longest
        self._unk = unk_id
        self._unk_score = min(self._scores, default=0.0) - _K_UNK_PENALTY
        self._cache: dict[str, list[int]] = {}

    def id_to_token(self, idx: int) -> str | None:
        return self._pieces[idx] if 0 <= idx < len(self._pieces) else None

    def encode(self, word: str) -> list[int]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        out = self._viterbi(word)
        if len(self._cache) >= _WORD_CACHE:
            self._cache.clear()
        self._cache[word] = out
        return out

    def _viterbi(self, word: str) -> list[int]:
        n = len(word)
        vocab, scores, longest, unk = self.vocab, self._scores, self._longest, self._unk
        best = [0.0] * (n + 1)
        start_of = [-1] * (n + 1)  # -1: no path ends here yet
        node_id = [0] * (n + 1)
        for s in range(n):
            if s and start_of[s] < 0:
                continue
            base = best[s]
            single = False
            for e in range(s + 1, min(n, s + longest.get(word[s], 0)) + 1):
                idx = vocab.get(word[s:e])
                if idx is None:
                    continue
                score = base + scores[idx]
                if start_of[e] < 0 or score > best[e]:  # quirk: ties keep the shorter (earlier) candidate
                    best[e], start_of[e], node_id[e] = score, s, idx
                if e == s + 1:
                    single = True
            if not single:  # no piece is this one character: the unknown node
                score = base + self._unk_score
                if start_of[s + 1] < 0 or score > best[s + 1]:
                    best[s + 1], start_of[s + 1], node_id[s + 1] = score, s, unk
        # back-track; a run of unknown nodes is fused into one string, looked up again (normally <unk>)
        strings: list[str] = []
        end = n
        unk_end = -1
        while end > 0:
            start = start_of[end]
            if node_id[end] == unk:
                if unk_end < 0:
                    unk_end = end
            else:
                if unk_end >= 0:
                    strings.append(word[end:unk_end])
                    unk_end = -1
                strings.append(word[start:end])
            end = start
        if unk_end >= 0:
            strings.append(word[0:unk_end])
        strings.reverse()
        return [vocab.get(s, unk) for s in strings]


def _generate_merges(vocab: dict[str, int]) -> list[tuple[str, str]]:
    """transformers' generate_merges(vocab) for a SentencePiece vocabulary {piece: spm id}: every split of every
    piece into two pieces, ordered by the merged piece's id, then by the lengths of the halves."""
    merges: list[tuple[str, str, int]] = []
    for merged, rank in vocab.items():
        local = [
            (merged[:i], merged[i:], rank) for i in range(1, len(merged)) if merged[:i] in vocab and merged[i:] in vocab
        ]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])))
    return [(left, right) for left, right, _ in merges]


# ---------------------------------------------------------------------------------------------------- shared base


class _FairseqTokenizer:
    """What the three families share: ``[language] tokens </s>`` sources, language lookups, id checks, spans."""

    family: ClassVar[str] = ""
    eos_id: int
    pad_id: int
    unk_id: int
    bos_id: int | None
    vocab_size: int
    languages: tuple[str, ...]

    _sp: Any
    _language_ids: dict[str, int]

    # ------------------------------------------------------------------ languages

    def language_id(self, code: str) -> int:
        """Id of the language token of ``code`` (e.g. ``eng_Latn``, ``en``, ``en_XX``)."""
        idx = self._language_ids.get(code) if isinstance(code, str) else None
        if idx is None:
            shown = ", ".join(self.languages[:4])
            for preferred in self._examples():
                if preferred not in shown and preferred in self._language_ids:
                    shown += f", {preferred}"
            raise ValueError(
                f"unknown {self.family} language {code!r}; this tokenizer knows {len(self.languages)} languages "
                f"(e.g. {shown}, ...; see .languages)"
            )
        return idx

    def _examples(self) -> tuple[str, ...]:
        return ()

    # manifest.tokenizer record role -> from_dir keyword
    _ROLES: ClassVar[dict[str, str]] = {
        "spm": "spm_file",
        "tokenizer_json": "tokenizer_json",
        "config": "config",
        "special_tokens_map": "special_tokens_map",
    }

    @classmethod
    def from_model_dir(cls, path: str | os.PathLike[str], files: dict[str, str]) -> Any:
        """The tokenizer of an exported model directory, whose manifest's ``tokenizer`` record names the files by
        role (``spm``, ``tokenizer_json``, ``config``, ``special_tokens_map``; M2M100 also ``vocab``); a role it
        does not name keeps the HF file name, other entries (``kind``) are ignored."""
        kwargs = {cls._ROLES[role]: name for role, name in files.items() if role in cls._ROLES}
        return cls.from_dir(path, **kwargs)  # type: ignore[attr-defined]  # each family defines its own

    def _frame(self, body: list[int], language: int) -> list[int]:
        return [language, *body, self.eos_id]

    # ------------------------------------------------------------------ encoding

    def _body(self, text: str) -> list[int]:
        raise NotImplementedError

    def encode(self, text: str, source_language: str) -> list[int]:
        """Source ids of ``text`` with its language token and </s> (== transformers' ``input_ids``)."""
        language = self.language_id(source_language)
        return self._frame(self._body(_check_text(text, "encode()")), language)

    def encode_batch(self, texts: Sequence[str], source_language: str) -> list[list[int]]:
        """``[encode(t, source_language) for t in texts]``."""
        if isinstance(texts, (str, bytes)):
            raise TypeError(f"encode_batch() expects a sequence of str, got a single {type(texts).__name__}")
        language = self.language_id(source_language)
        return [
            self._frame(self._body(_check_text(text, f"encode_batch() item {i}")), language)
            for i, text in enumerate(texts)
        ]

    # ------------------------------------------------------------------ decoding

    def _decode(self, ids: Sequence[Any], where: str) -> str:
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        """Ids -> text (== transformers' ``decode(ids, skip_special_tokens=True)``)."""
        return self._decode(_check_ids(ids, "decode()"), "decode()")

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """``[decode(ids) for ids in batch]``."""
        if isinstance(batch, (str, bytes)):
            raise TypeError(f"decode_batch() expects a sequence of id sequences, got {type(batch).__name__}")
        return [
            self._decode(_check_ids(ids, f"decode_batch() item {i}"), f"decode_batch() item {i}")
            for i, ids in enumerate(batch)
        ]

    def _out_of_range(self, idx: int, where: str) -> IndexError:
        return IndexError(f"{where}: token id {idx} is out of range: no token has it (vocab_size {self.vocab_size})")

    # ------------------------------------------------------------------ pieces

    def source_spans(self, text: str) -> list[tuple[str, Span]] | None:
        """sentencepiece.bpe.model's pieces of ``text`` with their character ranges (None: not valid UTF-8).
        These are SentencePiece's own pieces: for NLLB / mBART-50 they can differ from the tokens behind
        :meth:`encode` around runs of whitespace and the grapheme quirks of the normalizer."""
        return pieces_with_spans(self._sp, text)

    def target_spans(self, text: str) -> list[tuple[str, Span]] | None:
        """The same as :meth:`source_spans` (one SentencePiece model serves both sides)."""
        return pieces_with_spans(self._sp, text)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocab_size={self.vocab_size}, eos_id={self.eos_id}, unk_id={self.unk_id}, "
            f"pad_id={self.pad_id}, bos_id={self.bos_id}, languages={len(self.languages)})"
        )


# ---------------------------------------------------------------------------------------------------- tokenizers


class _PipelineTokenizer(_FairseqTokenizer):
    """A transformers 5 tokenizer backed by the ``tokenizers`` library: added tokens, normalizer, Metaspace
    pre-tokenizer (prepend "▁" always, split before every "▁"), BPE or Unigram model, Metaspace decoder."""

    def __init__(
        self,
        sp: Any,
        model: _Bpe | _Unigram,
        added: Sequence[_AddedToken],
        normalizer: _Normalizer,
        *,
        codes: Sequence[str],
        eos_token: str,
        pad_token: str,
        unk_token: str,
        bos_token: str | None,
        named_specials: Sequence[str],
        clean_up: bool,
    ) -> None:
        self._sp = sp
        self._model = model
        self._normalize = normalizer
        by_id: dict[int, _AddedToken] = {}
        by_content: dict[str, _AddedToken] = {}
        for token in sorted(added, key=lambda t: t.id):
            by_id[token.id] = token
            by_content[token.content] = token
        self._added_by_id = {idx: token.content for idx, token in by_id.items()}
        self._added_by_content = {content: token.id for content, token in by_content.items()}
        # tokenizers matches tokens with normalized=False in the raw text, those with normalized=True (NLLB's
        # <mask>) in the normalized text, against their own normalized form.
        self._raw = _Matcher({t.content: t for t in by_content.values() if not t.normalized})
        self._normalized = _Matcher({normalizer(t.content): t for t in by_content.values() if t.normalized})
        # decode(skip_special_tokens=True) drops every token whose STRING is a special added token (transformers
        # marks the named special tokens special whatever the file says).
        # quirk: <unk> is one of them, so unknown words vanish from decoded text.
        self._special = frozenset({t.content for t in by_content.values() if t.special} | set(named_specials))
        self._clean_up = clean_up

        def required(role: str, token: str) -> int:
            idx = self.token_to_id(token)
            if idx is None:
                raise ValueError(f"{role} token {token!r} is neither an added token nor in the vocabulary")
            return idx

        self.eos_id = required("eos", eos_token)
        self.pad_id = required("pad", pad_token)
        self.unk_id = required("unk", unk_token)
        self.bos_id = self.token_to_id(bos_token) if bos_token else None
        ids = {code: self.token_to_id(code) for code in dict.fromkeys(codes)}
        present = sorted((idx, code) for code, idx in ids.items() if idx is not None)
        if not present:
            raise ValueError(f"none of the {self.family} language codes (e.g. {', '.join(codes[:3])}) is a token")
        self.languages = tuple(code for _, code in present)
        self._language_ids = {code: idx for idx, code in present}
        # the number of ids (transformers' len(tokenizer)); the model's own vocab_size may be padded beyond it
        self.vocab_size = max([-1, *model.vocab.values(), *self._added_by_id]) + 1

    # ------------------------------------------------------------------ lookups

    def token_to_id(self, token: str) -> int | None:
        """Id of ``token`` (an added token, else a model vocabulary entry), or None."""
        idx = self._added_by_content.get(token)
        return idx if idx is not None else self._model.vocab.get(token)

    def id_to_token(self, idx: int) -> str | None:
        """Token of ``idx`` (an added token, else a model vocabulary entry), or None."""
        token = self._added_by_id.get(idx)
        return token if token is not None else self._model.id_to_token(idx)

    # ------------------------------------------------------------------ encoding

    def _words(self, text: str, out: list[int]) -> None:
        # Metaspace pre-tokenizer: " " -> "▁", "▁" prepended unless the piece starts with one (quirk: also after
        # every added token, and a typed "▁" counts), then one word per "▁" (quirk: a leading or trailing space is
        # kept, as a word "▁" of its own, where SentencePiece would drop it).
        text = text.replace(" ", _SPIECE_UNDERLINE)
        if text[0] != _SPIECE_UNDERLINE:
            text = _SPIECE_UNDERLINE + text
        encode = self._model.encode
        for word in text.split(_SPIECE_UNDERLINE)[1:]:
            out.extend(encode(_SPIECE_UNDERLINE + word))

    def _body(self, text: str) -> list[int]:
        out: list[int] = []
        for segment, token in self._raw.split(text):
            if token is not None:
                out.append(token.id)
                continue
            # quirk: each piece between added tokens is normalized and pre-tokenized on its own
            normalized = self._normalize(segment)
            if not normalized:
                continue
            for piece, inner in self._normalized.split(normalized):
                if inner is not None:
                    out.append(inner.id)
                elif piece:
                    self._words(piece, out)
        return out

    # ------------------------------------------------------------------ decoding

    def _decode(self, ids: Sequence[Any], where: str) -> str:
        tokens: list[str] = []
        special = self._special
        added = self._added_by_id
        model = self._model
        for raw in ids:
            idx = int(raw)  # like transformers: int() of whatever comes in (numpy ints included)
            token = added.get(idx)
            if token is None:
                token = model.id_to_token(idx) if idx >= 0 else None
                if token is None:
                    raise self._out_of_range(idx, where)
            if token not in special:
                tokens.append(token)
        if not tokens:
            return ""
        # Metaspace decoder: "▁" -> " ", except that the FIRST token loses all its "▁" (quirk: not only a leading
        # one: "a▁b" first comes out "ab").
        text = tokens[0].replace(_SPIECE_UNDERLINE, "") + "".join(tokens[1:]).replace(_SPIECE_UNDERLINE, " ")
        return _clean_up_tokenization(text) if self._clean_up else text


def _added_from_files(config: dict[str, Any], tokenizer_json: dict[str, Any] | None, where: str) -> list[_AddedToken]:
    """The added tokens transformers registers when it loads a directory: tokenizer_config.json's
    ``added_tokens_decoder`` when present, else tokenizer.json's ``added_tokens``."""
    decoder = config.get("added_tokens_decoder")
    if isinstance(decoder, dict) and decoder:
        return [_AddedToken.parse(idx, data, f"{where} tokenizer_config.json") for idx, data in decoder.items()]
    if tokenizer_json is not None:
        entries = tokenizer_json.get("added_tokens") or []
        if not isinstance(entries, list):
            raise ValueError(f"{where} tokenizer.json: added_tokens must be a list")
        return [_AddedToken.parse(e.get("id"), e, f"{where} tokenizer.json") for e in entries if isinstance(e, dict)]
    return []


def _json_charsmap(tokenizer_json: dict[str, Any]) -> bytes | None:
    """The Precompiled charsmap of tokenizer.json's normalizer (what transformers extracts), or None."""
    spec = tokenizer_json.get("normalizer")
    if not spec:
        return None
    items = spec.get("normalizers") if spec.get("type") == "Sequence" else [spec]
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == "Precompiled" and item.get("precompiled_charsmap"):
            return base64.b64decode(item["precompiled_charsmap"])
    return None


def _named(config: dict[str, Any], key: str, default: str | None) -> str | None:
    if key not in config:
        return default
    return _content(config[key])


class _PipelineFiles:
    """What from_dir reads for NLLB / mBART-50."""

    def __init__(
        self, path: str | os.PathLike[str], spm_file: str, tokenizer_json: str, config: str, special_tokens_map: str
    ) -> None:
        self.directory = _directory(path, f"{spm_file} and {tokenizer_json}")
        self.where = str(self.directory)
        self.config = _config(self.directory, config, special_tokens_map)
        self.sp = _load_spm(_required(self.directory, spm_file))
        file = _find(self.directory, tokenizer_json)
        self.tokenizer_json: dict[str, Any] | None = None
        if file is not None:
            data = _read_json(file)
            if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
                raise ValueError(f"{file} is not a tokenizers serialization (no model object)")
            self.tokenizer_json = data
        self.model: dict[str, Any] = self.tokenizer_json["model"] if self.tokenizer_json else {}
        self.charsmap = _json_charsmap(self.tokenizer_json) if self.tokenizer_json else _spm_charsmap(self.sp)
        self.added = _added_from_files(self.config, self.tokenizer_json, self.where)
        self.specials = {key: _named(self.config, key, None) for key in _NAMED_SPECIALS}

    def token(self, key: str, default: str) -> str:
        value = self.specials.get(key)
        return value if value else default

    def spm_pieces(self) -> list[tuple[str, float]]:
        sp = self.sp
        return [(sp.id_to_piece(i), float(sp.get_score(i))) for i in range(sp.get_piece_size())]

    def flag(self, key: str) -> bool:
        return bool(self.config.get(key, False))


def _ensure_added(
    added: list[_AddedToken], vocab: dict[str, int], tokens: Sequence[str | None], **flags: bool
) -> list[_AddedToken]:
    """transformers registers the named special tokens and the language codes as special added tokens when the
    files do not list them; those already in the model vocabulary keep their id (the others would get new ids at
    the end: not reproduced, such files do not occur)."""
    present = {t.content for t in added}
    out = list(added)
    for token in tokens:
        if token and token not in present and token in vocab:
            out.append(_AddedToken(vocab[token], token, **flags))
            present.add(token)
    return out


_NLLB_CODE = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")


class NllbTokenizer(_PipelineTokenizer):
    """NLLB-200 (M2M100ForConditionalGeneration with transformers' NllbTokenizer): BPE with the fairseq offset
    (<s>=0, <pad>=1, </s>=2, <unk>=3, SentencePiece piece i -> i + 1), the language codes (eng_Latn, zho_Hans,
    zho_Hant, ...) right after the pieces in :data:`NLLB_LANGUAGE_CODES` order, then <mask>.

    Source ids: ``[src_lang] tokens </s>``, or ``tokens </s> [src_lang]`` when tokenizer_config.json sets
    ``legacy_behaviour``. Generation starts from </s> and forces :meth:`language_id` of the target language.
    """

    family = "NLLB"

    def __init__(self, *args: Any, legacy_behaviour: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.legacy_behaviour = bool(legacy_behaviour)

    def _examples(self) -> tuple[str, ...]:
        return ("eng_Latn", "zho_Hans", "zho_Hant")

    def _frame(self, body: list[int], language: int) -> list[int]:
        if self.legacy_behaviour:
            return [*body, self.eos_id, language]
        return [language, *body, self.eos_id]

    @classmethod
    def from_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        spm_file: str = SPM_FILE,
        tokenizer_json: str = TOKENIZER_JSON_FILE,
        config: str = CONFIG_FILE,
        special_tokens_map: str = SPECIAL_TOKENS_MAP_FILE,
    ) -> NllbTokenizer:
        """Load an NLLB model directory: ``sentencepiece.bpe.model``, and ``tokenizer.json`` /
        ``tokenizer_config.json`` / ``special_tokens_map.json`` where present (as the hub repositories hold them;
        each may also be gzipped, ``name.gz``)."""
        files = _PipelineFiles(path, spm_file, tokenizer_json, config, special_tokens_map)
        bos, pad = files.token("bos_token", "<s>"), files.token("pad_token", "<pad>")
        eos, unk = files.token("eos_token", "</s>"), files.token("unk_token", "<unk>")
        mask = files.token("mask_token", "<mask>")
        extra_codes = [t for t in _extra_tokens(files.config) if _NLLB_CODE.fullmatch(t)]
        codes = [*NLLB_LANGUAGE_CODES, *(c for c in extra_codes if c not in NLLB_LANGUAGE_CODES)]
        if files.tokenizer_json is not None:
            model = files.model
            if model.get("type") != "BPE":
                raise ValueError(f"{files.where}: tokenizer.json holds a {model.get('type')} model, NLLB uses BPE")
            raw_vocab = model.get("vocab")
            if isinstance(raw_vocab, list):
                raw_vocab = {(t[0] if isinstance(t, list) else t): i for i, t in enumerate(raw_vocab)}
            if not isinstance(raw_vocab, dict):
                raise ValueError(f"{files.where}: tokenizer.json has no BPE vocabulary")
            vocab = {str(token): int(idx) for token, idx in raw_vocab.items()}
            merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model.get("merges") or []]
            if any(len(m) != 2 for m in merges):
                raise ValueError(f"{files.where}: tokenizer.json has a malformed BPE merge")
            added = files.added
        else:
            # What transformers converts from the SentencePiece model (SentencePieceExtractor + NllbConverter):
            # the fairseq ids, and merges generated from the SentencePiece vocabulary.
            pieces = files.spm_pieces()
            vocab = {bos: 0, pad: 1, eos: 2, unk: 3}
            for piece, _ in pieces:
                vocab.setdefault(piece, len(vocab))
            merges = _generate_merges({piece: i for i, (piece, _) in enumerate(pieces)})  # type: ignore[assignment]
            # Not what transformers 5.23 does (it loses the codes here): the fairseq layout, as on the hub.
            added = [_AddedToken(vocab[t], t) for t in dict.fromkeys((bos, pad, eos, unk))]
            added += [_AddedToken(len(vocab) + i, code) for i, code in enumerate(codes)]
            added.append(_AddedToken(len(vocab) + len(codes), mask, normalized=True, lstrip=True))
        added = _ensure_added(added, vocab, [bos, eos, unk, eos, pad, bos, mask, *codes])
        normalizer = _Normalizer(files.charsmap, collapse_spaces=True) if files.charsmap else _Normalizer(None, False)
        return cls(
            files.sp,
            _Bpe(vocab, merges, unk),  # type: ignore[arg-type]
            added,
            normalizer,
            codes=codes,
            eos_token=eos,
            pad_token=pad,
            unk_token=unk,
            bos_token=bos,
            named_specials=[t for t in files.specials.values() if t],
            # quirk: transformers never cleans up BPE output unless told twice
            clean_up=files.flag("clean_up_tokenization_spaces")
            and files.flag("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"),
            legacy_behaviour=files.flag("legacy_behaviour"),
        )


class MBart50Tokenizer(_PipelineTokenizer):
    """mBART-50 (facebook/mbart-large-50-*-mmt): Unigram with the fairseq offset (<s>=0, <pad>=1, </s>=2, <unk>=3,
    SentencePiece piece i -> i + 1), the codes of :data:`MBART50_LANGUAGE_CODES` (en_XX, zh_CN, ...) after the
    pieces, then <mask>. Source ids: ``[src_lang] tokens </s>``."""

    family = "mBART-50"

    def _examples(self) -> tuple[str, ...]:
        return ("en_XX", "zh_CN")

    @classmethod
    def from_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        spm_file: str = SPM_FILE,
        tokenizer_json: str = TOKENIZER_JSON_FILE,
        config: str = CONFIG_FILE,
        special_tokens_map: str = SPECIAL_TOKENS_MAP_FILE,
    ) -> MBart50Tokenizer:
        """Load an mBART-50 model directory: ``sentencepiece.bpe.model``, and ``tokenizer.json`` /
        ``tokenizer_config.json`` / ``special_tokens_map.json`` where present (each may also be gzipped)."""
        files = _PipelineFiles(path, spm_file, tokenizer_json, config, special_tokens_map)
        cls_token, pad = files.token("cls_token", "<s>"), files.token("pad_token", "<pad>")
        eos, unk = files.token("eos_token", "</s>"), files.token("unk_token", "<unk>")
        mask = files.token("mask_token", "<mask>")
        codes = list(MBART50_LANGUAGE_CODES)
        if files.tokenizer_json is not None:
            model = files.model
            if model.get("type") != "Unigram":
                raise ValueError(
                    f"{files.where}: tokenizer.json holds a {model.get('type')} model, mBART-50 uses Unigram"
                )
            raw = model.get("vocab")
            if not isinstance(raw, list) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in raw):
                raise ValueError(f"{files.where}: tokenizer.json has no Unigram vocabulary")
            pieces = [(str(p), float(s)) for p, s in raw]
        else:
            pieces = files.spm_pieces()
        if not any(piece in MBART50_LANGUAGE_CODES for piece, _ in pieces):
            # MBart50Tokenizer / MBart50Converter: fairseq specials, the pieces after SentencePiece's first three
            # (<unk>, <s>, </s>), the language codes, <mask>; every one of them a Unigram candidate.
            pieces = [(cls_token, 0.0), (pad, 0.0), (eos, 0.0), (unk, 0.0), *pieces[3:]]
            pieces += [(code, 0.0) for code in codes] + [(mask, 0.0)]
        model_ = _Unigram(pieces, unk_id=3)  # quirk: transformers hard-codes unk_id 3 for mBART-50
        vocab = model_.vocab
        added = files.added
        if files.tokenizer_json is None or not added:
            added = [_AddedToken(vocab[t], t) for t in dict.fromkeys((cls_token, pad, eos, unk)) if t in vocab]
            added += [_AddedToken(vocab[c], c) for c in codes if c in vocab]
            if mask in vocab:
                added.append(_AddedToken(vocab[mask], mask, lstrip=True))
        added = _ensure_added(added, vocab, [cls_token, eos, unk, eos, pad, cls_token, *codes])
        added = _ensure_added(added, vocab, [mask], lstrip=True)
        return cls(
            files.sp,
            model_,
            added,
            _Normalizer(files.charsmap, collapse_spaces=True),
            codes=codes,
            eos_token=eos,
            pad_token=pad,
            unk_token=unk,
            bos_token=cls_token,
            named_specials=[t for t in files.specials.values() if t],
            clean_up=files.flag("clean_up_tokenization_spaces"),
        )


# ---------------------------------------------------------------------------------------------------- M2M100


class M2M100Tokenizer(_FairseqTokenizer):
    """M2M100 (facebook/m2m100_*): SentencePiece pieces looked up BY STRING in vocab.json (fairseq's dictionary
    order, not the SentencePiece order); language tokens ``__en__``, ``__zh__``, ... get the ids right after
    vocab.json (len(vocab.json) + position in :data:`M2M100_LANGUAGE_CODES`, or in :data:`WMT21_LANGUAGE_CODES`
    when tokenizer_config.json says ``language_codes: wmt21``). Source ids: ``[__src__] tokens </s>``.

    :attr:`languages` holds the language tokens (``__en__``); :meth:`language_id` also takes transformers'
    ``src_lang`` codes (``en``).
    """

    family = "M2M100"
    _ROLES: ClassVar[dict[str, str]] = {
        "spm": "spm_file",
        "vocab": "vocab",
        "config": "config",
        "special_tokens_map": "special_tokens_map",
    }

    def __init__(
        self,
        sp: Any,
        vocab: dict[str, int],
        *,
        language_codes: Sequence[str] = M2M100_LANGUAGE_CODES,
        bos_token: str = "<s>",
        eos_token: str = "</s>",
        unk_token: str = "<unk>",
        pad_token: str = "<pad>",
        sep_token: str | None = "</s>",
        extra_special: Sequence[str] = (),
        added_tokens: Sequence[_AddedToken] = (),
        clean_up: bool = False,
        vocab_name: str = "vocab.json",
    ) -> None:
        """Low-level constructor; prefer :meth:`from_dir`. ``added_tokens``: tokenizer_config.json's
        ``added_tokens_decoder`` entries beyond the special and language tokens."""
        named = {"bos": bos_token, "eos": eos_token, "unk": unk_token, "pad": pad_token}
        for role, name in named.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"{role}_token must be a non-empty str, got {name!r}")
            if name not in vocab:
                raise ValueError(f"{role}_token {name!r} is not in {vocab_name}")
        self._sp = sp
        self._encoder = dict(vocab)
        self._decoder = {idx: token for token, idx in vocab.items()}
        self.bos_id, self.eos_id = vocab[bos_token], vocab[eos_token]
        self.unk_id, self.pad_id = vocab[unk_token], vocab[pad_token]
        self.unk_token = unk_token
        size = len(vocab)  # quirk: language ids follow len(vocab.json), not its largest id
        lang_tokens = {f"__{code}__": size + i for i, code in enumerate(language_codes)}
        self.languages = tuple(lang_tokens)
        self._language_ids = {**lang_tokens, **{code: size + i for i, code in enumerate(language_codes)}}
        # added tokens: cut out of the text before SentencePiece (transformers' trie, longest first)
        added: dict[str, int] = {t: vocab[t] for t in (bos_token, eos_token, unk_token, pad_token)}
        if sep_token and sep_token in vocab:
            added[sep_token] = vocab[sep_token]
        added.update(lang_tokens)
        for token in added_tokens:
            expected = added.get(token.content)
            if expected is not None and expected != token.id:
                raise ValueError(
                    f"added token {token.content!r} has id {token.id} in tokenizer_config.json, but "
                    f"{expected} by M2M100's layout"
                )
            added[token.content] = token.id
        self._added = added
        self._added_by_id = {idx: token for token, idx in added.items()}
        self._split = _literal_regex(list(added))
        # transformers' all_special_tokens / all_special_ids: skipped by decode(skip_special_tokens=True).
        # quirk: <unk> and the language tokens are among them.
        specials = [bos_token, eos_token, unk_token, pad_token, *([sep_token] if sep_token else [])]
        specials += [*lang_tokens, *extra_special]
        specials += [t.content for t in added_tokens if t.special]
        self._special_tokens = frozenset(specials)
        self._skip_ids = frozenset(added.get(t, vocab.get(t, self.unk_id)) for t in specials)
        self._clean_up = clean_up
        self.vocab_size = max([*vocab.values(), *added.values()]) + 1

    @classmethod
    def from_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        vocab: str = VOCAB_FILE,
        spm_file: str = SPM_FILE,
        config: str = CONFIG_FILE,
        special_tokens_map: str = SPECIAL_TOKENS_MAP_FILE,
    ) -> M2M100Tokenizer:
        """Load an M2M100 model directory: ``vocab.json``, ``sentencepiece.bpe.model``, and
        ``tokenizer_config.json`` / ``special_tokens_map.json`` where present (each may also be gzipped)."""
        directory = _directory(path, f"{vocab} and {spm_file}")
        vocab_file = _required(directory, vocab)
        sp = _load_spm(_required(directory, spm_file))
        data = _read_json(vocab_file)
        if not isinstance(data, dict):
            raise ValueError(f"{vocab_file} must hold a JSON object token -> id, got {type(data).__name__}")
        for token, idx in data.items():
            if type(idx) is not int or idx < 0:
                raise ValueError(f"{vocab_file}: id of token {token!r} must be a non-negative integer, got {idx!r}")
        settings = _config(directory, config, special_tokens_map)
        name = settings.get("language_codes", "m2m100")
        tables = {"m2m100": M2M100_LANGUAGE_CODES, "wmt21": WMT21_LANGUAGE_CODES}
        if name not in tables:
            raise ValueError(f"{directory}: language_codes must be 'm2m100' or 'wmt21', got {name!r}")
        named = {key: _named(settings, key, default) for key, default in _M2M100_DEFAULTS.items()}
        decoder = settings.get("added_tokens_decoder")
        added = [
            _AddedToken.parse(idx, item, f"{directory} tokenizer_config.json")
            for idx, item in (decoder.items() if isinstance(decoder, dict) else [])
        ]
        return cls(
            sp,
            data,
            language_codes=tables[name],
            bos_token=named["bos_token"] or "<s>",
            eos_token=named["eos_token"] or "</s>",
            unk_token=named["unk_token"] or "<unk>",
            pad_token=named["pad_token"] or "<pad>",
            sep_token=named["sep_token"],
            extra_special=_extra_tokens(settings),
            added_tokens=added,
            clean_up=bool(settings.get("clean_up_tokenization_spaces", False)),
            vocab_name=str(vocab_file),
        )

    def _examples(self) -> tuple[str, ...]:
        return ("__en__", "__zh__")

    def language_id(self, code: str) -> int:
        """Id of the language token ``code`` (``__en__``) or of transformers' code for it (``en``)."""
        return super().language_id(code)

    def token_to_id(self, token: str) -> int | None:
        """Id of ``token`` (a special or language token, else vocab.json's entry), or None."""
        idx = self._added.get(token)
        return idx if idx is not None else self._encoder.get(token)

    def id_to_token(self, idx: int) -> str | None:
        """Token of ``idx`` (a special or language token, else vocab.json's entry), or None."""
        token = self._added_by_id.get(idx)
        return token if token is not None else self._decoder.get(idx)

    def _body(self, text: str) -> list[int]:
        segments: list[tuple[str, int | None]]
        if self._split is None:
            segments = [(text, None)]
        else:
            segments = []
            pos = 0
            for m in self._split.finditer(text):
                segments.append((text[pos : m.start()], None))
                segments.append((m.group(), self._added[m.group()]))
                pos = m.end()
            segments.append((text[pos:], None))
        chunks = [segment for segment, idx in segments if idx is None and segment]
        # quirk: each piece between special / language tokens goes through SentencePiece on its own, and the
        # pieces are looked up by STRING in vocab.json (a piece vocab.json lacks -> <unk>)
        pieces = iter(self._sp.encode(chunks, out_type=str) if chunks else [])
        get, unk = self._encoder.get, self.unk_id
        out: list[int] = []
        for segment, idx in segments:
            if idx is not None:
                out.append(idx)
            elif segment:
                out.extend(get(piece, unk) for piece in next(pieces))
        return out

    def _decode(self, ids: Sequence[Any], where: str) -> str:
        skip = self._skip_ids
        tokens: list[str] = []
        for raw in ids:
            idx = int(raw)
            if idx in skip:
                continue
            token = self._added_by_id.get(idx)
            if token is None:
                token = self._decoder.get(idx)
                if token is None:
                    if idx < 0:
                        raise self._out_of_range(idx, where)
                    # quirk: an id vocab.json lacks (the model's 8 "madeupword" ids after the language tokens,
                    # which a model may generate) is "<unk>", kept literally as transformers does
                    token = self.unk_token
            tokens.append(token)
        # convert_tokens_to_string: special tokens that survive (a vocab.json entry spelled like one) are kept
        # literally, everything between them goes through SentencePiece; then str.strip().
        specials = self._special_tokens
        sp = self._sp
        out: list[str] = []
        current: list[str] = []
        for token in tokens:
            if token in specials:
                out.append(sp.decode(current) + token)
                current = []
            else:
                current.append(token)
        out.append(sp.decode(current))
        text = "".join(out).strip()
        return _clean_up_tokenization(text) if self._clean_up else text


_M2M100_DEFAULTS: dict[str, str | None] = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "sep_token": "</s>",
}


# manifest.tokenizer["kind"] -> class (enzh.runtime.tokenizer.tokenizer_for)
TOKENIZERS: dict[str, type[_FairseqTokenizer]] = {
    "nllb": NllbTokenizer,
    "m2m100": M2M100Tokenizer,
    "mbart50": MBart50Tokenizer,
}
