"""M2M100 and NLLB-200 (M2M100ForConditionalGeneration; NLLB differs in its tokenizer only): pre-norm layers
with a final norm in encoder and decoder, pad-aware sinusoidal positions, relu."""

from __future__ import annotations

from typing import Any

import numpy as np

from enzh.export.families.base import Loader, numpy
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
            # Positions count from pad + 1 (pad-aware ids; batches are right-padded, so real token i is at
            # pad + 1 + i), in a table whose row `pad` is zero.
            "position_offset": int(config.pad_token_id) + 1,
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


__all__ = ["M2M100Loader"]
