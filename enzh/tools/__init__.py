"""Measurement tools above the library: benchmarks, the server load benchmark, evaluation, reports."""
