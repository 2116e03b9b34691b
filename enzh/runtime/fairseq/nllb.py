"""NLLB-200's tokenizer (:class:`NllbTokenizer`, BPE on the ``tokenizers`` pipeline) and its language codes."""

from __future__ import annotations

import os
import re
from typing import Any

from enzh.runtime.fairseq.added import AddedToken, ensure_added
from enzh.runtime.fairseq.base import PipelineTokenizer
from enzh.runtime.fairseq.files import (
    CONFIG_FILE,
    SPECIAL_TOKENS_MAP_FILE,
    SPM_FILE,
    TOKENIZER_JSON_FILE,
    PipelineFiles,
    extra_tokens,
)
from enzh.runtime.fairseq.models import Bpe, generate_merges
from enzh.runtime.fairseq.normalizer import Normalizer

# transformers' FAIRSEQ_LANGUAGE_CODES of NLLB, in transformers' order (the order of their ids).
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

_NLLB_CODE = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")


class NllbTokenizer(PipelineTokenizer):
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
        files = PipelineFiles(path, spm_file, tokenizer_json, config, special_tokens_map)
        bos, pad = files.token("bos_token", "<s>"), files.token("pad_token", "<pad>")
        eos, unk = files.token("eos_token", "</s>"), files.token("unk_token", "<unk>")
        mask = files.token("mask_token", "<mask>")
        extra_codes = [t for t in extra_tokens(files.config) if _NLLB_CODE.fullmatch(t)]
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
            merges = generate_merges({piece: i for i, (piece, _) in enumerate(pieces)})  # type: ignore[assignment]
            # Not what transformers 5.23 does (it loses the codes here): the fairseq layout, as on the hub.
            added = [AddedToken(vocab[t], t) for t in dict.fromkeys((bos, pad, eos, unk))]
            added += [AddedToken(len(vocab) + i, code) for i, code in enumerate(codes)]
            added.append(AddedToken(len(vocab) + len(codes), mask, normalized=True, lstrip=True))
        added = ensure_added(added, vocab, [bos, eos, unk, eos, pad, bos, mask, *codes])
        normalizer = Normalizer(files.charsmap, collapse_spaces=True) if files.charsmap else Normalizer(None, False)
        return cls(
            files.sp,
            Bpe(vocab, merges, unk),  # type: ignore[arg-type]
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
