"""mBART (MBartForConditionalGeneration; mBART-50's many-to-many and one-to-many models): pre-norm layers with a
final norm and an embedding norm in encoder and decoder, learned positions counted from 2, gelu."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from enzh.export.families import multilingual
from enzh.export.families.base import Loader, TokenizerFiles, numpy
from enzh.export.graph import ModelArch, WeightStore


class MBartLoader(Loader):
    family = "mbart"
    model_types = ("mbart",)
    model_class = "MBartForConditionalGeneration"

    def quirks(self, config: Any) -> dict[str, Any]:
        return {
            # h + f(LayerNorm(h)), a final LayerNorm per stack, and layernorm_embedding after embed + positions.
            "pre_norm": True,
            "final_norms": True,
            "embedding_norm": True,
            # Learned positions, row p + 2 for position p (MBartLearnedPositionalEmbedding's offset; not pad-aware).
            "position_offset": 2,
            "decoder_positions": "decoder.positions",
        }

    def positions(self, model: Any, arch: ModelArch, store: WeightStore) -> None:
        # Encoder and decoder learn a table each ([max_positions + 2, d]).
        store.add("positions", numpy(model.model.encoder.embed_positions.weight))
        store.add("decoder.positions", numpy(model.model.decoder.embed_positions.weight))

    def extra_norms(self, model: Any, store: WeightStore) -> None:
        for side in ("encoder", "decoder"):
            stack = getattr(model.model, side)
            self.norm(store, f"{side}.final_ln", stack.layer_norm)
            self.norm(store, f"{side}.embed_ln", stack.layernorm_embedding)

    # The tokenizer says which of the family's tokenizers (NLLB's or M2M100's for the same model class).
    tokenizers = ("mbart50",)

    def check_files(self, local: Path) -> None:
        multilingual.check_files(local, self.tokenizers)

    def write_tokenizer(self, local: Path, out_dir: Path, model: Any, default_target: str | None) -> TokenizerFiles:
        return multilingual.write_tokenizer(local, out_dir, model, default_target, self.tokenizers)


__all__ = ["MBartLoader"]
