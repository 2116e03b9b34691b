"""The Marian mapping: a ``MarianMTModel``'s config, weights and generation defaults in enzh's terms.

Model quirks live here and in the graph builder, one comment each (the runtime's share is in
:mod:`enzh.runtime.adapter`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from enzh.export.graph import MarianArch, WeightStore, sinusoidal_positions
from enzh.runtime.errors import ExportError

GENERATION_KEYS = (
    "num_beams",
    "max_length",
    "length_penalty",
    "early_stopping",
    "bad_words_ids",
    "renormalize_logits",
    "forced_eos_token_id",
    "no_repeat_ngram_size",
    "repetition_penalty",
    "min_length",
)


def architecture(config: Any) -> MarianArch:
    # HF Marian is always post-norm with no embedding layer norm; refuse configs that claim otherwise.
    if getattr(config, "normalize_before", False):
        raise ExportError("config.normalize_before=True (pre-norm) is not what MarianMTModel computes; unsupported")
    target_vocab = config.vocab_size if config.share_encoder_decoder_embeddings else config.decoder_vocab_size
    return MarianArch(
        d_model=config.d_model,
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads,
        decoder_heads=config.decoder_attention_heads,
        activation=config.activation_function,
        scale_embedding=bool(config.scale_embedding),
        max_positions=config.max_position_embeddings,
        source_vocab_size=config.vocab_size,
        target_vocab_size=target_vocab,
    )


def collect_weights(model: Any, arch: MarianArch, store: WeightStore) -> tuple[str, str, str]:
    """Copy the model's weights into ``store`` under enzh names. Returns (encoder embed, decoder embed, lm head).

    Tensors that are the same (tied parameters or equal contents) are stored once.
    """

    def t(tensor: Any) -> np.ndarray:
        return tensor.detach().cpu().numpy().astype(np.float32, copy=False)

    def linear(prefix: str, modules: list[Any], scale: float = 1.0) -> None:
        # torch Linear keeps W as [out, in]; the graphs multiply x @ W, so store W^T, fused along outputs.
        store.add(f"{prefix}.w", np.concatenate([t(m.weight).T for m in modules], axis=1) * np.float32(scale))
        store.add(f"{prefix}.b", np.concatenate([t(m.bias) for m in modules]) * np.float32(scale))

    def norm(prefix: str, module: Any) -> None:
        store.add(f"{prefix}.g", t(module.weight))
        store.add(f"{prefix}.b", t(module.bias))

    def qkv(prefix: str, attn: Any) -> None:
        # One fused [d, 3d] projection; the attention scale head_dim**-0.5 is folded into its query part.
        linear(prefix, [attn.q_proj, attn.k_proj, attn.v_proj])
        store.arrays[f"{prefix}.w"][:, : arch.d_model] *= np.float32(attn.scaling)
        store.arrays[f"{prefix}.b"][: arch.d_model] *= np.float32(attn.scaling)

    base = model.model
    enc_embed = t(base.encoder.embed_tokens.weight)
    dec_embed = t(base.decoder.embed_tokens.weight)
    head = t(model.lm_head.weight)
    store.add("embed_tokens", enc_embed)
    dec_name = "embed_tokens" if np.array_equal(enc_embed, dec_embed) else store.add("decoder.embed_tokens", dec_embed)
    if np.array_equal(head, dec_embed):
        head_name = dec_name
    elif np.array_equal(head, enc_embed):
        head_name = "embed_tokens"
    else:
        head_name = store.add("lm_head", head)
    store.add("final_logits_bias", t(model.final_logits_bias).reshape(-1))
    positions = t(base.encoder.embed_positions.weight)
    expected = sinusoidal_positions(arch.max_positions, arch.d_model)
    if not np.allclose(positions, expected, atol=1e-5):
        raise ExportError("the model's position embeddings are not Marian's static sinusoids; unsupported model")
    store.add("positions", positions)

    for i, layer in enumerate(base.encoder.layers):
        qkv(f"encoder.{i}.qkv", layer.self_attn)
        a = layer.self_attn
        linear(f"encoder.{i}.out", [a.out_proj])
        norm(f"encoder.{i}.attn_ln", layer.self_attn_layer_norm)
        linear(f"encoder.{i}.fc1", [layer.fc1])
        linear(f"encoder.{i}.fc2", [layer.fc2])
        norm(f"encoder.{i}.ffn_ln", layer.final_layer_norm)
    for i, layer in enumerate(base.decoder.layers):
        a, c = layer.self_attn, layer.encoder_attn
        qkv(f"decoder.{i}.qkv", a)
        linear(f"decoder.{i}.out", [a.out_proj])
        norm(f"decoder.{i}.attn_ln", layer.self_attn_layer_norm)
        linear(f"decoder.{i}.cross_q", [c.q_proj], c.scaling)
        linear(f"decoder.{i}.cross_kv", [c.k_proj, c.v_proj])
        linear(f"decoder.{i}.cross_out", [c.out_proj])
        norm(f"decoder.{i}.cross_ln", layer.encoder_attn_layer_norm)
        linear(f"decoder.{i}.fc1", [layer.fc1])
        linear(f"decoder.{i}.fc2", [layer.fc2])
        norm(f"decoder.{i}.ffn_ln", layer.final_layer_norm)
    return "embed_tokens", dec_name, head_name


def generation_defaults(model: Any, pad_id: int) -> dict[str, Any]:
    gen = model.generation_config
    values = {key: getattr(gen, key, None) for key in GENERATION_KEYS}
    defaults = {
        "num_beams": 1,
        "length_penalty": 1.0,
        "early_stopping": False,
        "renormalize_logits": False,
        "no_repeat_ngram_size": 0,
        "repetition_penalty": 1.0,
        "min_length": 0,
    }
    for key, value in defaults.items():
        if values[key] is None:
            values[key] = value
    if values["max_length"] is None:
        values["max_length"] = model.config.max_position_embeddings
    # Pad is the decoder start token of Marian and must never be generated, even if generation_config forgets.
    bad = [list(seq) for seq in (values["bad_words_ids"] or [])]
    if [pad_id] not in bad:
        bad.append([pad_id])
    values["bad_words_ids"] = bad
    return values
