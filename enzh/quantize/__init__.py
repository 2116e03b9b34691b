"""Precision variants (int8, int4, fp16, shortlists) derived from an exported fp32 model directory."""
