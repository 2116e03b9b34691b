"""Random-weight models, seeded: tiny Marian ones in opus-mt layout for the tests, opus-mt-en-zh's shape, tiny
multilingual ones (NLLB, M2M100, mBART-50) and nllb-200-distilled-600M's shape.

* :func:`build_tiny_marian`: a few-layer model with a freshly trained tiny SentencePiece tokenizer pair
  (the tests' models; ``MarianConfig`` overrides make the variants).
* :func:`build_shaped_model`: opus-mt-en-zh's exact config (6+6 layers, d_model 512, 65,001 tokens) with
  seeded random weights, for ``enzh bench`` (demo tokenizers) and the tests and precision report
  (:func:`build_reference_shaped`: config from ``../shared/reference/opus-mt-en-zh``, tiny tokenizers).
* :func:`build_tiny_multilingual`: the multilingual families' tiny models with their real tokenizer files.
* :func:`build_nllb_shaped`: nllb-200-distilled-600M's exact config (:data:`NLLB_200_DISTILLED_600M_CONFIG`)
  with seeded random weights and a tiny NLLB tokenizer, for ``enzh bench --groups nllb`` (never built in CI).

The same seed gives the same weights byte for byte: ``enzh bench`` caches the shaped model by seed and
docs/benchmarks.md was measured on seed 0. Needs the ``[export]`` extra (torch, transformers).
"""

from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path
from typing import Any

from enzh.demo import HF_MODEL_DIR

# opus-mt-en-zh's config.json and generation_config.json (the fields that shape the model and its generation;
# the rest are MarianConfig defaults or training-only settings). ``config_dir`` reads them from a directory.
OPUS_MT_EN_ZH_CONFIG: dict[str, Any] = {
    "activation_function": "swish",
    "d_model": 512,
    "decoder_attention_heads": 8,
    "decoder_ffn_dim": 2048,
    "decoder_layers": 6,
    "decoder_start_token_id": 65000,
    "decoder_vocab_size": 65001,
    "encoder_attention_heads": 8,
    "encoder_ffn_dim": 2048,
    "encoder_layers": 6,
    "eos_token_id": 0,
    "forced_eos_token_id": 0,
    "max_position_embeddings": 512,
    "normalize_before": False,
    "normalize_embedding": False,
    "pad_token_id": 65000,
    "scale_embedding": True,
    "share_encoder_decoder_embeddings": True,
    "static_position_embeddings": True,
    "vocab_size": 65001,
}
OPUS_MT_EN_ZH_GENERATION: dict[str, Any] = {
    "bad_words_ids": [[65000]],
    "bos_token_id": 0,
    "decoder_start_token_id": 65000,
    "eos_token_id": 0,
    "forced_eos_token_id": 0,
    "max_length": 512,
    "num_beams": 4,
    "pad_token_id": 65000,
    "renormalize_logits": True,
}

# The real model's config.json + generation_config.json, next to a source checkout (absent elsewhere).
REFERENCE_CONFIG = Path(__file__).resolve().parents[3] / "shared" / "reference" / "opus-mt-en-zh"

WORDS = (
    "the a cat dog house tree river city morning evening teacher student book coffee tea water train "
    "station park museum friend brother sister weather today tomorrow yesterday nice big small red blue "
    "green quickly slowly walk run read write drink eat see buy sell go come where what when why how is "
    "are was were have has "
).split()
HANZI = "我你他她们是的了在有不这个人中大上来到说国和地也子时道出而要于就下得可生会自着去之过家学对小多然"


def corpus(seed: int, n: int = 400) -> tuple[list[str], list[str]]:
    """``n`` random English and Chinese lines (not translations of each other): tokenizer training text."""
    rng = random.Random(seed)
    en = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))).capitalize() + rng.choice(".?!,")
        for _ in range(n)
    ]
    zh = ["".join(rng.choice(HANZI) for _ in range(rng.randint(2, 15))) + rng.choice("。？！，") for _ in range(n)]
    return en, zh


def train_spm(lines: list[str], path: Path, vocab_size: int) -> None:
    """A unigram SentencePiece model of ``lines`` written to ``path`` (eos 0, unk 1, no bos/pad)."""
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        bos_id=-1,
        eos_id=0,
        unk_id=1,
        pad_id=-1,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
    )
    path.write_bytes(model.getvalue())


