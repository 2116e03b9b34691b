"""Build a com.microsoft BeamSearch (model_type=1) ONNX model for the enzh demo Marian model, by hand.

Two subgraphs, conventions from onnxruntime's T5 path (old 3-input encoder format):
  encoder: encoder_input_ids, encoder_attention_mask, decoder_input_ids (int32)
           -> logits (B,1,V), encoder_hidden_states, present_{key,value}_self_i (B,H,1,Dh), present_{key,value}_cross_i
  decoder: input_ids (B,1), encoder_attention_mask, past_{key,value}_self_i..., past_{key,value}_cross_i...
           -> logits (B,1,V), present_{key,value}_self_i (B,H,T+1,Dh)

Variants (``--variant``):
  vocabmask : raw logits; pad banned by the op's vocab_mask input (op: log_softmax, then -inf at pad, no renormalize)
  graphmask : pad's logit is -inf inside the graph (final_logits_bias[pad] = -inf), so the op's log_softmax equals
              HF's log_softmax -> ban pad -> renormalize; no vocab_mask input
  hf        : graphmask + HF's forced_eos_token_id at max_length-1, computed in the subgraphs from the outer-scope
              max_length input
Usage (from the repository root):
  .venv/bin/python scripts/ort_beam_search_probe/build.py /tmp/ortbeam/beam_hf.onnx --variant hf [--attention mha]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HF_DIR = str(Path(__file__).resolve().parents[2] / "assets" / "demo-hf")
FLOAT_MIN = float(np.finfo(np.float32).min)


class G:
    """A tiny graph under construction: nodes, initializers, unique names."""

    def __init__(self, prefix: str, weights: dict[str, np.ndarray]):
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.inits: dict[str, onnx.TensorProto] = {}
        self.weights = weights
        self.n = 0

    def name(self, hint: str) -> str:
        self.n += 1
        return f"{self.prefix}_{hint}_{self.n}"

    def op(
        self,
        op_type: str,
        inputs: list[str],
        hint: str | None = None,
        outputs: list[str] | None = None,
        n_out: int = 1,
        domain: str = "",
        **attrs,
    ) -> str | list[str]:
        outs = outputs or [self.name(hint or op_type) for _ in range(n_out)]
        self.nodes.append(
            helper.make_node(op_type, inputs, outs, name=self.name("n" + op_type), domain=domain, **attrs)
        )
        return outs[0] if len(outs) == 1 else outs

    def const(self, value: np.ndarray, hint: str = "c") -> str:
        name = self.name(hint)
        self.inits[name] = numpy_helper.from_array(np.asarray(value), name)
        return name

    def w(self, key: str, transpose: bool = False) -> str:
        name = f"{self.prefix}.{key}" + (".T" if transpose else "")
        if name not in self.inits:
            arr = self.weights[key]
            if transpose:
                arr = np.ascontiguousarray(arr.T)
            self.inits[name] = numpy_helper.from_array(arr.astype(np.float32), name)
        return name

    # -- layers ----------------------------------------------------------------------------------------------
    def linear(self, x: str, key: str) -> str:
        y = self.op("MatMul", [x, self.w(key + ".weight", transpose=True)])
        return self.op("Add", [y, self.w(key + ".bias")])

    def layer_norm(self, x: str, key: str) -> str:
        return self.op("LayerNormalization", [x, self.w(key + ".weight"), self.w(key + ".bias")], axis=-1, epsilon=1e-5)

    def heads(self, x: str, cfg, out: str | None = None) -> str:
        """(B, T, D) -> (B, H, T, Dh)"""
        shape = self.const(np.array([0, -1, cfg.heads, cfg.head_dim], dtype=np.int64), "shape")
        y = self.op("Reshape", [x, shape])
        return self.op("Transpose", [y], perm=[0, 2, 1, 3], outputs=[out] if out else None)

    def merge(self, x: str, cfg) -> str:
        """(B, H, T, Dh) -> (B, T, D)"""
        y = self.op("Transpose", [x], perm=[0, 2, 1, 3])
        shape = self.const(np.array([0, -1, cfg.d_model], dtype=np.int64), "shape")
        return self.op("Reshape", [y, shape])

    def attend(self, q: str, k: str, v: str, bias: str | None, cfg) -> str:
        """q, k, v (B, H, *, Dh); q already scaled; bias broadcastable to (B, H, Tq, Tk)."""
        kt = self.op("Transpose", [k], perm=[0, 1, 3, 2])
        s = self.op("MatMul", [q, kt])
        if bias is not None:
            s = self.op("Add", [s, bias])
        p = self.op("Softmax", [s], axis=-1)
        return self.op("MatMul", [p, v])

    def ffn(self, x: str, key: str) -> str:
        h = self.linear(x, key + ".fc1")
        h = self.op("Mul", [h, self.op("Sigmoid", [h])])  # swish / SiLU
        return self.linear(h, key + ".fc2")


class Cfg:
    def __init__(self, config: dict):
        self.d_model = config["d_model"]
        self.heads = config["decoder_attention_heads"]
        self.head_dim = self.d_model // self.heads
        self.enc_layers = config["encoder_layers"]
        self.dec_layers = config["decoder_layers"]
        self.vocab = config["vocab_size"]
        self.pad = config["pad_token_id"]
        self.eos = config["eos_token_id"]
        self.start = config["decoder_start_token_id"]
        self.forced_eos = config.get("forced_eos_token_id")
        self.scale_embedding = config.get("scale_embedding", False)


def embed(g: G, ids: str, positions: str, prefix: str, cfg: Cfg) -> str:
    """Token embedding * sqrt(d) + sinusoidal position rows ``positions`` (int64 [T]) -> (B, T, D)."""
    ids64 = g.op("Cast", [ids], to=TensorProto.INT64)
    x = g.op("Gather", [g.w("model.shared.weight"), ids64], axis=0)
    if cfg.scale_embedding:
        x = g.op("Mul", [x, g.const(np.array(np.sqrt(cfg.d_model), dtype=np.float32))])
    pos = g.op("Gather", [g.w(f"model.{prefix}.embed_positions.weight"), positions], axis=0)  # (T, D)
    return g.op("Add", [x, pos])


def mask_bias(g: G, mask: str) -> str:
    """int32 (B, S) -> float additive (B, 1, 1, S): 0 where attended, float32 min where padded (as HF)."""
    m = g.op("Cast", [mask], to=TensorProto.FLOAT)
    inv = g.op("Sub", [g.const(np.array(1.0, dtype=np.float32)), m])
    b = g.op("Mul", [inv, g.const(np.array(FLOAT_MIN, dtype=np.float32))])
    return g.op("Unsqueeze", [b, g.const(np.array([1, 2], dtype=np.int64))])


def encoder(g: G, ids: str, bias: str, cfg: Cfg) -> str:
    seq = g.op("Gather", [g.op("Shape", [ids]), g.const(np.array(1, dtype=np.int64))], axis=0)
    positions = g.op("Range", [g.const(np.array(0, dtype=np.int64)), seq, g.const(np.array(1, dtype=np.int64))])
    x = embed(g, ids, positions, "encoder", cfg)
    scale = g.const(np.array(cfg.head_dim**-0.5, dtype=np.float32))
    for i in range(cfg.enc_layers):
        key = f"model.encoder.layers.{i}"
        q = g.heads(g.op("Mul", [g.linear(x, key + ".self_attn.q_proj"), scale]), cfg)
        k = g.heads(g.linear(x, key + ".self_attn.k_proj"), cfg)
        v = g.heads(g.linear(x, key + ".self_attn.v_proj"), cfg)
        a = g.linear(g.merge(g.attend(q, k, v, bias, cfg), cfg), key + ".self_attn.out_proj")
        x = g.layer_norm(g.op("Add", [x, a]), key + ".self_attn_layer_norm")
        x = g.layer_norm(g.op("Add", [x, g.ffn(x, key)]), key + ".final_layer_norm")
    return x


MHA = False  # --attention mha: com.microsoft MultiHeadAttention for the decoder's self and cross attention


def mha_self(g: G, x: str, key: str, past: tuple[str, str] | None, present: tuple[str, str], cfg: Cfg) -> str:
    """Decoder self-attention of one new token over the past (BNSH) with MultiHeadAttention; q scaled by the op
    (default scale 1/sqrt(head_dim), as Marian); writes the present key/value (past + this token)."""
    q = g.linear(x, key + ".self_attn.q_proj")
    k = g.linear(x, key + ".self_attn.k_proj")
    v = g.linear(x, key + ".self_attn.v_proj")
    inputs = [q, k, v, "", "", ""] + (list(past) if past is not None else [])
    outs = g.op(
        "MultiHeadAttention",
        inputs,
        outputs=[g.name("mha"), present[0], present[1]],
        domain="com.microsoft",
        num_heads=cfg.heads,
    )
    return outs[0]


def decoder_step(
    g: G,
    ids: str,
    position: str,
    past_self: list[tuple[str, str]] | None,
    cross: list[tuple[str, str]],
    bias: str,
    cfg: Cfg,
) -> str:
    """One decoder token per row -> hidden state (B,1,D); writes present_{key,value}_self_i."""
    x = embed(g, ids, position, "decoder", cfg)
    scale = g.const(np.array(cfg.head_dim**-0.5, dtype=np.float32))
    names = [(f"present_key_self_{i}", f"present_value_self_{i}") for i in range(cfg.dec_layers)]
    for i in range(cfg.dec_layers):
        key = f"model.decoder.layers.{i}"
        if not MHA:
            q = g.heads(g.op("Mul", [g.linear(x, key + ".self_attn.q_proj"), scale]), cfg)
            k = g.heads(g.linear(x, key + ".self_attn.k_proj"), cfg)
            v = g.heads(g.linear(x, key + ".self_attn.v_proj"), cfg)
        if MHA:
            a = mha_self(g, x, key, past_self[i] if past_self is not None else None, names[i], cfg)
        else:
            if past_self is not None:
                k = g.op("Concat", [past_self[i][0], k], axis=2, outputs=[names[i][0]])
                v = g.op("Concat", [past_self[i][1], v], axis=2, outputs=[names[i][1]])
            else:
                k = g.op("Identity", [k], outputs=[names[i][0]])
                v = g.op("Identity", [v], outputs=[names[i][1]])
            a = g.attend(q, k, v, None, cfg)
        a = g.linear(a if MHA else g.merge(a, cfg), key + ".self_attn.out_proj")
        x = g.layer_norm(g.op("Add", [x, a]), key + ".self_attn_layer_norm")
        if MHA:
            a = g.op(
                "MultiHeadAttention",
                [g.linear(x, key + ".encoder_attn.q_proj"), cross[i][0], cross[i][1], "", "encoder_attention_mask"],
                domain="com.microsoft",
                num_heads=cfg.heads,
            )
        else:
            q = g.heads(g.op("Mul", [g.linear(x, key + ".encoder_attn.q_proj"), scale]), cfg)
            a = g.merge(g.attend(q, cross[i][0], cross[i][1], bias, cfg), cfg)
        a = g.linear(a, key + ".encoder_attn.out_proj")
        x = g.layer_norm(g.op("Add", [x, a]), key + ".encoder_attn_layer_norm")
        x = g.layer_norm(g.op("Add", [x, g.ffn(x, key)]), key + ".final_layer_norm")
    return x


def lm_head(g: G, x: str, cfg: Cfg, variant: str, cur_len: str | None, out: str) -> str:
    bias = g.weights["final_logits_bias"].reshape(-1).astype(np.float32).copy()
    if variant in ("graphmask", "hf"):
        bias[cfg.pad] = -np.inf
    logits = g.op("MatMul", [x, g.w("model.shared.weight", transpose=True)])
    name = g.name("final_logits_bias")
    g.inits[name] = numpy_helper.from_array(bias, name)
    if variant != "hf":
        return g.op("Add", [logits, name], outputs=[out])
    logits = g.op("Add", [logits, name])
    # HF ForcedEOSTokenLogitsProcessor: when the sequence (start token included) has max_length - 1 tokens, every
    # score but eos's is -inf and eos's is 0. "max_length" is the BeamSearch node's input, seen from outer scope.
    forced = np.full(cfg.vocab, -np.inf, dtype=np.float32)
    forced[cfg.forced_eos] = 0.0
    last = g.op("Sub", ["max_length", g.const(np.array([1], dtype=np.int32))])
    cond = g.op("Equal", [cur_len, last])  # [1] bool, broadcast over (B, 1, V)
    return g.op("Where", [cond, g.const(forced, "forced"), logits], outputs=[out])


def sinusoids(n_pos: int, dim: int) -> np.ndarray:
    """Marian's static positions: sin of the even-index angles in the first half, cos of the odd ones after."""
    j = np.arange(dim)
    angle = np.arange(n_pos)[:, None] / np.power(10000, 2 * (j // 2) / dim)[None, :]
    half = (dim + 1) // 2
    out = np.empty((n_pos, dim), dtype=np.float32)
    out[:, :half] = np.sin(angle[:, 0::2])
    out[:, half:] = np.cos(angle[:, 1::2])
    return out


def vinfo(name: str, elem: int, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def build_encoder_graph(weights, cfg: Cfg, variant: str) -> onnx.GraphProto:
    g = G("enc", weights)
    H, Dh, D, V = cfg.heads, cfg.head_dim, cfg.d_model, cfg.vocab
    bias = mask_bias(g, "encoder_attention_mask")
    hidden = encoder(g, "encoder_input_ids", bias, cfg)
    g.op("Identity", [hidden], outputs=["encoder_hidden_states"])
    cross = []
    for i in range(cfg.dec_layers):
        key = f"model.decoder.layers.{i}.encoder_attn"
        k = g.heads(g.linear(hidden, key + ".k_proj"), cfg, out=f"present_key_cross_{i}")
        v = g.heads(g.linear(hidden, key + ".v_proj"), cfg, out=f"present_value_cross_{i}")
        cross.append((k, v))
    position = g.const(np.array([0], dtype=np.int64))
    x = decoder_step(g, "decoder_input_ids", position, None, cross, bias, cfg)
    cur_len = g.const(np.array([1], dtype=np.int32))
    lm_head(g, x, cfg, variant, cur_len, "logits")
    inputs = [
        vinfo("encoder_input_ids", TensorProto.INT32, ["batch", "src_len"]),
        vinfo("encoder_attention_mask", TensorProto.INT32, ["batch", "src_len"]),
        vinfo("decoder_input_ids", TensorProto.INT32, ["batch", 1]),
    ]
    outputs = [
        vinfo("logits", TensorProto.FLOAT, ["batch", 1, V]),
        vinfo("encoder_hidden_states", TensorProto.FLOAT, ["batch", "src_len", D]),
    ]
    for i in range(cfg.dec_layers):
        outputs += [
            vinfo(f"present_key_self_{i}", TensorProto.FLOAT, ["batch", H, 1, Dh]),
            vinfo(f"present_value_self_{i}", TensorProto.FLOAT, ["batch", H, 1, Dh]),
        ]
    for i in range(cfg.dec_layers):
        outputs += [
            vinfo(f"present_key_cross_{i}", TensorProto.FLOAT, ["batch", H, "src_len", Dh]),
            vinfo(f"present_value_cross_{i}", TensorProto.FLOAT, ["batch", H, "src_len", Dh]),
        ]
    return helper.make_graph(g.nodes, "marian encoder and decoder init", inputs, outputs, list(g.inits.values()))


def build_decoder_graph(weights, cfg: Cfg, variant: str) -> onnx.GraphProto:
    g = G("dec", weights)
    H, Dh, V = cfg.heads, cfg.head_dim, cfg.vocab
    bias = mask_bias(g, "encoder_attention_mask")
    past_self = [(f"past_key_self_{i}", f"past_value_self_{i}") for i in range(cfg.dec_layers)]
    cross = [(f"past_key_cross_{i}", f"past_value_cross_{i}") for i in range(cfg.dec_layers)]
    past_len = g.op(
        "Slice",
        [
            g.op("Shape", ["past_key_self_0"]),
            g.const(np.array([2], dtype=np.int64)),
            g.const(np.array([3], dtype=np.int64)),
        ],
    )  # [1] int64: this token's position
    x = decoder_step(g, "input_ids", past_len, past_self, cross, bias, cfg)
    cur_len = g.op("Cast", [g.op("Add", [past_len, g.const(np.array([1], dtype=np.int64))])], to=TensorProto.INT32)
    lm_head(g, x, cfg, variant, cur_len, "logits")
    inputs = [
        vinfo("input_ids", TensorProto.INT32, ["batch", 1]),
        vinfo("encoder_attention_mask", TensorProto.INT32, ["batch", "src_len"]),
    ]
    for i in range(cfg.dec_layers):
        inputs += [
            vinfo(f"past_key_self_{i}", TensorProto.FLOAT, ["batch", H, "past_len", Dh]),
            vinfo(f"past_value_self_{i}", TensorProto.FLOAT, ["batch", H, "past_len", Dh]),
        ]
    for i in range(cfg.dec_layers):
        inputs += [
            vinfo(f"past_key_cross_{i}", TensorProto.FLOAT, ["batch", H, "src_len", Dh]),
            vinfo(f"past_value_cross_{i}", TensorProto.FLOAT, ["batch", H, "src_len", Dh]),
        ]
    outputs = [vinfo("logits", TensorProto.FLOAT, ["batch", 1, V])]
    for i in range(cfg.dec_layers):
        outputs += [
            vinfo(f"present_key_self_{i}", TensorProto.FLOAT, ["batch", H, "total_len", Dh]),
            vinfo(f"present_value_self_{i}", TensorProto.FLOAT, ["batch", H, "total_len", Dh]),
        ]
    return helper.make_graph(g.nodes, "marian decoder", inputs, outputs, list(g.inits.values()))


def build(out: str, variant: str) -> None:
    from safetensors.numpy import load_file

    config = json.loads(Path(HF_DIR, "config.json").read_text())
    cfg = Cfg(config)
    weights = load_file(str(Path(HF_DIR, "model.safetensors")))
    table = sinusoids(config["max_position_embeddings"], cfg.d_model)  # not stored in the safetensors
    weights["model.encoder.embed_positions.weight"] = table
    weights["model.decoder.embed_positions.weight"] = table
    if "model.shared.weight" not in weights:
        weights["model.shared.weight"] = weights["model.encoder.embed_tokens.weight"]
    enc = build_encoder_graph(weights, cfg, variant)
    dec = build_decoder_graph(weights, cfg, variant)
    inputs = [
        "input_ids",
        "max_length",
        "min_length",
        "num_beams",
        "num_return_sequences",
        "length_penalty",
        "repetition_penalty",
        "vocab_mask" if variant == "vocabmask" else "",
        "",
        "attention_mask",
    ]
    node = helper.make_node(
        "BeamSearch",
        inputs,
        ["sequences", "sequences_scores"],
        name="BeamSearch_marian",
        domain="com.microsoft",
        eos_token_id=cfg.eos,
        pad_token_id=cfg.pad,
        decoder_start_token_id=cfg.start,
        model_type=1,
        early_stopping=0,
        no_repeat_ngram_size=0,
        encoder=enc,
        decoder=dec,
    )
    graph_inputs = [
        vinfo("input_ids", TensorProto.INT32, ["batch", "src_len"]),
        vinfo("max_length", TensorProto.INT32, [1]),
        vinfo("min_length", TensorProto.INT32, [1]),
        vinfo("num_beams", TensorProto.INT32, [1]),
        vinfo("num_return_sequences", TensorProto.INT32, [1]),
        vinfo("length_penalty", TensorProto.FLOAT, [1]),
        vinfo("repetition_penalty", TensorProto.FLOAT, [1]),
    ]
    if variant == "vocabmask":
        graph_inputs.append(vinfo("vocab_mask", TensorProto.INT32, [cfg.vocab]))
    graph_inputs.append(vinfo("attention_mask", TensorProto.INT32, ["batch", "src_len"]))
    graph_outputs = [
        vinfo("sequences", TensorProto.INT32, ["batch", "num_return_sequences", "max_length"]),
        vinfo("sequences_scores", TensorProto.FLOAT, ["batch", "num_return_sequences"]),
    ]
    graph = helper.make_graph([node], "marian beam search", graph_inputs, graph_outputs)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        producer_name="ortbeam-prototype",
    )
    model.ir_version = 8
    onnx.save(model, out)
    print(f"wrote {out} ({Path(out).stat().st_size / 1e6:.1f} MB), variant={variant}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--variant", choices=["vocabmask", "graphmask", "hf"], default="hf")
    p.add_argument("--attention", choices=["plain", "mha"], default="plain")
    a = p.parse_args()
    MHA = a.attention == "mha"
    build(a.out, a.variant)
