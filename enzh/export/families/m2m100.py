"""M2M100 and NLLB-200 (M2M100ForConditionalGeneration; NLLB differs in its tokenizer only): pre-norm layers
with a final norm in encoder and decoder, pad-aware sinusoidal positions, relu."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from enzh.export.families import multilingual
from enzh.export.families.base import Loader, TokenizerFiles, numpy
from enzh.export.graph import ModelArch, WeightStore
from enzh.runtime.errors import ExportError


class M2M100Loader(Loader):
    family = "m2m_100"
    model_types = ("m2m_100",)
    model_class = "M2M100ForConditionalGeneration"

    def quirks(self, config: Any) -> dict[str, Any]:
        return {
            # h + f(LayerNorm(h)) in every layer, and a LayerNorm after the last layer of each stack.
            "pre_norm": True,
            "final_norms": True,
            # Positions count from pad + 1 and skip pads (pad-aware ids), in a table whose row `pad` is zero.
            "position_offset": int(config.pad_token_id) + 1,
            "pad_aware_positions": True,
            "pad_token_id": int(config.pad_token_id),
        }

    def positions(self, model: Any, arch: ModelArch, store: WeightStore) -> None:
        # The sinusoidal table transformers builds at load (not stored in the checkpoint: sin | cos halves with a
        # frequency step of log(10000) / (d/2 - 1), unlike Marian's); encoder and decoder build the same one.
        encoder = numpy(model.model.encoder.embed_positions.weights)
        decoder = numpy(model.model.decoder.embed_positions.weights)
        rows = arch.max_positions + arch.position_offset
        if encoder.shape[0] < rows or not np.array_equal(encoder[:rows], decoder[:rows]):
            raise ExportError(
                f"the model's position tables ({encoder.shape[0]} rows) do not hold {rows} equal rows; unsupported"
            )
        store.add("positions", np.ascontiguousarray(encoder[:rows]))

    def extra_norms(self, model: Any, store: WeightStore) -> None:
        self.norm(store, "encoder.final_ln", model.model.encoder.layer_norm)
        self.norm(store, "decoder.final_ln", model.model.decoder.layer_norm)

    # The tokenizer says which of the family's tokenizers (NLLB's or M2M100's for the same model class).
    tokenizers = ("nllb", "m2m100")

    def check_files(self, local: Path) -> None:
        multilingual.check_files(local, self.tokenizers)

    def write_tokenizer(self, local: Path, out_dir: Path, model: Any, default_target: str | None) -> TokenizerFiles:
        return multilingual.write_tokenizer(local, out_dir, model, default_target, self.tokenizers)


__all__ = ["M2M100Loader"]