def write_tokenizer(directory: Path, seed: int = 0, spm_vocab: int = 80) -> dict[str, int]:
    """source.spm/target.spm/vocab.json in opus-mt layout: </s>=0, <unk>=1, language tokens, pieces, <pad> last."""
    import sentencepiece as spm

    en, zh = corpus(seed)
    train_spm(en, directory / "source.spm", spm_vocab)
    train_spm(zh, directory / "target.spm", spm_vocab)
    vocab: dict[str, int] = {"</s>": 0, "<unk>": 1, ">>cmn_Hans<<": 2, ">>cmn_Hant<<": 3}
    for name in ("source.spm", "target.spm"):
        sp = spm.SentencePieceProcessor(model_file=str(directory / name))
        for i in range(sp.get_piece_size()):
            piece = sp.id_to_piece(i)
            if piece not in vocab and piece not in ("<unk>", "</s>", "<s>"):
                vocab[piece] = len(vocab)
    vocab["<pad>"] = len(vocab)
    _write_vocab(directory, vocab)
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"source_lang": "en", "target_lang": "zh", "model_max_length": 512}), encoding="utf-8"
    )
    return vocab


def _write_vocab(directory: Path, vocab: dict[str, int]) -> None:
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")


def build_tiny_marian(directory: Path, *, seed: int = 0, eos_bias: float = 0.0, **overrides: Any) -> Path:
    """A random MarianMTModel saved with its tokenizer files; ``overrides`` go to MarianConfig."""
    directory.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(directory, seed)
    return save_random_marian(directory, len(vocab), seed=seed, eos_bias=eos_bias, **overrides)


def save_random_marian(directory: Path, vocab_size: int, *, seed: int, eos_bias: float, **overrides: Any) -> Path:
    """Save a random MarianMTModel of ``vocab_size`` tokens (pad = the last id) next to tokenizer files."""
    import torch
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    pad = vocab_size - 1
    settings: dict[str, Any] = dict(
        vocab_size=vocab_size,
        decoder_vocab_size=vocab_size,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        pad_token_id=pad,
        decoder_start_token_id=pad,
        eos_token_id=0,
        forced_eos_token_id=0,
        activation_function="swish",
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
    )
    settings.update(overrides)
    torch.manual_seed(seed)
    model = MarianMTModel(MarianConfig(**settings))
    with torch.no_grad():
        # Unit-scale random weights so logits depend strongly on the input (not on the bias alone).
        for pname, p in model.named_parameters():
            if "layer_norm" in pname:
                p.normal_(1.0 if pname.endswith("weight") else 0.0, 0.1)
            elif p.dim() > 1 and not any(k in pname for k in ("embed", "shared", "lm_head")):
                p.normal_(0, p.shape[1] ** -0.5)
            else:
                p.normal_(0, 1.0 if p.dim() > 1 else 0.1)
        model.final_logits_bias.normal_(0, 0.5)
        model.final_logits_bias[0, 0] += eos_bias
    model.generation_config = GenerationConfig(
        bad_words_ids=[[pad]],
        decoder_start_token_id=pad,
        eos_token_id=0,
        forced_eos_token_id=0,
        pad_token_id=pad,
        max_length=settings["max_position_embeddings"],
        num_beams=4,
        renormalize_logits=True,
    )
    model.save_pretrained(directory)
    return directory


def _demo_tokenizer(directory: Path) -> dict[str, int]:
    """The demo model's SentencePiece models and tokenizer files; its vocab.json pieces at their ids, no <pad>."""
    for name in ("source.spm", "target.spm", "tokenizer_config.json", "special_tokens_map.json"):
        if (HF_MODEL_DIR / name).is_file():
            shutil.copyfile(HF_MODEL_DIR / name, directory / name)
    demo_vocab: dict[str, int] = json.loads((HF_MODEL_DIR / "vocab.json").read_text(encoding="utf-8"))
    pieces = sorted((i, t) for t, i in demo_vocab.items() if t != "<pad>")
    return {t: i for i, t in enumerate(t for _, t in pieces)}


def _tiny_tokenizer(directory: Path, seed: int) -> dict[str, int]:
    """A freshly trained tiny tokenizer pair (:func:`write_tokenizer`); its vocab without <pad>."""
    vocab = write_tokenizer(directory, seed)
    del vocab["<pad>"]
    return vocab


