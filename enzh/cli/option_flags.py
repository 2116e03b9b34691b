"""Flags made from an options dataclass (fields declared with :func:`enzh.runtime.flags.option`): one flag per
field, its help and its environment variable, and the options back from the parsed arguments.

A field's value is its flag's when the flag is given, else its environment variable's when that is set (``PREFIX``
+ the flag's name in capitals, dashes as underscores: ``--max-body-bytes`` is ``ENZH_SERVE_MAX_BODY_BYTES``), else
the dataclass default; the dataclass then validates the whole (its errors name the field and the accepted values).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from enzh.runtime.errors import OptionsError
from enzh.runtime.flags import Flag, flag_name, flag_of

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off", "")


@dataclasses.dataclass(frozen=True)
class _Spec:
    field: dataclasses.Field[Any]
    flag: Flag
    name: str  # --max-body-bytes
    kind: str  # bool, list or value
    convert: Callable[[str], Any]  # a value (a list's element) from its text
    default: Any


def _specs(cls: type) -> list[_Spec]:
    hints = typing.get_type_hints(cls)
    defaults = cls()
    specs = []
    for field in dataclasses.fields(cls):
        flag, name = flag_of(field), flag_name(field)
        if flag is None or name is None:
            continue
        kind, convert = _kind(hints[field.name], field.name)
        specs.append(_Spec(field, flag, name, kind, convert, getattr(defaults, field.name)))
    return specs


def _kind(hint: Any, name: str) -> tuple[str, Callable[[str], Any]]:
    """(bool, list or value; the converter of one value's text) for a field's type."""
    if hint is bool:
        return "bool", str
    origin = typing.get_origin(hint)
    if origin is tuple:
        return "list", typing.get_args(hint)[0]
    if origin in (typing.Union, types.UnionType):  # X | None: a value of X
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    if hint in (int, float, str):
        return "value", hint
    raise TypeError(f"no flag for the field {name} of type {hint!r}")


def env_name(prefix: str, flag: str) -> str:
    """``ENZH_SERVE_`` + ``--max-body-bytes`` -> ``ENZH_SERVE_MAX_BODY_BYTES``."""
    return prefix + flag.lstrip("-").replace("-", "_").upper()


def add_option_flags(parser: argparse.ArgumentParser, cls: type, *, env_prefix: str) -> None:
    """One flag per field of ``cls`` that has one, under its group's heading, with its help and default."""
    groups: dict[str | None, Any] = {None: parser}
    for spec in _specs(cls):
        group = groups.get(spec.flag.group)
        if group is None:
            group = groups[spec.flag.group] = parser.add_argument_group(spec.flag.group)
        kwargs: dict[str, Any] = {"dest": spec.field.name, "default": argparse.SUPPRESS, "help": _help(spec)}
        if spec.kind == "bool":
            kwargs["action"] = "store_false" if spec.default else "store_true"
        else:
            kwargs["type"] = spec.convert
            kwargs["metavar"] = spec.flag.metavar or _metavar(spec)
            if spec.kind == "list":
                kwargs["action"] = "append"
        group.add_argument(spec.name, **kwargs)
    example = next((s.name for s in _specs(cls) if s.kind == "value"), "--flag")
    parser.epilog = (
        f"Every flag can be given as an environment variable instead: {env_prefix} and the flag's name in capitals "
        f"({example}: {env_name(env_prefix, example)}); a switch is 1 or 0, a repeated flag's values are separated "
        f"by {os.pathsep!r}. A flag on the command line wins."
    )


def _help(spec: _Spec) -> str:
    text = spec.flag.help
    if spec.kind == "bool":
        return text
    shown = spec.flag.default_text
    if shown is None:
        shown = "none" if spec.default in (None, "", ()) else str(spec.default)
    return f"{text}; default: {shown}" if shown else text


def _metavar(spec: _Spec) -> str:
    name = spec.field.name
    if spec.convert is int:
        return "N"
    if spec.convert is float:
        return "SECONDS" if name.endswith("_s") else "MS" if name.endswith("_ms") else "X"
    return "TEXT"


def options_from_args(
    args: argparse.Namespace, cls: type, *, env_prefix: str, environ: Mapping[str, str] | None = None
) -> Any:
    """``cls`` with every field whose flag was given, or whose environment variable is set (see the module)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for spec in _specs(cls):
        name = spec.field.name
        if hasattr(args, name):
            value = getattr(args, name)
            values[name] = tuple(value) if spec.kind == "list" else value
            continue
        variable = env_name(env_prefix, spec.name)
        if variable in environ:
            values[name] = _from_env(spec, variable, environ[variable])
    return cls(**values)


def _from_env(spec: _Spec, variable: str, text: str) -> Any:
    if spec.kind == "bool":
        if text.strip().lower() not in TRUE + FALSE:
            raise OptionsError(f"{variable} must be 1 or 0 (like {spec.name}), got {text!r}")
        given = text.strip().lower() in TRUE
        return (not spec.default) if given else spec.default
    try:
        if spec.kind == "list":
            return tuple(spec.convert(part) for part in text.split(os.pathsep) if part)
        return spec.convert(text)
    except ValueError:
        kind = {int: "an integer", float: "a number"}.get(spec.convert, "a value")  # type: ignore[call-overload]
        raise OptionsError(f"{variable} must be {kind} (like {spec.name}), got {text!r}") from None
