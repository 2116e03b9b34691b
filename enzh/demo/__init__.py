"""The embedded demo: a synthetic EN->ZH corpus, its tokenizers, training and evaluation of a small model."""