def build_shaped_model(
    directory: Path, *, seed: int = 0, config_dir: Path | None = None, tokenizer: str = "demo"
) -> Path:
    """A MarianMTModel with opus-mt-en-zh's exact config and seeded random weights, saved with tokenizer files.

    ``config_dir``: read config.json and generation_config.json there instead of :data:`OPUS_MT_EN_ZH_CONFIG`
    and :data:`OPUS_MT_EN_ZH_GENERATION`. ``tokenizer``: ``demo`` copies the demo model's SentencePiece models,
    ``tiny`` trains a tiny pair (:func:`write_tokenizer`). Either way vocab.json has the real layout: the
    tokenizer's pieces at their ids (</s>=0, <unk>=1, language tokens), synthetic filler entries up to 65,000
    and ``<pad>`` at 65,000.
    """
    if tokenizer not in ("demo", "tiny"):
        raise ValueError(f"tokenizer must be 'demo' or 'tiny', got {tokenizer!r}")
    import torch
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    if config_dir is not None:
        config = MarianConfig.from_pretrained(config_dir)
        generation = GenerationConfig.from_pretrained(config_dir)
    else:
        config = MarianConfig(**OPUS_MT_EN_ZH_CONFIG)
        generation = GenerationConfig(**OPUS_MT_EN_ZH_GENERATION)
    directory.mkdir(parents=True, exist_ok=True)
    vocab = _demo_tokenizer(directory) if tokenizer == "demo" else _tiny_tokenizer(directory, seed)
    pad = int(config.pad_token_id or 0)
    filler = 0
    while len(vocab) < pad:
        vocab[f"▁filler{filler}"] = len(vocab)
        filler += 1
    vocab["<pad>"] = pad
    _write_vocab(directory, vocab)
    torch.manual_seed(seed)
    model = MarianMTModel(config)
    model.generation_config = generation
    model.save_pretrained(directory)
    return directory


def build_reference_shaped(directory: Path, *, seed: int = 0, config_dir: Path = REFERENCE_CONFIG) -> Path:
    """The tests' and precision report's shaped model: config from ``config_dir``, tiny tokenizers."""
    return build_shaped_model(directory, seed=seed, config_dir=config_dir, tokenizer="tiny")


# ---------------------------------------------------------------------------------------------------- fairseq families

# Traditional characters for the multilingual tokenizers' training text (zho_Hant sources must not be all <unk>).
HANT = "們這個國說時過來學對會著門開關東車馬鳥魚語讀書寫長見點裡後體發經"


