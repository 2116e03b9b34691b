"""``enzh serve``: the HTTP translation service (needs the serve extra); one flag per ServeOptions field."""

from __future__ import annotations

import argparse
from typing import Any

from enzh.scale.options import replica_options
from enzh.serve.options import ServeOptions
from enzh.serve.run import serve
from enzh.serve.scheduler import MODES

# ServeOptions fields whose flag is not ``--field-name`` (tests/serve/test_server_cli.py keeps the two in sync).
FLAGS = {"model_dirs": "--model", "default_beam_size": "--beam-size", "batching": "--no-batching"}
# Flags that set no ServeOptions field: the Ray Serve deployment's (enzh.scale.options.ReplicaOptions).
RAY_FLAGS = frozenset({"--ray", "--replicas", "--max-replicas"})
# Fields set only by code that embeds the app (tests, benchmarks), never from the command line.
# files_dir: set by run.serve for workers; model_dir: one model for code that embeds the app (--model gives model_dirs)
NOT_FLAGS = frozenset({"warmup", "handle_sigterm", "files_dir", "model_dir"})


def add_parser(sub: Any) -> None:
    defaults = ServeOptions()
    p = sub.add_parser("serve", help="run the HTTP translation service (needs the serve extra)")
    p.add_argument(
        "--model",
        action="append",
        metavar="DIR",
        help="exported model directory; repeat for several (each text goes to the model of its direction; "
        "default: the embedded pair, en->zh and zh->en)",
    )
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
    p.add_argument(
        "--batching-mode",
        choices=MODES,
        default=defaults.batching_mode,
        help="continuous: sentences join a running decode at every step (default); dynamic: whole batches",
    )
    # keys, limits, timeouts, CORS (docs/server.md "Keys and limits")
    p.add_argument("--api-keys", metavar="FILE", help="require a key of this `enzh keys` store (default: no keys)")
    p.add_argument("--req-limit", type=int, metavar="N", default=defaults.req_limit, help="requests/min per key")
    p.add_argument("--char-limit", type=int, metavar="N", default=defaults.char_limit, help="characters/min per key")
    p.add_argument("--header-timeout-s", type=float, default=defaults.header_timeout_s, help="close stalled requests")
    p.add_argument("--cors-origins", metavar="ORIGINS", default=defaults.cors_origins, help="'*' or a,b (or none)")
    p.add_argument(
        "--trusted-proxies",
        metavar="ADDRESSES",
        default=defaults.trusted_proxies,
        help="proxies (a,b or CIDRs) whose X-Forwarded-For names the client (default none, not even loopback)",
    )
    # LibreTranslate API (docs/server.md "LibreTranslate API")
    p.add_argument("--max-alternatives", type=int, default=defaults.max_alternatives, help="per text, at most")
    p.add_argument("--download-ttl-s", type=float, default=defaults.download_ttl_s, help="translated files kept")
    # Ray Serve (docs/scale.md): command-line only, not ServeOptions fields (enzh.scale.options.ReplicaOptions)
    p.add_argument("--ray", metavar="local|auto|ADDRESS", help="serve replicas on Ray Serve (needs the [ray] extra)")
    p.add_argument("--replicas", type=int, help="with --ray: replicas, each with its own model and batching (1)")
    p.add_argument("--max-replicas", type=int, help="with --ray: autoscale from --replicas up to this many")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(run=run)


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    return ServeOptions(
        model_dirs=tuple(args.model or ()),
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
        batching_mode=args.batching_mode,
        max_alternatives=args.max_alternatives,
        download_ttl_s=args.download_ttl_s,
        api_keys=args.api_keys,
        req_limit=args.req_limit,
        char_limit=args.char_limit,
        header_timeout_s=args.header_timeout_s,
        cors_origins=args.cors_origins,
        trusted_proxies=args.trusted_proxies,
    )


def run(args: argparse.Namespace) -> int:
    replicas = replica_options(args.ray, args.replicas, args.max_replicas)
    if replicas is not None:
        from enzh.scale.serving import serve_on_ray

        serve_on_ray(options_from_args(args), replicas, log_level=args.log_level)
        return 0
    serve(options_from_args(args), log_level=args.log_level)
    return 0
