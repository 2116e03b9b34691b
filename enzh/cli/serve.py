"""``enzh serve``: the HTTP translation service (needs the serve extra); one flag per ServeOptions field."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.serve.options import ServeOptions
from enzh.serve.run import serve

# ServeOptions fields whose flag is not ``--field-name`` (tests/serve/test_server_cli.py keeps the two in sync).
FLAGS = {"model_dir": "--model", "default_beam_size": "--beam-size", "batching": "--no-batching"}
# Fields set only by code that embeds the app (tests, benchmarks), never from the command line.
NOT_FLAGS = frozenset({"warmup", "handle_sigterm"})


def add_parser(sub: Any) -> None:
    defaults = ServeOptions()
    p = sub.add_parser("serve", help="run the HTTP translation service (needs the serve extra)")
    p.add_argument("--model", help="exported model directory (default: the embedded demo model)")
    p.add_argument("--host", default=defaults.host, help=f"default {defaults.host}")
    p.add_argument("--port", type=int, default=defaults.port, help=f"default {defaults.port}")
    p.add_argument("--workers", type=int, default=defaults.workers, help="worker processes, each with its own model")
    p.add_argument("--threads", type=int, default=defaults.threads, help="ONNX Runtime threads per worker (0 = all)")
    p.add_argument("--max-batch-tokens", type=int, default=defaults.max_batch_tokens)
    p.add_argument("--max-queue-delay-ms", type=float, default=defaults.max_queue_delay_ms)
    p.add_argument("--max-queue-size", type=int, default=defaults.max_queue_size, help="sentences waiting")
    p.add_argument("--max-chars-per-text", type=int, default=defaults.max_chars_per_text)
    p.add_argument("--max-texts-per-request", type=int, default=defaults.max_texts_per_request)
    p.add_argument("--max-request-chars", type=int, default=defaults.max_request_chars)
    p.add_argument("--max-body-bytes", type=int, default=defaults.max_body_bytes)
    p.add_argument("--request-timeout-s", type=float, default=defaults.request_timeout_s)
    p.add_argument("--beam-size", type=int, help="default beam width (default: the model's)")
    p.add_argument("--max-beam-size", type=int, default=defaults.max_beam_size)
    p.add_argument("--drain-timeout-s", type=float, default=defaults.drain_timeout_s)
    p.add_argument("--no-batching", action="store_true", help="run requests one at a time (benchmark baseline)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(run=run)


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    return ServeOptions(
        model_dir=args.model,
        host=args.host,
        port=args.port,
        workers=args.workers,
        threads=args.threads,
        max_batch_tokens=args.max_batch_tokens,
        max_queue_delay_ms=args.max_queue_delay_ms,
        max_queue_size=args.max_queue_size,
        max_chars_per_text=args.max_chars_per_text,
        max_texts_per_request=args.max_texts_per_request,
        max_request_chars=args.max_request_chars,
        max_body_bytes=args.max_body_bytes,
        request_timeout_s=args.request_timeout_s,
        default_beam_size=args.beam_size,
        max_beam_size=args.max_beam_size,
        drain_timeout_s=args.drain_timeout_s,
        batching=not args.no_batching,
    )


def run(args: argparse.Namespace) -> int:
    serve(options_from_args(args), log_level=args.log_level)
    return 0
