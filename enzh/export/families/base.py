"""What every family shares: the BART-style layout of a transformers encoder-decoder translation model.

:class:`Loader` maps a loaded model onto :class:`enzh.export.graph.ModelArch` and the stored weights of
:mod:`enzh.export.graph`. Marian, M2M100/NLLB and mBART name their modules alike (``self_attn.q_proj``,
``encoder_attn``, ``fc1``, ``final_layer_norm``, ...); a family's loader overrides only what differs (its
quirks: norms, positions, generation defaults, tokenizer files), each with a one-line comment saying why.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from enzh.export.graph import ModelArch, WeightStore
from enzh.runtime.errors import ExportError

GENERATION_KEYS = (
    "num_beams",
    "max_length",
    "length_penalty",
    "early_stopping",
    "bad_words_ids",
    "renormalize_logits",
    "forced_eos_token_id",
    "forced_bos_token_id",
    "no_repeat_ngram_size",
    "repetition_penalty",
    "min_length",
)
_GENERATION_DEFAULTS = {
    "num_beams": 1,
    "length_penalty": 1.0,
    "early_stopping": False,
    "renormalize_logits": False,
    "no_repeat_ngram_size": 0,
    "repetition_penalty": 1.0,
    "min_length": 0,
}


@dataclass(frozen=True)
class TokenizerFiles:
    """What a family's tokenizer stage wrote into the model directory, for the manifest."""

    files: list[str]  # the files written (hashed in the manifest)
    record: dict[str, str]  # manifest.tokenizer: role -> file name
    special_ids: dict[str, int]  # decoder_start, eos, pad, unk
    languages: dict[str, Any]  # manifest.languages


def write_vocab(path: Path, vocab: dict[str, int]) -> None:
    """A vocabulary as compact gzipped JSON (no timestamp: the same bytes for the same vocabulary)."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
        packed.write(json.dumps(vocab, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def numpy(tensor: Any) -> np.ndarray:
    """A torch tensor's values as a float32 numpy array."""
    return tensor.detach().cpu().numpy().astype(np.float32, copy=False)


