"""The runtime: load an exported model directory and translate with onnxruntime, numpy and sentencepiece.

Nothing here imports torch, transformers, onnx or the service (an import-linter contract checks it).
"""
