"""Progress reporting for long work (export, evaluation, training): tqdm when installed and wanted."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

logger = logging.getLogger("enzh")


@contextmanager
def progress_steps(steps: list[str], *, enabled: bool = True, desc: str = "") -> Iterator[Callable[[str], None]]:
    """Yield ``step(name)``: call it as each named step starts; shows a bar with the current step."""
    bar = None
    if enabled:
        try:
            from tqdm import tqdm

            bar = tqdm(total=len(steps), desc=desc, unit="step", file=sys.stderr, leave=True)
        except ImportError:
            bar = None
    started: list[str] = []

    def step(name: str) -> None:
        if started and bar is not None:
            bar.update(1)
        started.append(name)
        logger.debug("%s: %s", desc, name)
        if bar is not None:
            bar.set_postfix_str(name)

    try:
        yield step
        if bar is not None and started:
            bar.update(1)
    finally:
        if bar is not None:
            bar.close()