def fairseq_corpus(seed: int, n: int = 300) -> list[str]:
    """Mixed English / Simplified / Traditional Chinese lines: the multilingual tokenizers' training text."""
    en, zh = corpus(seed, n)
    rng = random.Random(seed + 1)
    hant = ["".join(rng.choice(HANT + HANZI) for _ in range(rng.randint(2, 12))) + "。" for _ in range(n // 3)]
    return en + zh + hant


def train_fairseq_spm(lines: list[str], path: Path, vocab_size: int, model_type: str) -> None:
    """A SentencePiece model in the fairseq families' layout (<unk>=0, <s>=1, </s>=2, no <pad>), nmt_nfkc rules."""
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=1.0,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
    )
    path.write_bytes(model.getvalue())


SPM_FILE = "sentencepiece.bpe.model"  # the fairseq families name their SentencePiece model so


def write_nllb_tokenizer(
    directory: Path, *, seed: int = 0, spm_vocab: int = 200, legacy_behaviour: bool = False
) -> int:
    """An NLLB tokenizer directory as the hub holds one, from a freshly trained BPE SentencePiece model:
    sentencepiece.bpe.model, tokenizer.json (<s> <pad> </s> <unk>, pieces, the 202 language codes, <mask>) and
    tokenizer_config.json. Returns the number of ids (the model's vocab_size)."""
    from transformers import AddedToken, NllbTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    directory.mkdir(parents=True, exist_ok=True)
    train_fairseq_spm(fairseq_corpus(seed), directory / SPM_FILE, spm_vocab, "bpe")
    # transformers 5.23 converts the SentencePiece model itself but drops the language codes unless they are
    # named, and puts <mask> before them: name them, add <mask> after them (the hub's layout).
    tokenizer = NllbTokenizer.from_pretrained(
        str(directory),
        extra_special_tokens=list(FAIRSEQ_LANGUAGE_CODES),
        mask_token=None,
        legacy_behaviour=legacy_behaviour,
    )
    tokenizer.add_special_tokens({"mask_token": AddedToken("<mask>", normalized=True, lstrip=True, special=True)})
    tokenizer.save_pretrained(str(directory))
    return len(tokenizer)


def write_mbart50_tokenizer(directory: Path, *, seed: int = 0, spm_vocab: int = 200) -> int:
    """An mBART-50 tokenizer directory from a freshly trained Unigram SentencePiece model (mBART's
    "sentencepiece.bpe.model" is a Unigram model): the model, tokenizer.json and tokenizer_config.json.
    Returns the number of ids."""
    from transformers import MBart50Tokenizer

    directory.mkdir(parents=True, exist_ok=True)
    train_fairseq_spm(fairseq_corpus(seed), directory / SPM_FILE, spm_vocab, "unigram")
    tokenizer = MBart50Tokenizer.from_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return len(tokenizer)


def write_m2m100_tokenizer(directory: Path, *, seed: int = 0, spm_vocab: int = 200) -> int:
    """An M2M100 tokenizer directory: sentencepiece.bpe.model, vocab.json in an order of its own (fairseq's
    dictionary is not the SentencePiece order; two pieces are left out, one entry SentencePiece does not have is
    added), tokenizer_config.json and special_tokens_map.json naming the 100 language tokens as the hub's do.
    Returns the number of ids (the model adds 8 "madeupword" ids after them)."""
    import sentencepiece as spm
    from transformers import M2M100Tokenizer
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    directory.mkdir(parents=True, exist_ok=True)
    train_fairseq_spm(fairseq_corpus(seed), directory / SPM_FILE, spm_vocab, "bpe")
    sp = spm.SentencePieceProcessor(model_file=str(directory / SPM_FILE))
    pieces = [sp.id_to_piece(i) for i in range(3, sp.get_piece_size())]
    rng = random.Random(seed)
    rng.shuffle(pieces)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in [*pieces[2:], "▁zzextra"]:
        vocab[piece] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    language_tokens = [f"__{code}__" for code in FAIRSEQ_LANGUAGE_CODES["m2m100"]]
    specials = {
        "bos_token": "<s>",
        "eos_token": "</s>",
        "pad_token": "<pad>",
        "sep_token": "</s>",
        "unk_token": "<unk>",
    }
    config: dict[str, Any] = {
        **specials,
        "additional_special_tokens": language_tokens,
        "language_codes": "m2m100",
        "model_max_length": 1024,
        "num_madeup_words": 8,
        "sp_model_kwargs": {},
        "src_lang": None,
        "tgt_lang": None,
        "tokenizer_class": "M2M100Tokenizer",
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    special_map = {**specials, "additional_special_tokens": language_tokens}
    (directory / "special_tokens_map.json").write_text(json.dumps(special_map, indent=2), encoding="utf-8")
    return len(M2M100Tokenizer.from_pretrained(str(directory)))


FAMILY_TOKENIZERS = {
    "nllb": "write_nllb_tokenizer",
    "m2m100": "write_m2m100_tokenizer",
    "mbart50": "write_mbart50_tokenizer",
}


def build_tiny_multilingual(
    directory: Path, kind: str, *, seed: int = 0, eos_bias: float = 0.0, **overrides: Any
) -> Path:
    """A random model of a multilingual family with its real tokenizer files (``kind``: nllb or m2m100, an
    M2M100ForConditionalGeneration; mbart50, an MBartForConditionalGeneration): the tokenizer built by
    :func:`write_nllb_tokenizer` & co., the model sized to its ids (ids 0-3: <s> <pad> </s> <unk>), unit-scale
    random weights and ``eos_bias`` added to eos's logit so sentences stop at different steps."""
    import torch
    import transformers

    vocab_size = globals()[FAMILY_TOKENIZERS[kind]](directory, seed=seed)
    if kind == "m2m100":
        vocab_size += 8  # the "madeupword" ids fairseq's M2M100 checkpoints have after the language tokens
    settings: dict[str, Any] = dict(
        vocab_size=vocab_size,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        scale_embedding=True,
        activation_function="gelu" if kind == "mbart50" else "relu",
        # An output projection of its own: tied to unit-scale embeddings, a random model repeats its input token.
        tie_word_embeddings=False,
    )
    settings.update(overrides)
    torch.manual_seed(seed)
    model: Any
    if kind == "mbart50":
        model = transformers.MBartForConditionalGeneration(transformers.MBartConfig(**settings))
    else:
        model = transformers.M2M100ForConditionalGeneration(transformers.M2M100Config(**settings))
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "layer_norm" in pname or "layernorm" in pname:
                p.normal_(1.0 if pname.endswith("weight") else 0.0, 0.1)
            elif p.dim() > 1 and not any(k in pname for k in ("embed", "shared", "lm_head")):
                p.normal_(0, p.shape[1] ** -0.5)
            else:
                p.normal_(0, 1.0 if p.dim() > 1 else 0.1)
        # eos likelier along the output of the decoder's final norm's bias (the same in every row): M2M100 has
        # no final_logits_bias to shift.
        direction = model.model.decoder.layer_norm.bias / model.model.decoder.layer_norm.bias.norm()
        model.lm_head.weight[2] += eos_bias * direction
        bias = getattr(model, "final_logits_bias", None)
        if bias is not None:
            bias.normal_(0, 0.5)
    model.generation_config = transformers.GenerationConfig(
        decoder_start_token_id=2, bos_token_id=0, eos_token_id=2, pad_token_id=1, max_length=200
    )
    model.save_pretrained(directory)
    return directory


# --------------------------------------------------------------------------------------- NLLB-200-shaped stand-in

# facebook/nllb-200-distilled-600M's config.json (the values that shape the model), as its hub repository and
# model card publish it; there is no network here, so they are written from that published config and checked
# against transformers 5.23 (tests/tools/test_nllb_shaped.py pins them). Where each value comes from:
# * transformers 5.23's M2M100Config defaults (``M2M100Config.__init__``, whose docstring says they "yield a
#   similar configuration to that of the facebook/m2m100_418M") equal the hub config's for d_model 1024,
#   encoder/decoder layers 12, attention heads 16, ffn dims 4096, activation "relu", scale_embedding True,
#   max_position_embeddings 1024, pad 1, bos 0, eos 2 and decoder_start_token_id 2 (the hub config lists each
#   of them); tie_word_embeddings True is the default the hub config keeps by naming no tie setting: one
#   256,206 x 1024 matrix for both embeddings and the output projection;
# * vocab_size 256,206 is the hub config's (the default, 128,112, is m2m100_418M's): the NLLB tokenizer's
#   256,204 ids (<s> <pad> </s> <unk> at 0-3, the fairseq-offset SentencePiece pieces, the 202 language codes
#   of transformers' tokenization_nllb FAIRSEQ_LANGUAGE_CODES from 256,001 (eng_Latn 256,047, zho_Hans
#   256,200), <mask> at 256,203) and two rows no tokenizer id reaches;
# * encoder/decoder layerdrop 0 as the hub config (training-only; the default is 0.05);
# * tokenizer_class NllbTokenizer, as the hub config names it.
NLLB_200_DISTILLED_600M_CONFIG: dict[str, Any] = {
    "activation_function": "relu",
    "d_model": 1024,
    "decoder_attention_heads": 16,
    "decoder_ffn_dim": 4096,
    "decoder_layerdrop": 0.0,
    "decoder_layers": 12,
    "decoder_start_token_id": 2,
    "encoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "encoder_layerdrop": 0.0,
    "encoder_layers": 12,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "max_position_embeddings": 1024,
    "pad_token_id": 1,
    "scale_embedding": True,
    "tie_word_embeddings": True,
    "tokenizer_class": "NllbTokenizer",
    "vocab_size": 256206,
}
# Its generation_config.json: no forced_bos_token_id (the caller passes the target code), no forced eos,
# max_length 200, greedy by default.
NLLB_200_GENERATION: dict[str, Any] = {
    "bos_token_id": 0,
    "decoder_start_token_id": 2,
    "eos_token_id": 2,
    "max_length": 200,
    "pad_token_id": 1,
}


def nllb_shaped_config(**overrides: Any) -> Any:
    """``M2M100Config`` of :data:`NLLB_200_DISTILLED_600M_CONFIG`, with ``overrides`` (the tests shrink it)."""
    from transformers import M2M100Config

    return M2M100Config(**{**NLLB_200_DISTILLED_600M_CONFIG, **overrides})


def build_nllb_shaped(directory: Path, *, seed: int = 0, **overrides: Any) -> Path:
    """An M2M100ForConditionalGeneration with nllb-200-distilled-600M's exact config (615M parameters, 2.5 GB of
    float32 safetensors) and seeded random weights (transformers' own init after ``torch.manual_seed(seed)``),
    saved with an NLLB tokenizer: a tiny trained one (:func:`write_nllb_tokenizer`, its codes at the hub's
    positions after its pieces) whose ~400 ids are the model's first ones; the model's ids beyond it are never
    produced by the tokenizer (enzh's exporter takes a model vocabulary larger than the tokenizer's, and
    CTranslate2's M2M100 converter fills the rest of its vocabulary with "madeupword" tokens up to vocab_size).
    ``overrides`` go to the config (the tests build a small one through the same code)."""
    import torch
    from transformers import GenerationConfig, M2M100ForConditionalGeneration

    config = nllb_shaped_config(**overrides)
    directory.mkdir(parents=True, exist_ok=True)
    ids = write_nllb_tokenizer(directory, seed=seed)
    if ids > config.vocab_size:
        raise ValueError(f"the tokenizer has {ids} ids, more than the model's vocab_size {config.vocab_size}")
    torch.manual_seed(seed)
    model = M2M100ForConditionalGeneration(config)
    model.generation_config = GenerationConfig(**NLLB_200_GENERATION)
    model.save_pretrained(directory)
    return directory
