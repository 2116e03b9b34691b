"""Parity + timing: enzh's Python search loop vs onnxruntime's BeamSearch op (graphs from build.py).

Run from the repository root, after build.py wrote the four variants into $ORTBEAM_DIR (default /tmp/ortbeam):
  .venv/bin/python scripts/ort_beam_search_probe/measure.py [--rounds 3] [--skip-timing]
Phases: 1) token parity of every op variant vs transformers generate() and enzh, beams 4 and 1, calls of 1 and 16;
2) decoder-step counts (HF's, counted with a logits processor; the op's, counted from an ORT profile);
3) timing, engines alternated A/B/C per round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
import torch
from transformers import LogitsProcessor, LogitsProcessorList, MarianMTModel

from enzh.runtime.batching import pad_batch, plan_batches
from enzh.runtime.translator import Translator, default_max_new_tokens

HERE = os.environ.get("ORTBEAM_DIR", "/tmp/ortbeam")
VARIANTS = ("vocabmask", "graphmask", "hf", "hf_mha")
PAD, EOS, VOCAB = 1833, 0, 1834


def load_sources(t: Translator) -> list[list[int]]:
    path = "enzh/runtime/assets/demo/test.tsv"
    with open(path, encoding="utf-8") as f:
        lines = [row.split("\t")[0] for row in f.read().splitlines()[:32]]
    return [list(x) for x in t.tokenizer.encode_batch(lines)]


FIXED_BOUND: int | None = None  # --max-new-tokens: one explicit bound for every call (parity stress test)


def bound_for(t: Translator):
    """enzh's default output bound (max_new_tokens) per source, exactly as Translator.generate_nbest_ids."""
    if FIXED_BOUND is not None:
        return lambda src: FIXED_BOUND
    limit = t.adapter.max_positions - 1
    generation_limit = int(t.adapter.generation.get("max_length", limit + 1)) - 1
    return lambda src: default_max_new_tokens(len(src), min(limit, generation_limit))


def plan(t: Translator, chunk: list[list[int]]) -> list[list[int]]:
    bound = bound_for(t)
    return plan_batches(
        [len(s) for s in chunk],
        max_tokens=t.options.max_batch_tokens,
        max_batch=t.options.max_batch_size,
        group=lambda i: bound(chunk[i]),
    )


def chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class OpEngine:
    """The BeamSearch-op model; one op run per batch that enzh's planner would form."""

    def __init__(self, t: Translator, variant: str, threads: int, spin: bool = False, profile: str | None = None):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        if profile:
            so.enable_profiling = True
            so.profile_file_prefix = profile
        self.session = ort.InferenceSession(f"{HERE}/beam_{variant}.onnx", so, providers=["CPUExecutionProvider"])
        self.t, self.bound = t, bound_for(t)
        self.variant = variant.split("_")[0]  # hf_mha: the hf variant with MultiHeadAttention

    def run_batch(self, batch: list[list[int]], beams: int) -> list[tuple[int, ...]]:
        ids, mask = pad_batch(batch, PAD)
        new_tokens = self.bound(batch[0])  # one bound per planned batch (the planner groups by bound)
        feed = {
            "input_ids": ids.astype(np.int32),
            "max_length": np.array([new_tokens + 1], np.int32),
            "min_length": np.array([0], np.int32),
            "num_beams": np.array([beams], np.int32),
            "num_return_sequences": np.array([1], np.int32),
            "length_penalty": np.array([1.0], np.float32),
            "repetition_penalty": np.array([1.0], np.float32),
            "attention_mask": mask.astype(np.int32),
        }
        if self.variant == "vocabmask":
            vm = np.ones(VOCAB, np.int32)
            vm[PAD] = 0
            feed["vocab_mask"] = vm
        sequences = self.session.run(["sequences"], feed)[0]
        out = []
        for row in sequences[:, 0, :]:
            tokens = [int(x) for x in row[1:] if x != PAD]  # drop the start token and the pad filling
            if len(tokens) < new_tokens:  # the op keeps a finished hypothesis without its eos
                tokens.append(EOS)
            out.append(tuple(tokens))
        return out

    def generate(self, chunk: list[list[int]], beams: int) -> list[tuple[int, ...]]:
        results: list = [None] * len(chunk)
        for batch in plan(self.t, chunk):
            for i, toks in zip(batch, self.run_batch([chunk[i] for i in batch], beams), strict=True):
                results[i] = toks
        return results


class StepCounter(LogitsProcessor):
    def __init__(self):
        self.calls = 0

    def __call__(self, input_ids, scores):
        self.calls += 1
        return scores


def hf_generate(t, hf, chunk: list[list[int]], beams: int, counter: StepCounter | None = None):
    """transformers generate() on the same planned batches as enzh, with enzh's max_new_tokens."""
    bound = bound_for(t)
    results: list = [None] * len(chunk)
    for batch in plan(t, chunk):
        ids, mask = pad_batch([chunk[i] for i in batch], PAD)
        kwargs = {"logits_processor": LogitsProcessorList([counter])} if counter else {}
        with torch.no_grad():
            out = hf.generate(
                torch.from_numpy(ids),
                attention_mask=torch.from_numpy(mask),
                num_beams=beams,
                max_new_tokens=bound(chunk[batch[0]]),
                **kwargs,
            )
        for i, row in zip(batch, out.tolist(), strict=True):
            toks = row[1:]
            while toks and toks[-1] == PAD:
                toks.pop()
            results[i] = tuple(toks)
    return results


def enzh_generate(t, chunk, beams):
    return [h.token_ids for h in t.generate_ids(chunk, beam_size=beams, max_new_tokens=FIXED_BOUND)]


