"""Command-line descriptions of option fields, kept on the fields themselves: an options dataclass declares each
field once with :func:`option` (its default and its help), and the command line (:mod:`enzh.cli.option_flags`)
makes the flags, their help and their environment variables from them. Adding a field with ``option(...)`` adds
its flag; a field made with ``option(..., flag=None)`` (or a plain ``field``) has none.

Nothing here knows argparse: this is the description, which the options modules (at any layer) can import.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

_KEY = "enzh.flag"
_AUTO = "auto"  # the flag's name from the field's: max_body_bytes -> --max-body-bytes


@dataclass(frozen=True)
class Flag:
    """How a field appears on the command line.

    ``name``: the flag (``--model``), or None for "--" + the field name with dashes. ``help``: one line; the
    default is appended unless ``default_text`` replaces it ("" says nothing of it). ``metavar``: the value's
    placeholder (else one from its type). ``group``: the help section it is listed under. A bool field with a
    True default is turned off by its flag (name it ``--no-...``); one with a False default is turned on.
    """

    help: str
    name: str | None = None
    metavar: str | None = None
    group: str | None = None
    default_text: str | None = None


def option(default: Any, help: str, *, flag: str | None = _AUTO, **details: Any) -> Any:
    """A dataclass field with ``default`` and its :class:`Flag` (``flag=None``: no flag; ``details``: the other
    :class:`Flag` fields)."""
    described = None if flag is None else Flag(help, name=None if flag == _AUTO else flag, **details)
    return dataclasses.field(default=default, metadata={_KEY: described, "help": help})


def flag_of(field: dataclasses.Field[Any]) -> Flag | None:
    """The field's :class:`Flag`, or None when it has none."""
    found = field.metadata.get(_KEY)
    return found if isinstance(found, Flag) else None


def flag_name(field: dataclasses.Field[Any]) -> str | None:
    """The field's flag (``--max-body-bytes``), or None."""
    flag = flag_of(field)
    if flag is None:
        return None
    return flag.name or "--" + field.name.replace("_", "-")
