"""``enzh COMMAND ...``: the parser assembled from one small module per command.

Every command module has ``add_parser(subparsers)`` (which sets ``run``) and ``run(args) -> exit code``; each is
a thin layer over the library's options. Heavy dependencies are imported when a command runs, not before.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from enzh.cli import bench, evaluate, export, keys, quantize, serve, train_demo, translate, translate_file, validate
from enzh.runtime.errors import EnzhError

logger = logging.getLogger("enzh")

COMMANDS = (export, quantize, translate, translate_file, validate, evaluate, train_demo, serve, keys, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="enzh", description="English->Chinese Marian models on ONNX Runtime.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    try:
        return int(args.run(args))
    # Errors about the user's input or files: one line naming the problem and the fix, exit code 2.
    except (EnzhError, ValueError, TypeError, FileNotFoundError, OSError) as exc:
        print(f"enzh {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"enzh {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
