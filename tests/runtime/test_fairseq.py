"""enzh.runtime.fairseq (NLLB-200, M2M100, mBART-50) vs transformers 5.23 on tiny, locally trained
tokenizers (enzh.tools.models.write_*_tokenizer: no hub access).

Every text of a wide set (whitespace, punctuation, digits, Simplified and Traditional Chinese, emoji, combining
characters, full-width and other NFKC-changing characters, special-token and language-code strings, long texts)
and of a seeded random set must give transformers' ``input_ids`` for several source languages, and every id
sequence (the encodings, random ones with special and language ids) its ``decode(skip_special_tokens=True)``.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sentencepiece as spm

transformers = pytest.importorskip("transformers")

from enzh.runtime.fairseq import (  # noqa: E402
    M2M100_LANGUAGE_CODES,
    MBART50_LANGUAGE_CODES,
    NLLB_LANGUAGE_CODES,
    TOKENIZERS,
    M2M100Tokenizer,
    MBart50Tokenizer,
    NllbTokenizer,
)
from enzh.runtime.fairseq.normalizer import _Charsmap  # noqa: E402
from enzh.tools.models import (  # noqa: E402
    HANT,
    SPM_FILE,
    write_m2m100_tokenizer,
    write_mbart50_tokenizer,
    write_nllb_tokenizer,
)

SPECIAL_STRINGS = ["<s>", "</s>", "<pad>", "<unk>", "<mask>", "eng_Latn", "zho_Hans", "en_XX", "zh_CN", "__en__"]
TEXTS = [
    "",
    " ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    " a ",
    "Hello world.",
    "  the  cat   is  big  ",
    "The cat, the dog; and 3.14 + 42 = 45!",
    "What is the weather today?  Nice!",
    "don't stop, it's 10:30 (really) -- ok...",
    "0123456789 1,234.56 ２０２４年",
    "我你他是的了。",
    "我們這個國家說時過來。",
    "他说：“你好！”（测试）",
    "😀 emoji 👍🏽 ok 👩🏿‍💻 🇨🇳🇺🇸 1️⃣",
    "e\u0301 cafe\u0301 a\u0308\u0323 n\u0303",
    "e\u0301\u0301\u0301",
    "\u0301 leading combining",
    "Ａ\u0301ＢＣ ｈｅｌｌｏ　world",
    "ﬁne ½ ² ™ ℌ ǅ µ",
    "ｶﾞ ｳﾞ ｶﾀｶﾅ",
    "\u1100\u1161 \u1100\u1161\u11a8 한국어",
    "x\u200by\u200cz\u200dw\ufeff\u00ad",
    "\x00\x01\x7f",
    "\u3000x\u00a0y\u2003z",
    "</s>",
    "a</s>b",
    "<unk> <s> <pad>",
    "eng_Latn hello",
    "xeng_Latny zho_Hant",
    "en_XX zh_CN",
    "__en__ hi __zh__",
    "<mask>",
    "a <mask> b",
    "a  <mask>b",
    "＜/s＞ ＜mask＞ ＜unk＞",
    "▁a▁▁b ▁",
    "qxz jjj QXZ",
    "Qué tal? Ça va. Straße",
    "a . b , c ! d ?  ' s n't",
    "Hello " * 300,
    "我" * 2000,
    "the cat " * 500 + "我们" * 500,
]
ALPHABET = [
    *"abcdehilnorstwxyz ADHQZ.,!?'-0123456789",
    *"我你他们這個是的了。",
    *HANT[:8],
    *("\u0301", "\u0308", "\u0323", "Ａ", "ﬁ", "²", "½", "™", "\t", "\n", "\r", " ", "  ", "\u3000", "\u00a0"),
    *("<", ">", "/", "s", "▁", "😀", "🏽", "🇨", "🇳", "ｶ", "ﾞ", "\u200d", "\u200b", "\ufeff", "\x00"),
    *SPECIAL_STRINGS,
]


def random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(count)]


# name -> (our class, builder, builder kwargs, [(our language code, transformers' src_lang)])
CASES: dict[str, tuple[type, Callable[..., int], dict[str, Any], list[tuple[str, str]]]] = {
    "nllb": (
        NllbTokenizer,
        write_nllb_tokenizer,
        {},
        [("eng_Latn", "eng_Latn"), ("zho_Hans", "zho_Hans"), ("zho_Hant", "zho_Hant")],
    ),
    "nllb-legacy": (NllbTokenizer, write_nllb_tokenizer, {"legacy_behaviour": True}, [("zho_Hant", "zho_Hant")]),
    "m2m100": (M2M100Tokenizer, write_m2m100_tokenizer, {}, [("__en__", "en"), ("zh", "zh")]),
    "mbart50": (MBart50Tokenizer, write_mbart50_tokenizer, {}, [("en_XX", "en_XX"), ("zh_CN", "zh_CN")]),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fairseq")
    out = {}
    for name, (_, builder, kwargs, _) in CASES.items():
        builder(root / name, seed=3, **kwargs)
        out[name] = root / name
    return out


@pytest.fixture(scope="module")
def pairs(built: dict[str, Path]) -> dict[str, tuple[Any, Any]]:
    """name -> (ours, transformers'), both loaded from the same directory."""
    out = {}
    for name, (cls, _, _, _) in CASES.items():
        out[name] = (cls.from_dir(built[name]), transformers.AutoTokenizer.from_pretrained(str(built[name])))
    return out


def hf_encode(hf: Any, text: str, src_lang: str) -> list[int]:
    hf.src_lang = src_lang
    ids: list[int] = hf(text)["input_ids"]
    return ids


def hf_decode(hf: Any, ids: list[int]) -> str:
    text: str = hf.decode(ids, skip_special_tokens=True)
    return text


# ------------------------------------------------------------------------------------------ encoding


@pytest.mark.parametrize("name", list(CASES))
def test_encode_matches_transformers(pairs: dict[str, tuple[Any, Any]], name: str) -> None:
    ours, hf = pairs[name]
    texts = TEXTS + random_texts(7, 400)
    for code, src_lang in CASES[name][3]:
        expected = [hf_encode(hf, text, src_lang) for text in texts]
        got = [ours.encode(text, code) for text in texts]
        for text, want, have in zip(texts, expected, got, strict=True):
            assert have == want, (name, code, text[:80], hf.convert_ids_to_tokens(want)[:30])
        assert ours.encode_batch(texts, code) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_decode_matches_transformers(pairs: dict[str, tuple[Any, Any]], name: str) -> None:
    ours, hf = pairs[name]
    _, src_lang = CASES[name][3][0]
    sequences = [hf_encode(hf, text, src_lang) for text in TEXTS + random_texts(11, 200)]
    rng = random.Random(5)
    interesting = [
        ours.eos_id,
        ours.pad_id,
        ours.unk_id,
        ours.bos_id,
        *[ours.language_id(c) for c in ours.languages[:3]],
        ours.vocab_size - 1,
    ]
    for _ in range(1500):
        length = rng.randint(0, 14)
        sequences.append(
            [rng.choice(interesting) if rng.random() < 0.25 else rng.randrange(ours.vocab_size) for _ in range(length)]
        )
    for ids in sequences:
        assert ours.decode(ids) == hf_decode(hf, ids), (name, ids, hf.convert_ids_to_tokens(ids))
    assert ours.decode_batch(sequences[:300]) == [hf_decode(hf, ids) for ids in sequences[:300]]


def test_language_code_is_the_prefix_or_in_legacy_mode_the_suffix(pairs: dict[str, tuple[Any, Any]]) -> None:
    nllb, _ = pairs["nllb"]
    legacy, _ = pairs["nllb-legacy"]
    assert not nllb.legacy_behaviour and legacy.legacy_behaviour
    ids = nllb.encode("the cat", "zho_Hant")
    assert ids[0] == nllb.language_id("zho_Hant") and ids[-1] == nllb.eos_id
    assert legacy.encode("the cat", "zho_Hant") == [*ids[1:-1], legacy.eos_id, legacy.language_id("zho_Hant")]
    for name, code in (("m2m100", "__zh__"), ("mbart50", "zh_CN")):
        ours, _ = pairs[name]
        ids = ours.encode("the cat", code)
        assert ids[0] == ours.language_id(code) and ids[-1] == ours.eos_id


# ------------------------------------------------------------------------------------------ layout


@pytest.mark.parametrize("name", list(CASES))
def test_special_ids_languages_and_lookups(pairs: dict[str, tuple[Any, Any]], name: str) -> None:
    ours, hf = pairs[name]
    assert (ours.bos_id, ours.pad_id, ours.eos_id, ours.unk_id) == (0, 1, 2, 3)
    assert (ours.bos_id, ours.pad_id, ours.eos_id, ours.unk_id) == (
        hf.bos_token_id if hf.bos_token_id is not None else hf.cls_token_id,
        hf.pad_token_id,
        hf.eos_token_id,
        hf.unk_token_id,
    )
    assert ours.vocab_size == len(hf)
    ids = [ours.language_id(code) for code in ours.languages]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for code, src_lang in CASES[name][3]:
        hf.src_lang = src_lang
        assert ours.language_id(code) == hf("")["input_ids"][0 if name != "nllb-legacy" else -1]
    for idx in range(ours.vocab_size):
        token = hf.convert_ids_to_tokens(idx)
        assert ours.id_to_token(idx) == token, idx
        assert ours.token_to_id(token) == hf.convert_tokens_to_ids(token), token
    assert ours.id_to_token(ours.vocab_size) is None and ours.id_to_token(-1) is None
    assert ours.token_to_id("no such token") is None


def test_fairseq_layouts(built: dict[str, Path], pairs: dict[str, tuple[Any, Any]]) -> None:
    for name, codes in (("nllb", NLLB_LANGUAGE_CODES), ("mbart50", MBART50_LANGUAGE_CODES)):
        ours, _ = pairs[name]
        sp = spm.SentencePieceProcessor(model_file=str(built[name] / SPM_FILE))
        size = sp.get_piece_size()
        # fairseq offset: <s> <pad> </s> <unk>, then SentencePiece piece i at i + 1 (its own <unk> <s> </s> skipped)
        assert [ours.id_to_token(i) for i in range(4)] == ["<s>", "<pad>", "</s>", "<unk>"]
        assert all(ours.token_to_id(sp.id_to_piece(i)) == i + 1 for i in range(3, size))
        # the language codes right after the pieces, in transformers' order, then <mask>
        assert ours.languages == codes
        assert [ours.language_id(c) for c in codes] == list(range(size + 1, size + 1 + len(codes)))
        assert ours.token_to_id("<mask>") == size + 1 + len(codes) == ours.vocab_size - 1
    m2m, _ = pairs["m2m100"]
    vocab = json.loads((built["m2m100"] / "vocab.json").read_text(encoding="utf-8"))
    assert m2m.languages == tuple(f"__{code}__" for code in M2M100_LANGUAGE_CODES)
    assert [m2m.language_id(c) for c in M2M100_LANGUAGE_CODES] == list(range(len(vocab), len(vocab) + 100))
    assert m2m.language_id("en") == m2m.language_id("__en__")
    sp = spm.SentencePieceProcessor(model_file=str(built["m2m100"] / SPM_FILE))
    pieces = sp.encode("the cat drinks tea", out_type=str)
    assert m2m.encode("the cat drinks tea", "en")[1:-1] == [vocab.get(p, 3) for p in pieces]  # by string, not spm id


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("name", list(CASES))
def test_clear_errors(pairs: dict[str, tuple[Any, Any]], name: str) -> None:
    ours, hf = pairs[name]
    code = CASES[name][3][0][0]
    with pytest.raises(ValueError, match=r"unknown .* language 'xx_YY'.*e\.g\."):
        ours.encode("hello", "xx_YY")
    with pytest.raises(ValueError, match="lone surrogate"):
        ours.encode("bad \ud800 text", code)
    with pytest.raises(ValueError, match="lone surrogate"):
        ours.encode_batch(["fine", "bad \udfff"], code)
    with pytest.raises(Exception):  # noqa: B017 (transformers' own error is an opaque TypeError / RuntimeError)
        hf("bad \ud800 text")
    with pytest.raises(TypeError):
        ours.encode(b"bytes", code)
    with pytest.raises(TypeError):
        ours.encode_batch("one string", code)
    with pytest.raises(TypeError):
        ours.decode("text")
    for bad in (ours.vocab_size, ours.vocab_size + 1000, -1):
        if bad >= 0 and name.startswith("m2m100"):
            # an id the tokenizer lacks (the model's madeupword ids) is "<unk>", as transformers decodes it
            assert ours.decode([5, bad]) == hf.decode([5, bad], skip_special_tokens=True)
            continue
        with pytest.raises(IndexError, match="out of range"):
            ours.decode([5, bad])
        with pytest.raises(IndexError, match="out of range"):
            ours.decode_batch([[5], [bad]])


def test_numpy_ids_decode(pairs: dict[str, tuple[Any, Any]]) -> None:
    np = pytest.importorskip("numpy")
    for ours, _ in pairs.values():
        ids = ours.encode("the cat 我们", ours.languages[0])
        assert ours.decode(np.array(ids, dtype=np.int64)) == ours.decode(ids)


# ------------------------------------------------------------------------------------------ other directory forms


def test_mbart50_from_the_sentencepiece_model_alone(built: dict[str, Path], tmp_path: Path) -> None:
    """No tokenizer.json: both convert sentencepiece.bpe.model (transformers' MBart50Converter layout)."""
    shutil.copyfile(built["mbart50"] / SPM_FILE, tmp_path / SPM_FILE)
    ours = MBart50Tokenizer.from_dir(tmp_path)
    hf = transformers.MBart50Tokenizer.from_pretrained(str(tmp_path))
    for text in TEXTS + random_texts(13, 200):
        for code in ("en_XX", "zh_CN"):
            assert ours.encode(text, code) == hf_encode(hf, text, code), text[:60]
    for ids in ([0, 5, 6, 3, 204, 2], list(range(ours.vocab_size))):
        assert ours.decode(ids) == hf_decode(hf, ids)


def test_nllb_from_the_sentencepiece_model_alone(built: dict[str, Path], pairs: dict[str, Any], tmp_path: Path) -> None:
    """No tokenizer.json: the merges transformers would generate and the fairseq layout of the hub's files
    (transformers 5.23 itself loses the language codes here, see the module docstring)."""
    shutil.copyfile(built["nllb"] / SPM_FILE, tmp_path / SPM_FILE)
    ours = NllbTokenizer.from_dir(tmp_path)
    full, _ = pairs["nllb"]
    assert ours.vocab_size == full.vocab_size and ours.languages == full.languages
    for text in TEXTS + random_texts(17, 200):
        assert ours.encode(text, "zho_Hans") == full.encode(text, "zho_Hans"), text[:60]
    ids = list(range(ours.vocab_size))
    assert ours.decode(ids) == full.decode(ids)


def test_gzipped_files_and_model_dir_records(built: dict[str, Path], tmp_path: Path) -> None:
    assert set(TOKENIZERS) == {"nllb", "m2m100", "mbart50"}
    samples = TEXTS[:30]
    for kind, name, gz in (("nllb", "nllb", "tokenizer.json"), ("mbart50", "mbart50", "tokenizer.json")):
        copy = tmp_path / name
        shutil.copytree(built[name], copy)
        raw = (copy / gz).read_bytes()
        (copy / gz).unlink()
        (copy / f"{gz}.gz").write_bytes(gzip.compress(raw))
        ours = TOKENIZERS[kind].from_model_dir(copy, {"kind": kind, "spm": SPM_FILE, "tokenizer_json": gz})
        reference = TOKENIZERS[kind].from_dir(built[name])
        code = reference.languages[0]
        assert [ours.encode(t, code) for t in samples] == [reference.encode(t, code) for t in samples]
    m2m = TOKENIZERS["m2m100"].from_model_dir(built["m2m100"], {"kind": "m2m100", "vocab": "vocab.json"})
    assert m2m.encode("the cat", "__en__") == M2M100Tokenizer.from_dir(built["m2m100"]).encode("the cat", "en")
    with pytest.raises(FileNotFoundError, match="sentencepiece.bpe.model"):
        NllbTokenizer.from_dir(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="vocab.json"):
        M2M100Tokenizer.from_dir(tmp_path / "empty")


def test_spans(pairs: dict[str, tuple[Any, Any]]) -> None:
    for ours, _ in pairs.values():
        text = "The cat drinks tea. 我们 喝茶。"
        spans = ours.source_spans(text)
        assert spans is not None and spans == ours.target_spans(text)
        assert [piece for piece, _ in spans] == ours._sp.encode(text, out_type=str)
        for piece, (lo, hi) in spans:
            assert 0 <= lo <= hi <= len(text)
            assert piece.lstrip("▁") == text[lo:hi] or piece.lstrip("▁") == ""
        assert ours.source_spans("bad \ud800") is None


# ------------------------------------------------------------------------------------------ the normalizer


def test_charsmap_normalizer_is_tokenizers_precompiled(built: dict[str, Path]) -> None:
    """The grapheme-wise Precompiled normalizer of the tokenizers library, on its own (its quirks included:
    "Ａ" + U+0301 -> "A", "\\r\\n" -> " ", "ｶﾞ" -> "カ" + U+3099)."""
    normalizers = pytest.importorskip("tokenizers.normalizers")
    data = json.loads((built["mbart50"] / "tokenizer.json").read_text(encoding="utf-8"))
    blob = base64.b64decode(data["normalizer"]["normalizers"][0]["precompiled_charsmap"])
    reference, ours = normalizers.Precompiled(blob), _Charsmap(blob)
    extra = ["Ａ\u0301", "\r\n", "ｶﾞ", "ﬁ\u0301", "²\u0301", "\t\u0301", "\u0600a", "a\u0903", "🇨🇳🇺", "\u1100\u1161"]
    for text in TEXTS + extra + random_texts(19, 1000):
        assert ours.normalize(text) == reference.normalize_str(text), repr(text[:40])
    assert ours.normalize("Ａ\u0301") == "A" and ours.normalize("\r\n") == " "