class Loader:
    """One model family's mapping onto enzh's graphs (the methods a family may override are its quirks)."""

    family: ClassVar[str] = ""  # the manifest's model_type
    model_types: ClassVar[tuple[str, ...]] = ()  # the config.json model_type values this loader reads
    model_class: ClassVar[str] = ""  # the transformers class that loads it

    # -- loading ------------------------------------------------------------------------------------------

    def load_model(self, directory: Path) -> Any:
        import transformers

        cls = getattr(transformers, self.model_class)
        try:
            model = cls.from_pretrained(directory, dtype="float32")
        except Exception as exc:
            raise ExportError(
                f"could not load a {self.model_class} from {directory} ({type(exc).__name__}: {exc})"
            ) from exc
        return model.eval()

    def check_files(self, local: Path) -> None:
        """Refuse, before loading anything, a directory without the files the family's tokenizer needs."""
        raise ExportError(f"{local}: exporting {self.family} models needs their tokenizer, which enzh cannot read yet")

    def write_tokenizer(self, local: Path, out_dir: Path, model: Any, default_target: str | None) -> TokenizerFiles:
        """Copy or convert the tokenizer files into ``out_dir``; the manifest's records of them."""
        raise ExportError(f"exporting {self.family} models needs their tokenizer, which enzh cannot read yet")

    # -- architecture -------------------------------------------------------------------------------------

    def architecture(self, config: Any) -> ModelArch:
        return ModelArch(
            d_model=config.d_model,
            encoder_layers=config.encoder_layers,
            decoder_layers=config.decoder_layers,
            encoder_heads=config.encoder_attention_heads,
            decoder_heads=config.decoder_attention_heads,
            activation=config.activation_function,
            scale_embedding=bool(config.scale_embedding),
            max_positions=config.max_position_embeddings,
            source_vocab_size=config.vocab_size,
            target_vocab_size=self.target_vocab_size(config),
            **self.quirks(config),
        )

    def target_vocab_size(self, config: Any) -> int:
        return int(config.vocab_size)

    def quirks(self, config: Any) -> dict[str, Any]:
        """The :class:`ModelArch` fields that differ from Marian's defaults."""
        return {}

    # -- weights ------------------------------------------------------------------------------------------

    def collect_weights(self, model: Any, arch: ModelArch, store: WeightStore) -> tuple[str, str, str]:
        """Copy the model's weights into ``store`` under enzh names; returns the stored names of the encoder's
        embedding, the decoder's embedding and the output projection (tensors that are equal stored once)."""
        base = model.model
        enc_embed = numpy(base.encoder.embed_tokens.weight)
        dec_embed = numpy(base.decoder.embed_tokens.weight)
        head = numpy(model.lm_head.weight)
        store.add("embed_tokens", enc_embed)
        dec_name = (
            "embed_tokens" if np.array_equal(enc_embed, dec_embed) else store.add("decoder.embed_tokens", dec_embed)
        )
        if np.array_equal(head, dec_embed):
            head_name = dec_name
        elif np.array_equal(head, enc_embed):
            head_name = "embed_tokens"
        else:
            head_name = store.add("lm_head", head)
        bias = getattr(model, "final_logits_bias", None)
        # Models without a final_logits_bias (M2M100) get zeros: the graph's projection always adds one.
        values = numpy(bias).reshape(-1) if bias is not None else np.zeros(head.shape[0], dtype=np.float32)
        store.add("final_logits_bias", values)
        self.positions(model, arch, store)
        self.extra_norms(model, store)
        for i, layer in enumerate(base.encoder.layers):
            self.qkv(store, arch, f"encoder.{i}.qkv", layer.self_attn)
            self.linear(store, f"encoder.{i}.out", [layer.self_attn.out_proj])
            self.norm(store, f"encoder.{i}.attn_ln", layer.self_attn_layer_norm)
            self.linear(store, f"encoder.{i}.fc1", [layer.fc1])
            self.linear(store, f"encoder.{i}.fc2", [layer.fc2])
            self.norm(store, f"encoder.{i}.ffn_ln", layer.final_layer_norm)
        for i, layer in enumerate(base.decoder.layers):
            a, c = layer.self_attn, layer.encoder_attn
            self.qkv(store, arch, f"decoder.{i}.qkv", a)
            self.linear(store, f"decoder.{i}.out", [a.out_proj])
            self.norm(store, f"decoder.{i}.attn_ln", layer.self_attn_layer_norm)
            self.linear(store, f"decoder.{i}.cross_q", [c.q_proj], c.scaling)
            self.linear(store, f"decoder.{i}.cross_kv", [c.k_proj, c.v_proj])
            self.linear(store, f"decoder.{i}.cross_out", [c.out_proj])
            self.norm(store, f"decoder.{i}.cross_ln", layer.encoder_attn_layer_norm)
            self.linear(store, f"decoder.{i}.fc1", [layer.fc1])
            self.linear(store, f"decoder.{i}.fc2", [layer.fc2])
            self.norm(store, f"decoder.{i}.ffn_ln", layer.final_layer_norm)
        return "embed_tokens", dec_name, head_name

    def positions(self, model: Any, arch: ModelArch, store: WeightStore) -> None:
        """Store the position table(s) the graphs gather from (``positions``, and ``decoder.positions`` when the
        decoder's differs)."""
        raise NotImplementedError

    def extra_norms(self, model: Any, store: WeightStore) -> None:
        """Store the norms outside the layers (final and embedding norms) of the families that have them."""

    @staticmethod
    def linear(store: WeightStore, prefix: str, modules: list[Any], scale: float = 1.0) -> None:
        # torch Linear keeps W as [out, in]; the graphs multiply x @ W, so store W^T, fused along outputs.
        store.add(f"{prefix}.w", np.concatenate([numpy(m.weight).T for m in modules], axis=1) * np.float32(scale))
        store.add(f"{prefix}.b", np.concatenate([numpy(m.bias) for m in modules]) * np.float32(scale))

    @staticmethod
    def norm(store: WeightStore, prefix: str, module: Any) -> None:
        store.add(f"{prefix}.g", numpy(module.weight))
        store.add(f"{prefix}.b", numpy(module.bias))

    @classmethod
    def qkv(cls, store: WeightStore, arch: ModelArch, prefix: str, attention: Any) -> None:
        # One fused [d, 3d] projection; the attention scale head_dim**-0.5 is folded into its query part.
        cls.linear(store, prefix, [attention.q_proj, attention.k_proj, attention.v_proj])
        store.arrays[f"{prefix}.w"][:, : arch.d_model] *= np.float32(attention.scaling)
        store.arrays[f"{prefix}.b"][: arch.d_model] *= np.float32(attention.scaling)

    # -- generation ---------------------------------------------------------------------------------------

    def generation_defaults(self, model: Any) -> dict[str, Any]:
        """generation_config.json's search settings, the unset ones given transformers' defaults."""
        gen = model.generation_config
        values = {key: getattr(gen, key, None) for key in GENERATION_KEYS}
        for key, value in _GENERATION_DEFAULTS.items():
            if values[key] is None:
                values[key] = value
        if values["max_length"] is None:
            values["max_length"] = model.config.max_position_embeddings
        values["bad_words_ids"] = [list(seq) for seq in (values["bad_words_ids"] or [])]
        if values["forced_bos_token_id"] is None:  # only the multilingual families force a first token
            del values["forced_bos_token_id"]
        return values


__all__ = ["GENERATION_KEYS", "Loader", "TokenizerFiles", "numpy", "write_vocab"]
