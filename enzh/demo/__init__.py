"""The demo model's recipe: a synthetic English->Chinese corpus, its tokenizers and the training loop.

Needs the ``[demo]`` extra (torch, transformers). The trained HF weights live in the source tree
(``assets/demo-hf``), not in the package; the package ships them exported (``enzh/runtime/assets/demo``).
"""

from pathlib import Path

# The trained demo model as a HuggingFace directory, present in a source checkout (not in the wheel).
HF_MODEL_DIR = Path(__file__).resolve().parents[2] / "assets" / "demo-hf"
