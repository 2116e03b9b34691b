"""mBART-50's tokenizer (:class:`MBart50Tokenizer`, Unigram on the ``tokenizers`` pipeline) and its language
codes."""

from __future__ import annotations

import os

from enzh.runtime.fairseq.added import AddedToken, ensure_added
from enzh.runtime.fairseq.base import PipelineTokenizer
from enzh.runtime.fairseq.files import (
    CONFIG_FILE,
    SPECIAL_TOKENS_MAP_FILE,
    SPM_FILE,
    TOKENIZER_JSON_FILE,
    PipelineFiles,
)
from enzh.runtime.fairseq.models import Unigram
from enzh.runtime.fairseq.normalizer import Normalizer

# transformers' FAIRSEQ_LANGUAGE_CODES of mBART-50, in transformers' order (the order of their ids).
MBART50_LANGUAGE_CODES = tuple(
    "ar_AR cs_CZ de_DE en_XX es_XX et_EE fi_FI fr_XX gu_IN hi_IN it_IT ja_XX kk_KZ ko_KR lt_LT lv_LV my_MM ne_NP "
    "nl_XX ro_RO ru_RU si_LK tr_TR vi_VN zh_CN af_ZA az_AZ bn_IN fa_IR he_IL hr_HR id_ID ka_GE km_KH mk_MK ml_IN "
    "mn_MN mr_IN pl_PL ps_AF pt_XX sv_SE sw_KE ta_IN te_IN th_TH tl_XX uk_UA ur_PK xh_ZA gl_ES sl_SI".split()
)


class MBart50Tokenizer(PipelineTokenizer):
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
        files = PipelineFiles(path, spm_file, tokenizer_json, config, special_tokens_map)
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
        model_ = Unigram(pieces, unk_id=3)  # quirk: transformers hard-codes unk_id 3 for mBART-50
        vocab = model_.vocab
        added = files.added
        if files.tokenizer_json is None or not added:
            added = [AddedToken(vocab[t], t) for t in dict.fromkeys((cls_token, pad, eos, unk)) if t in vocab]
            added += [AddedToken(vocab[c], c) for c in codes if c in vocab]
            if mask in vocab:
                added.append(AddedToken(vocab[mask], mask, lstrip=True))
        added = ensure_added(added, vocab, [cls_token, eos, unk, eos, pad, cls_token, *codes])
        added = ensure_added(added, vocab, [mask], lstrip=True)
        return cls(
            files.sp,
            model_,
            added,
            Normalizer(files.charsmap, collapse_spaces=True),
            codes=codes,
            eos_token=eos,
            pad_token=pad,
            unk_token=unk,
            bos_token=cls_token,
            named_specials=[t for t in files.specials.values() if t],
            clean_up=files.flag("clean_up_tokenization_spaces"),
        )