def first_diff(a, b):
    for k, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return k
    return min(len(a), len(b))


def parity(t, hf, sources) -> dict:
    report = {}
    for beams in (4, 1):
        for size in (1, 16):
            ref = [x for c in chunks(sources, size) for x in hf_generate(t, hf, c, beams)]
            enz = [x for c in chunks(sources, size) for x in enzh_generate(t, c, beams)]
            row = {"enzh==hf": sum(a == b for a, b in zip(enz, ref, strict=True))}
            for variant in VARIANTS:
                eng = OpEngine(t, variant, threads=2)
                got = [x for c in chunks(sources, size) for x in eng.generate(c, beams)]
                diffs = [i for i, (a, b) in enumerate(zip(got, ref, strict=True)) if a != b]
                row[f"{variant}==hf"] = len(sources) - len(diffs)
                row[f"{variant}==enzh"] = sum(a == b for a, b in zip(got, enz, strict=True))
                row[f"{variant}_first_diffs"] = [
                    {"sentence": i, "at": first_diff(got[i], ref[i]), "op": got[i], "hf": ref[i]} for i in diffs[:3]
                ]
            report[f"beams={beams} batch={size}"] = row
            print(
                f"parity beams={beams} batch={size}: "
                + json.dumps({k: v for k, v in row.items() if not k.endswith("diffs")}),
                flush=True,
            )
    return report


def count_steps(t, hf, sources) -> dict:
    """Decoder forward passes per sentence at batch 1, beam 4: HF's (one logits-processor call per step) and the
    op's (runs of the decoder subgraph's last node in an ORT profile, + 1 for the encoder-init subgraph)."""
    hf_steps = []
    for src in sources:
        c = StepCounter()
        hf_generate(t, hf, [src], 4, c)
        hf_steps.append(c.calls)
    prefix = tempfile.mkdtemp(prefix="ortprof", dir=HERE) + "/p"
    eng = OpEngine(t, "hf", threads=1, profile=prefix)
    last_node = None
    import onnx

    m = onnx.load(f"{HERE}/beam_hf.onnx")
    dec = next(a.g for a in m.graph.node[0].attribute if a.name == "decoder")
    last_node = dec.node[-1].name
    for src in sources:
        eng.generate([src], 4)
    path = eng.session.end_profiling()
    with open(path) as f:
        events = json.load(f)
    runs = [
        e
        for e in events
        if e.get("cat") == "Node" and e.get("name", "").startswith(last_node) and e["name"].endswith("_kernel_time")
    ]
    # the per-sentence split: profile events come in order; one generate() per sentence
    total_op = len(runs) + len(sources)
    return {
        "hf_steps": hf_steps,
        "hf_total": sum(hf_steps),
        "op_total_from_profile": total_op,
        "profile_last_node": last_node,
    }


def timing(t, sources, rounds: int) -> dict:
    engines = {
        "enzh": lambda chunk, beams: enzh_generate(t, chunk, beams),
        "op_plain_2t": OpEngine(t, "hf", threads=2).generate,
        "op_plain_1t": OpEngine(t, "hf", threads=1).generate,
        "op_mha_2t": OpEngine(t, "hf_mha", threads=2).generate,
        "op_mha_1t": OpEngine(t, "hf_mha", threads=1).generate,
    }
    cases = [(4, 1), (4, 16), (1, 1), (1, 16)]
    times: dict = {f"{n} beams={b} batch={s}": [] for n in engines for b, s in cases}
    for fn in engines.values():  # warm-up
        for b, s in cases:
            fn(sources[:s], b)
    for r in range(rounds):
        for b, s in cases:
            for name, fn in engines.items():  # A/B/C/D alternation within each case and round
                start = time.perf_counter()
                for c in chunks(sources, s):
                    fn(c, b)
                times[f"{name} beams={b} batch={s}"].append((time.perf_counter() - start) * 1000)
        print(f"round {r + 1} done", flush=True)
    return {
        k: {"min_ms": min(v), "median_ms": statistics.median(v), "all_ms": [round(x, 1) for x in v]}
        for k, v in times.items()
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--skip-timing", action="store_true")
    p.add_argument("--skip-parity", action="store_true")
    p.add_argument("--max-new-tokens", type=int, default=None, help="parity only: explicit bound for every call")
    p.add_argument("--out", default=f"{HERE}/results.json")
    a = p.parse_args()
    global FIXED_BOUND
    FIXED_BOUND = a.max_new_tokens
    torch.set_num_threads(2)
    t = Translator.load("enzh/runtime/assets/demo")
    hf = MarianMTModel.from_pretrained("assets/demo-hf").eval()
    sources = load_sources(t)
    out: dict = {
        "ort": ort.__version__,
        "cpus": os.cpu_count(),
        "sentences": len(sources),
        "source_tokens": [len(s) for s in sources],
    }
    t0 = time.perf_counter()
    if not a.skip_parity:
        out["parity"] = parity(t, hf, sources)
        out["steps"] = count_steps(t, hf, sources) if FIXED_BOUND is None else None
        if out["steps"]:
            print("steps:", json.dumps({k: v for k, v in out["steps"].items() if k != "hf_steps"}), flush=True)
    if not a.skip_timing:
        out["timing"] = timing(t, sources, a.rounds)
        for k, v in out["timing"].items():
            print(f"{k:32s} min {v['min_ms']:8.1f} ms  median {v['median_ms']:8.1f} ms  {v['all_ms']}")
    out["wall_s"] = time.perf_counter() - t0
    out["max_new_tokens"] = FIXED_BOUND
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wall {out['wall_s']:.0f} s; wrote {a.out}")


if __name__ == "__main__":
    sys.exit(main())
