"""The exporter: HuggingFace Marian model -> enzh model directory (needs the ``[export]`` extra)."""
