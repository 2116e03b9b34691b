"""``enzh serve``: the HTTP translation service (needs the serve extra); one flag per ServeOptions field, made from
the fields themselves (:mod:`enzh.cli.option_flags`), and the Ray Serve deployment's own few flags."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from enzh.cli.option_flags import add_option_flags
from enzh.cli.option_flags import options_from_args as _options_from_args
from enzh.runtime.flags import flag_name
from enzh.scale.options import replica_options
from enzh.serve.options import ENV_PREFIX, ServeOptions
from enzh.serve.run import serve

_FIELDS = dataclasses.fields(ServeOptions)
# ServeOptions fields whose flag is not ``--field-name``, and those without a flag (set only by code that embeds
# the app: tests, benchmarks, run.serve for its workers); tests/serve/test_server_cli.py checks both.
FLAGS = {
    f.name: name for f in _FIELDS if (name := flag_name(f)) is not None and name != "--" + f.name.replace("_", "-")
}
NOT_FLAGS = frozenset(f.name for f in _FIELDS if flag_name(f) is None)
# Flags that set no ServeOptions field: the Ray Serve deployment's (enzh.scale.options.ReplicaOptions).
RAY_FLAGS = frozenset({"--ray", "--replicas", "--max-replicas"})


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the HTTP translation service (needs the serve extra)")
    add_option_flags(p, ServeOptions, env_prefix=ENV_PREFIX)
    ray = p.add_argument_group("Ray Serve (docs/scale.md; needs the [ray] extra)")
    ray.add_argument("--ray", metavar="local|auto|ADDRESS", help="serve replicas on Ray Serve")
    ray.add_argument("--replicas", type=int, metavar="N", help="replicas, each with its own model and batching (1)")
    ray.add_argument("--max-replicas", type=int, metavar="N", help="autoscale from --replicas up to this many")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(run=run)


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    """The ServeOptions of the flags given (else of their ENZH_SERVE_* variables, else the defaults)."""
    options: ServeOptions = _options_from_args(args, ServeOptions, env_prefix=ENV_PREFIX)
    return options


def run(args: argparse.Namespace) -> int:
    from enzh.runtime.glossary import Glossary

    for path in getattr(args, "glossaries", ()):
        Glossary.read(path)  # a bad glossary fails here, naming its line, before any model loads
    replicas = replica_options(args.ray, args.replicas, args.max_replicas)
    if replicas is not None:
        from enzh.scale.serving import serve_on_ray

        serve_on_ray(options_from_args(args), replicas, log_level=args.log_level)
        return 0
    serve(options_from_args(args), log_level=args.log_level)
    return 0
