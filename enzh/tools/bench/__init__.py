"""``enzh bench``: enzh's precision variants against transformers (PyTorch) and CTranslate2, side by side.

One run measures every engine on the same source ids:

* **engines**: enzh fp32 / int8 / int4 (int8 and int4 derived with :func:`enzh.quantize.quantize`),
  ``transformers`` ``generate()`` on PyTorch fp32, and CTranslate2 float32 / int8 (converted from the same
  HuggingFace directory by ``ctranslate2.converters.TransformersConverter``) when ``ctranslate2`` is installed.
* **cases**: batch sizes x beam widths, in two groups (a third on request). *fixed*: random source ids of one
  length and exactly N generated tokens per sentence (minimum = maximum new tokens) on the opus-mt-en-zh-shaped
  model (its exact config, seeded random weights, built once into the cache), so random weights compare fairly;
  every engine's output length is checked on every call. *natural*: the first sentences of the demo model's
  held-out test set, each engine stopping at eos. *nllb* (``--groups nllb``, not in the default run): the
  fixed-length cells on a stand-in with nllb-200-distilled-600M's exact config and seeded random weights
  (:func:`enzh.tools.models.build_nllb_shaped`, 2.5 GB, built once into the cache), enzh fp32/int8 against
  CTranslate2 float32/int8 and PyTorch; the target-language code NLLB forces first is one of the N tokens in
  every engine (CTranslate2: a one-token target prefix, which its decoding length counts).
* **per cell**: median and spread (min, max, quartiles) of the latency over the repeats, tokens/s, peak RSS,
  the latency ratio to CTranslate2 int8 and to PyTorch, and (natural cases) how many outputs equal PyTorch's.
* **per engine**: load time (process start to first translation), RSS after load, size on disk.

Each engine runs in a fresh subprocess (``python -m enzh.tools.bench --worker JOB OUT``) with the same number of
threads, so its load time and RSS are its own. Output: ``bench.json``, ``bench.md`` and ``bench.png``.

The modules, in the order a run uses them: ``settings`` (engines, settings, cases), ``machine`` (the machine,
RSS, versions), ``cases`` (source ids), ``prepare`` (models built once into the cache), ``run`` (the rounds),
``worker`` and ``engines`` (one engine's process), ``stats`` (cells), ``targets``, ``report`` and ``chart``
(bench.md, bench.json, bench.png). The command line is enzh/cli/bench.py.

Every module imports only the standard library at the top: the worker of one engine must not pay for (or
carry the memory of) another engine's imports.
"""
