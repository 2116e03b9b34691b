"""The random-weight model builders of enzh.tools.models: the shaped config matches opus-mt-en-zh's."""

from __future__ import annotations

import json

import pytest

from enzh.tools.models import OPUS_MT_EN_ZH_CONFIG, OPUS_MT_EN_ZH_GENERATION, REFERENCE_CONFIG, build_shaped_model


@pytest.mark.skipif(not REFERENCE_CONFIG.is_dir(), reason=f"reference config not found at {REFERENCE_CONFIG}")
def test_the_built_in_shape_is_the_reference_config():
    config = json.loads((REFERENCE_CONFIG / "config.json").read_text(encoding="utf-8"))
    generation = json.loads((REFERENCE_CONFIG / "generation_config.json").read_text(encoding="utf-8"))
    assert {k: config[k] for k in OPUS_MT_EN_ZH_CONFIG} == OPUS_MT_EN_ZH_CONFIG
    assert generation == OPUS_MT_EN_ZH_GENERATION


def test_shaped_model_names_its_tokenizer(tmp_path):
    with pytest.raises(ValueError, match="tokenizer"):
        build_shaped_model(tmp_path, tokenizer="real")
