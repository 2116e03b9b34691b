"""``python -m enzh.tools.bench --worker JOB OUT``: one engine's measuring process (started by the bench itself).

The command line of the bench is ``enzh bench`` (enzh/cli/bench.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3 or args[0] != "--worker":
        print("usage: python -m enzh.tools.bench --worker JOB OUT (the benchmark itself: enzh bench)", file=sys.stderr)
        return 2
    from enzh.tools.bench.worker import worker_main

    return worker_main(args[1], args[2])


if __name__ == "__main__":
    sys.exit(main())
