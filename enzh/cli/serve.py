"""``enzh serve``: the HTTP translation service (needs the serve extra)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    from enzh.serve.app import add_serve_parser

    add_serve_parser(sub)
    sub.choices["serve"].set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from enzh.serve.app import cmd_serve

    return cmd_serve(args)
