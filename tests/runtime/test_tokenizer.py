"""enzh.runtime.tokenizer.MarianTokenizer vs transformers.MarianTokenizer on tiny, locally trained spm models.

Everything is generated in a temp dir (no hub access): an English-ish source.spm, a Chinese-ish target.spm and
an opus-mt-en-zh style vocab.json (</s>=0, <unk>=1, >>cmn_Hans<<, >>cmn_Hant<<, union of both models' pieces,
<pad> last). Then thousands of deterministic random strings / id sequences must give identical results.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sentencepiece as spm

from enzh.runtime.tokenizer import MarianTokenizer

LANG_TOKENS = (">>cmn_Hans<<", ">>cmn_Hant<<")
N_RANDOM_TEXTS = 3000
N_RANDOM_ID_SEQS = 3000

_WORDS_TEXT = (
    "the of and to in is was that for on with as by at from this be are have not or one all there which "
    "when what your can said use each she how their will other about out many then them these some her "
    "would make like him into time has look two more write see number way could people than first water "
    "been call who oil its now find long down day did get come made may part model translation language "
    "Beijing Shanghai China English Python ONNX runtime token quick brown fox jumps over lazy dog hello "
    "world"
)
WORDS = _WORDS_TEXT.split()
# Common Chinese characters: the first 200 train target.spm (a few also source.spm); the rest are unseen.
HANZI = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多"
    "天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但"
    "身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四"
    "第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通"
    "目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物"
)
HANZI_TRAIN, HANZI_RARE = HANZI[:200], HANZI[200:]
ZH_PUNCT = "，。！？：；（）【】「」『』、《》…—～"

EMOJI = ["😀", "👍", "👍🏽", "👩🏿‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇨🇳", "🇺🇸", "🤷‍♀️", "1️⃣", "🫠", "🧑🏻‍🤝‍🧑🏿"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\ufeff", "\u2060", "\u00ad", "\u180e"]
COMBINING = [
    "e\u0301",
    "a\u0308\u0323",
    "n\u0303",
    "\u0301",
    "Z\u0351\u0358\u036b",
    "\u0915\u094d\u0937",
    "o\u20dd",
]
FULLWIDTH = [*ZH_PUNCT, "ＡＢＣ", "ｈｅｌｌｏ", "１２３", "\u3000", "．", "＃", "＠", "ｶﾀｶﾅ"]
CONTROL = ["\x00", "\x01", "\x07", "\x08", "\x1b", "\x7f", "\x85", "\x1c", "\x1f", "\t", "\n", "\r", "\r\n"]
CONTROL += ["\v", "\f", "\u2028", "\u2029", "\x9f"]
RTL = ["مرحبا بالعالم", "שלום עולם", "\u202e", "\u200f", "\u202b", "abc\u202edef", "\u0627\u0644\u0651\u064e"]
SPACES = [" ", "  ", "\u00a0", "\u3000", "\u2003", "\t", "\u202f"]
MISC = ["ﬁ", "Ⅻ", "①", "㍿", "ℌ", "µ", "ß", "İ", "ǅ", "𝔘𝔫𝔦", "\U0010ffff", "\ue000", "\ufffd", "Å", "™", "½"]
LANG_LIKE = [
    *LANG_TOKENS,
    ">>xx_Yyyy<<",
    ">>fra<<",
    ">><<",
    ">>",
    "<<",
    ">>>",
    "<<<",
    ">>cmn_Hans",
    "cmn_Hans<<",
]
SPECIAL_LIKE = ["</s>", "<unk>", "<pad>", "<s>", "</s", "<pad", "< /s>", "<</s>>", "</s></s>"]
PUNCT = [*".,!?;:'\"()[]{}-_/\\@#$%^&*+=<>|~`", "...", "--", "?!", "«", "»", "“", "”", "‘", "’"]


def _number(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return str(rng.randint(0, 10 ** rng.randint(1, 12)))
    if kind == 1:
        return f"{rng.uniform(-1000, 1000):.{rng.randint(1, 4)}f}"
    if kind == 2:
        return f"{rng.randint(1000, 10**9):,}"
    if kind == 3:
        return f"{rng.randint(0, 100)}%"
    if kind == 4:
        return f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/{rng.randint(1990, 2030)}"
    return f"${rng.randint(1, 999)}.{rng.randint(0, 99):02d}"


def _word(rng: random.Random) -> str:
    if rng.random() < 0.8:
        w = rng.choice(WORDS)
    else:
        w = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzéüñø") for _ in range(rng.randint(1, 12)))
    r = rng.random()
    return w.capitalize() if r < 0.15 else w.upper() if r < 0.2 else w


def _hanzi(rng: random.Random, pool: str = HANZI) -> str:
    return "".join(rng.choice(pool) for _ in range(rng.randint(1, 8)))


_FRAGMENTS: list[tuple[float, Callable[[random.Random], str]]] = [
    (30, _word),
    (6, _number),
    (6, lambda r: r.choice(PUNCT)),
    (8, _hanzi),
    (3, lambda r: r.choice(EMOJI)),
    (2, lambda r: r.choice(ZERO_WIDTH)),
    (2, lambda r: r.choice(COMBINING)),
    (3, lambda r: r.choice(FULLWIDTH)),
    (2, lambda r: r.choice(CONTROL)),
    (2, lambda r: r.choice(RTL)),
    (2, lambda r: r.choice(MISC)),
    (2, lambda r: r.choice(LANG_LIKE)),
    (2, lambda r: r.choice(SPECIAL_LIKE)),
    (1, lambda r: chr(r.randint(0x20, 0x2FFFF)) if r.random() < 0.5 else chr(r.randint(0x80, 0x3000))),
]
_WEIGHTS = [w for w, _ in _FRAGMENTS]
_MAKERS = [f for _, f in _FRAGMENTS]


def _random_text(rng: random.Random, max_fragments: int = 25) -> str:
    parts = []
    for _ in range(rng.randint(1, max_fragments)):
        frag = rng.choices(_MAKERS, _WEIGHTS)[0](rng)
        if 0xD800 <= ord(frag[0]) <= 0xDFFF:  # lone surrogates are not text (tested separately)
            frag = "?"
        parts.append(frag)
        parts.append(rng.choice(["", " ", " ", " ", " ", "  ", "\t", "\n"]))
    text = "".join(parts)
    r = rng.random()
    if r < 0.15:
        text = rng.choice(LANG_TOKENS) + rng.choice(["", " "]) + text
    elif r < 0.18:
        text = rng.choice(SPACES) + text
    return text


def random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [_random_text(rng) for _ in range(n)]


EDGE_CASES = [
    "",
    " ",
    "   ",
    "\t\n\r ",
    "\u3000",
    "\u00a0\u2003",
    "\x00",
    "a\x00b",
    "\x01\x02\x03",
    "Hello world.",
    "The quick brown fox jumps over the lazy dog!",
    "我爱Python编程，真的！",
    "Hello，世界。How are you？",
    "ＡＢＣ１２３ full-width ｆｏｏ",
    "👨‍👩‍👧‍👦 family 👍🏽 thumbs 🏳️‍🌈 flag",
    "zero\u200bwidth\u200djoiner\u200cnon\ufeffbom",
    "cafe\u0301 na\u0303o Z\u0351\u0358\u036b",
    "مرحبا بالعالم hello שלום",
    "\u202eevil\u202c text",
    ">>cmn_Hans<< Hello world.",
    ">>cmn_Hans<<Hello world.",
    ">>cmn_Hant<< Hello world.",
    ">>cmn_Hans<<",
    ">>cmn_Hans<< ",
    " >>cmn_Hans<< leading space",
    "\n>>cmn_Hans<< leading newline",
    "Hello >>cmn_Hans<< middle",
    "Hello world >>cmn_Hans<<",
    ">>cmn_Hans<<>>cmn_Hant<< twice",
    ">>cmn_Hans<< >>cmn_Hant<< twice spaced",
    ">>cmn_Hans<< >>cmn_Hans<< same twice",
    ">>xx_Yyyy<< unknown code",
    ">>xx_Yyyy<<",
    ">><< empty code",
    ">>>>cmn_Hans<< extra brackets",
    ">>cmn_Hans<<< extra close",
    ">>cmn_Hans no close",
    "cmn_Hans<< no open",
    ">>a b c<< spaces in code",
    ">>a\nb<< newline in code",
    "<<>>",
    ">><",
    ">>",
    "<<",
    "</s>",
    "<unk>",
    "<pad>",
    "<s>",
    "a</s>b",
    "a </s> b",
    "</s>>>cmn_Hans<< after eos",
    ">>cmn_Hans<</s>",
    ">></s><<",
    "<</s>>",
    "</s></s></s>",
    "<unk><pad></s>",
    "<pad>>>cmn_Hant<< x",
    "x" * 3000,
    "hello " * 2000,
    "你好" * 3000,
    "👍🏽" * 1000,
    " ".join(str(i) for i in range(3000)),
    ".,!?" * 500,
    "\u200b" * 500,
    "e\u0301" * 1000,
]


def _build_vocab(models: list[spm.SentencePieceProcessor], drop_every: int = 0, offset: int = 0) -> dict[str, int]:
    tokens = ["</s>", "<unk>", *LANG_TOKENS]
    seen = set(tokens)
    for sp in models:
        for i in range(sp.get_piece_size()):
            piece = sp.id_to_piece(i)
            if piece not in seen:
                seen.add(piece)
                tokens.append(piece)
    tokens.append("<pad>")
    vocab = {}
    for idx, tok in enumerate(tokens):
        # optionally leave holes in the id space (not opus layout; exercises transformers' spm fallback)
        if drop_every and idx > 10 and idx % drop_every == 0 and tok != "<pad>":
            continue
        vocab[tok] = idx + offset
    return vocab


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("marian_tok")
    rng = random.Random(20240601)
    src_lines = []
    for _ in range(4000):
        words = [_word(rng) if rng.random() < 0.85 else _number(rng) for _ in range(rng.randint(3, 15))]
        line = " ".join(words) + rng.choice([".", "!", "?", ",", "", ":", ";"])
        if rng.random() < 0.05:
            line += " " + _hanzi(rng, HANZI_TRAIN[:60])  # a few Chinese characters in the source model
        src_lines.append(line)
    tgt_lines = []
    for _ in range(4000):
        line = "".join(
            _hanzi(rng, HANZI_TRAIN) + (rng.choice(ZH_PUNCT) if rng.random() < 0.4 else "")
            for _ in range(rng.randint(1, 5))
        )
        if rng.random() < 0.2:
            line += rng.choice([" ", ""]) + rng.choice([_word(rng), _number(rng)])
        tgt_lines.append(line)
    (root / "src.txt").write_text("\n".join(src_lines), encoding="utf-8")
    (root / "tgt.txt").write_text("\n".join(tgt_lines), encoding="utf-8")
    for name, text_file, size in (("source", "src.txt", 300), ("target", "tgt.txt", 500)):
        spm.SentencePieceTrainer.train(
            input=str(root / text_file),
            model_prefix=str(root / name),
            vocab_size=size,
            model_type="unigram",
            character_coverage=0.9995,
            hard_vocab_limit=False,
            num_threads=2,
            minloglevel=2,
        )
        (root / f"{name}.model").rename(root / f"{name}.spm")
    models = [spm.SentencePieceProcessor(model_file=str(root / f"{n}.spm")) for n in ("source", "target")]
    vocab = _build_vocab(models)
    (root / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1), encoding="utf-8")
    return root


def _load_hf(path: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        return transformers.MarianTokenizer.from_pretrained(str(path))


@pytest.fixture(scope="session")
def hf_tok(model_dir: Path) -> Any:
    return _load_hf(model_dir)


@pytest.fixture(scope="session")
def tok(model_dir: Path) -> MarianTokenizer:
    return MarianTokenizer.from_dir(model_dir)


# ---------------------------------------------------------------------------------------------- basics


def test_does_not_import_transformers_or_torch() -> None:
    code = "import sys, enzh.runtime.tokenizer; bad = {'transformers', 'torch'} & set(sys.modules); assert not bad, bad"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_attributes(tok: MarianTokenizer, hf_tok: Any, model_dir: Path) -> None:
    vocab = json.loads((model_dir / "vocab.json").read_text(encoding="utf-8"))
    assert (tok.eos_id, tok.unk_id) == (0, 1) == (hf_tok.eos_token_id, hf_tok.unk_token_id)
    assert tok.pad_id == len(vocab) - 1 == hf_tok.pad_token_id
    assert tok.vocab_size == len(vocab) == hf_tok.vocab_size
    assert tok.language_tokens == LANG_TOKENS == tuple(hf_tok.supported_language_codes)
    assert tok.token_to_id(">>cmn_Hans<<") == 2
    assert tok.token_to_id("<pad>") == tok.pad_id
    assert tok.token_to_id("definitely not a token") is None
    assert tok.id_to_token(3) == ">>cmn_Hant<<"
    assert tok.id_to_token(10**6) is None
    assert "vocab_size" in repr(tok)


# ---------------------------------------------------------------------------------------------- encode


def _all_texts() -> list[str]:
    rng = random.Random(7)
    long_texts = [_random_text(rng, max_fragments=n) for n in (2000, 5000)]
    return EDGE_CASES + long_texts + random_texts(N_RANDOM_TEXTS, seed=1)


def test_encode_matches_transformers(tok: MarianTokenizer, hf_tok: Any) -> None:
    texts = _all_texts()
    assert len(texts) > N_RANDOM_TEXTS
    expected = [hf_tok(t)["input_ids"] for t in texts]
    assert tok.encode_batch(texts) == expected
    mismatches = [(t, e, tok.encode(t)) for t, e in zip(texts, expected, strict=True) if tok.encode(t) != e]
    assert not mismatches[:5]


def test_source_pieces_match_transformers_tokenize(tok: MarianTokenizer, hf_tok: Any) -> None:
    texts = EDGE_CASES + random_texts(1000, seed=2)
    mismatches = [t for t in texts if tok.source_pieces(t) != hf_tok.tokenize(t)]
    assert not mismatches[:5]
    # pieces + eos -> ids is exactly encode()
    for t in texts[:200]:
        ids = [tok.token_to_id(p) for p in tok.source_pieces(t)]
        assert [tok.unk_id if i is None else i for i in ids] + [tok.eos_id] == tok.encode(t)


def test_encode_batch_edge_cases(tok: MarianTokenizer) -> None:
    assert tok.encode_batch([]) == []
    assert tok.encode_batch([""]) == [[tok.eos_id]]
    assert tok.encode_batch(("", "</s>", ">>cmn_Hans<<")) == [[0], [0, 0], [2, 0]]
    texts = random_texts(50, seed=3)
    assert tok.encode_batch(texts) == [tok.encode(t) for t in texts]


def test_language_code_quirks(tok: MarianTokenizer, hf_tok: Any) -> None:
    hans = tok.token_to_id(">>cmn_Hans<<")
    assert tok.encode(">>cmn_Hans<< Hello")[0] == hans
    # only a code at the very start is a code; elsewhere it is plain text for SentencePiece
    assert hans not in tok.encode(" >>cmn_Hans<< Hello")
    assert hans not in tok.encode("Hello >>cmn_Hans<<")
    # a second code right after the first is not a code
    ids = tok.encode(">>cmn_Hans<<>>cmn_Hant<<")
    assert ids[0] == hans and tok.token_to_id(">>cmn_Hant<<") not in ids
    # unknown code -> a single <unk>; the code ends at the FIRST "<<"
    assert tok.encode(">>xx_Yyyy<<")[:1] == [tok.unk_id] and len(tok.encode(">>xx_Yyyy<<")) == 2
    assert tok.source_pieces(">>a b<<c<<")[0] == ">>a b<<"
    for t in (">>cmn_Hans<<", ">>xx_Yyyy<<", ">>a b<<c<<", ">><<"):
        assert tok.encode(t) == hf_tok(t)["input_ids"]


def test_special_token_strings_in_text(tok: MarianTokenizer, hf_tok: Any) -> None:
    assert tok.encode("</s>") == [tok.eos_id, tok.eos_id]
    ids = tok.encode("hello</s>world")
    assert ids.count(tok.eos_id) == 2
    assert tok.encode("<pad>") == [tok.pad_id, tok.eos_id]
    assert tok.encode("<unk>") == [tok.unk_id, tok.eos_id]
    assert tok.encode("</s>>>cmn_Hans<<x")[:2] == [tok.eos_id, tok.token_to_id(">>cmn_Hans<<")]
    for t in ("hello</s>world", "<pad>", "<unk>", "</s>>>cmn_Hans<<x", "<s>"):
        assert tok.encode(t) == hf_tok(t)["input_ids"]


def test_unknown_source_piece_mapped_by_string(tok: MarianTokenizer, hf_tok: Any, model_dir: Path) -> None:
    """A character the source model lacks but vocab.json has (from target.spm) gets its real id."""
    src = spm.SentencePieceProcessor(model_file=str(model_dir / "source.spm"))
    chars = [c for c in HANZI_TRAIN if tok.token_to_id(c) is not None and src.piece_to_id(c) == src.unk_id()]
    assert chars
    ids = tok.encode("a " + chars[0])
    assert tok.token_to_id(chars[0]) in ids
    assert ids == hf_tok("a " + chars[0])["input_ids"]


# ---------------------------------------------------------------------------------------------- decode


def _random_id_seqs(tok: MarianTokenizer, model_dir: Path, n: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    tgt = spm.SentencePieceProcessor(model_file=str(model_dir / "target.spm"))
    specials = [tok.eos_id, tok.unk_id, tok.pad_id, *(tok.token_to_id(t) or 0 for t in LANG_TOKENS)]
    seqs: list[list[int]] = [[], [tok.eos_id], [tok.pad_id, tok.eos_id], [2], [2, 3, 1, 0, tok.pad_id]]
    for text in random_texts(n // 3, seed=seed):  # realistic: target-model pieces of random text
        ids = [tok.token_to_id(p) for p in tgt.encode(text, out_type=str)]
        seqs.append([tok.unk_id if i is None else i for i in ids] + [tok.eos_id])
    while len(seqs) < n:
        length = rng.choice([0, 1, 2, rng.randint(3, 30), rng.randint(30, 200)])
        seq = []
        for _ in range(length):
            r = rng.random()
            seq.append(rng.choice(specials) if r < 0.15 else rng.randrange(tok.vocab_size))
        if rng.random() < 0.5:
            seq = [tok.pad_id, *seq, tok.eos_id] + [tok.pad_id] * rng.randint(0, 3)
        seqs.append(seq)
    return seqs


def test_decode_matches_transformers(tok: MarianTokenizer, hf_tok: Any, model_dir: Path) -> None:
    seqs = _random_id_seqs(tok, model_dir, N_RANDOM_ID_SEQS, seed=11)
    # transformers 5.23 decodes through source.spm by default; use_source_tokenizer=False is the target.spm
    # path (transformers 4.x default). With these (opus-like, no byte fallback) models the two agree.
    expected_default = [hf_tok.decode(s, skip_special_tokens=True) for s in seqs]
    expected_target = [hf_tok.decode(s, skip_special_tokens=True, use_source_tokenizer=False) for s in seqs]
    got = tok.decode_batch(seqs)
    assert got == expected_target
    assert got == expected_default
    assert [tok.decode(s) for s in seqs] == got


def test_decode_quirks(tok: MarianTokenizer, hf_tok: Any) -> None:
    words = [i for i in (tok.token_to_id(p) for p in ("▁the", "▁world")) if i is not None]
    assert words
    # eos / pad / unk vanish; language tokens are NOT special and stay in the text
    seq = [tok.pad_id, 2, *words, tok.unk_id, tok.eos_id, tok.pad_id]
    out = tok.decode(seq)
    assert out.startswith(">>cmn_Hans<<") and "<unk>" not in out and "</s>" not in out
    assert out == hf_tok.decode(seq, skip_special_tokens=True)
    assert tok.decode([]) == "" == tok.decode([tok.eos_id, tok.pad_id, tok.unk_id])


def test_decode_input_types(tok: MarianTokenizer, model_dir: Path) -> None:
    np = pytest.importorskip("numpy")
    seqs = _random_id_seqs(tok, model_dir, 60, seed=12)
    for s in seqs:
        assert tok.decode(np.asarray(s, dtype=np.int64)) == tok.decode(s) == tok.decode(tuple(s))
    assert tok.decode_batch([]) == []
    assert tok.decode_batch([[], [tok.eos_id]]) == ["", ""]


def test_nonstandard_vocab(model_dir: Path, tmp_path: Path) -> None:
    """Holes in the id space and odd tokens that are no spm piece: still identical to transformers.

    ids missing from vocab.json fall back to the spm's own id -> piece table (as in transformers; with the
    offset, ids 0-2 give target.spm's "<unk>", "<s>", "</s>" pieces, i.e. special strings that survive
    skip_special_tokens); tokens with Unicode whitespace check the final str.strip().
    """
    for name in ("source.spm", "target.spm"):
        shutil.copy(model_dir / name, tmp_path / name)
    models = [spm.SentencePieceProcessor(model_file=str(tmp_path / n)) for n in ("source.spm", "target.spm")]
    vocab = _build_vocab(models, drop_every=9, offset=3)
    odd = ["\u3000", "x\t", "\x85", "end\u2028", "▁▁", "\u2003▁y▁", ">>zz_Latn<<", "<s>"]
    for extra in odd:
        vocab.setdefault(extra, max(vocab.values()) + 1)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    ours, hf = MarianTokenizer.from_dir(tmp_path), _load_hf(tmp_path)
    assert ours.vocab_size == len(vocab) == hf.vocab_size
    assert ours.language_tokens == (*LANG_TOKENS, ">>zz_Latn<<") == tuple(hf.supported_language_codes)
    tgt_size = models[1].get_piece_size()
    holes = [i for i in range(tgt_size) if i not in vocab.values()]
    odd_ids = [vocab[t] for t in odd]
    assert {0, 1, 2} <= set(holes)
    rng = random.Random(5)
    for _ in range(500):
        seq = [
            rng.choice(holes) if r < 0.3 else rng.choice(odd_ids) if r < 0.45 else rng.randrange(tgt_size)
            for r in (rng.random() for _ in range(rng.randint(0, 12)))
        ]
        assert ours.decode(seq) == hf.decode(seq, skip_special_tokens=True, use_source_tokenizer=False), seq
    for text in random_texts(300, seed=6):
        assert ours.encode(text) == hf(text)["input_ids"]
    beyond = max(max(vocab.values()), tgt_size) + 5
    with pytest.raises(IndexError):
        hf.decode([beyond], skip_special_tokens=True, use_source_tokenizer=False)
    with pytest.raises(IndexError, match=str(beyond)):
        ours.decode([beyond])


# ---------------------------------------------------------------------------------------------- errors


def test_missing_dir(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="nope"):
        MarianTokenizer.from_dir(missing)


@pytest.mark.parametrize("name", ["source.spm", "target.spm", "vocab.json"])
def test_missing_file(model_dir: Path, tmp_path: Path, name: str) -> None:
    for f in ("source.spm", "target.spm", "vocab.json"):
        if f != name:
            shutil.copy(model_dir / f, tmp_path / f)
    with pytest.raises(FileNotFoundError) as info:
        MarianTokenizer.from_dir(tmp_path)
    assert name in str(info.value) and str(tmp_path) in str(info.value)


def test_custom_file_names(model_dir: Path, tmp_path: Path, tok: MarianTokenizer) -> None:
    shutil.copy(model_dir / "source.spm", tmp_path / "src.model")
    shutil.copy(model_dir / "target.spm", tmp_path / "tgt.model")
    shutil.copy(model_dir / "vocab.json", tmp_path / "v.json")
    other = MarianTokenizer.from_dir(str(tmp_path), source_spm="src.model", target_spm="tgt.model", vocab="v.json")
    assert other.encode("Hello world") == tok.encode("Hello world")
    with pytest.raises(FileNotFoundError, match=r"source\.spm"):
        MarianTokenizer.from_dir(tmp_path)


def test_bad_files(model_dir: Path, tmp_path: Path) -> None:
    for f in ("source.spm", "target.spm"):
        shutil.copy(model_dir / f, tmp_path / f)
    vocab = json.loads((model_dir / "vocab.json").read_text(encoding="utf-8"))
    (tmp_path / "vocab.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.json"):
        MarianTokenizer.from_dir(tmp_path)
    (tmp_path / "vocab.json").write_text(json.dumps({k: v for k, v in vocab.items() if k != "<unk>"}))
    with pytest.raises(ValueError, match="<unk>"):
        MarianTokenizer.from_dir(tmp_path)
    (tmp_path / "vocab.json").write_text(json.dumps({**vocab, "x": "1"}))
    with pytest.raises(ValueError, match="'x'"):
        MarianTokenizer.from_dir(tmp_path)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "target.spm").write_bytes(b"not a sentencepiece model")
    with pytest.raises(ValueError, match=r"target\.spm"):
        MarianTokenizer.from_dir(tmp_path)


@pytest.mark.parametrize("bad", [None, b"bytes", 42, ["a list"], 3.5])
def test_encode_type_errors(tok: MarianTokenizer, bad: Any) -> None:
    with pytest.raises(TypeError, match=type(bad).__name__):
        tok.encode(bad)
    with pytest.raises(TypeError, match=type(bad).__name__):
        tok.source_pieces(bad)
    with pytest.raises(TypeError, match=rf"item 1.*{type(bad).__name__}"):
        tok.encode_batch(["fine", bad])


def test_batch_and_decode_type_errors(tok: MarianTokenizer) -> None:
    with pytest.raises(TypeError, match="str"):
        tok.encode_batch("a single string")
    with pytest.raises(TypeError, match="str"):
        tok.decode("not ids")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="int"):
        tok.decode(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 0"):
        tok.decode_batch([5])  # type: ignore[list-item]
    with pytest.raises(IndexError, match="-1"):
        tok.decode([-1])


def test_lone_surrogate_is_a_clear_error(tok: MarianTokenizer) -> None:
    with pytest.raises(ValueError, match="surrogate"):
        tok.encode("bad \ud800 text")
    with pytest.raises(ValueError, match="surrogate"):
        tok.encode_batch(["fine", "bad \udfff text"])
