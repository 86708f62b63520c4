"""Command-line flags generated from a config dataclass, and the config built back from them.

A command's config is one `@dataclass(kw_only=True)`; each field that is a flag is declared with
`option(default, help, ...)`, so its spelling, help text and default are written once, next to
the field. `add_flags(parser, Config)` adds one argparse flag per field (a `Literal` becomes
`choices`, a `bool` a switch: `--x` when it defaults to off, `--no-x` when on; a tuple a comma
list, or a repeated flag with `repeat=True`). Only the flags the user typed land in the namespace,
so values from presets and TOML files are not overwritten by defaults; `typed_values(Config, args)`
reads them back, coerced and checked by `rocmkit.config.coerce` with the flag's name in the error,
and `from_args(Config, args)` builds the config.

Kept small on purpose: tyro (torchtitan's choice) would change the existing flag spellings and
help layout and add an import to `rocmkit --help`; this module imports only the standard library
and `rocmkit.config`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from rocmkit.config import coerce, from_dict
from rocmkit.errors import UserError

T = TypeVar("T")

# Metadata keys `option` accepts besides `help` (see its docstring).
_CLI_KEYS = ("flag", "short", "metavar", "positional", "repeat", "off", "group", "cli", "nargs")


def option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    default_factory: Any = dataclasses.MISSING,
    **cli: Any,
) -> Any:
    """A config field and its flag. `cli` keys: `flag` (its long spelling, default `--field-name`),
    `short` (`-o`), `metavar`, `positional` (an argument, not a flag), `nargs`, `repeat` (the flag
    may be given several times), `off` (the help of `--no-x` for a field that defaults to True),
    `group` (the help section it is listed in), `cli=False` (a setting with no flag)."""
    unknown = sorted(set(cli) - set(_CLI_KEYS))
    if unknown:
        raise TypeError(f"option() got unknown keys {unknown}; known: {', '.join(_CLI_KEYS)}")
    metadata = {"help": help, **cli}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag_name(f: dataclasses.Field[Any]) -> str:
    """How a field is spelled on the command line: `--max-bytes`, its `flag` metadata, or
    `--no-stream` for a switch that is on by default."""
    if f.metadata.get("positional"):
        return f.name.upper()
    long = str(f.metadata.get("flag") or "--" + f.name.replace("_", "-"))
    return "--no-" + long.removeprefix("--") if f.default is True else long


def cli_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields of `cls` that are flags (every init field but those with `cli=False`)."""
    return [f for f in dataclasses.fields(cls) if f.init and f.metadata.get("cli", True)]


def add_flags(
    parser: argparse.ArgumentParser,
    cls: type,
    *,
    show_defaults: bool = False,
    skip: tuple[str, ...] = (),
) -> None:
    """Add one argument per field of `cls` to `parser` (fields in `skip` left out). With
    `show_defaults`, a help line ends with the default (" (default: 128)")."""
    hints = typing.get_type_hints(cls)
    groups: dict[str, Any] = {}
    for f in cli_fields(cls):
        if f.name in skip:
            continue
        title = f.metadata.get("group")
        target: Any = parser
        if title:
            target = groups.get(title) or groups.setdefault(title, parser.add_argument_group(title))
        _add_one(target, f, hints[f.name], show_defaults=show_defaults)


def _add_one(
    target: Any, f: dataclasses.Field[Any], annotation: Any, *, show_defaults: bool
) -> None:
    meta, default = f.metadata, _default(f)
    text = str(meta.get("help", ""))
    kwargs: dict[str, Any] = {"default": argparse.SUPPRESS}
    if meta.get("metavar"):
        kwargs["metavar"] = meta["metavar"]
    if meta.get("positional"):
        kwargs.setdefault("metavar", f.name.upper())
        nargs = meta.get("nargs") or ("?" if default is not dataclasses.MISSING else None)
        target.add_argument(f.name, nargs=nargs, help=text, **kwargs)
        return
    names = [flag_name(f)] + ([meta["short"]] if meta.get("short") else [])
    names.sort(key=len)  # argparse lists `-o, --output`
    if _is_bool(annotation) and default is True:
        off = meta.get("off") or f"turn off: {text}"
        target.add_argument(
            flag_name(f),
            dest=f.name,
            action="store_false",
            help=off,
            default=argparse.SUPPRESS,
        )
        return
    if _is_bool(annotation):
        target.add_argument(*names, dest=f.name, action="store_true", help=text, **kwargs)
        return
    choices = _choices(annotation)
    if choices:
        kwargs["choices"] = choices
    if meta.get("nargs"):
        kwargs["nargs"] = meta["nargs"]
    action = "append" if meta.get("repeat") else "store"
    if show_defaults and default not in (None, (), [], dataclasses.MISSING):
        text += f" (default: {_shown(default)})"
    target.add_argument(*names, dest=f.name, action=action, help=text, **kwargs)


def typed_values(cls: type, args: argparse.Namespace | Mapping[str, Any]) -> dict[str, Any]:
    """The fields of `cls` the user gave on the command line, coerced to their types; a bad
    value is a UserError that names the flag (`--max-bytes must be an integer (got 'x')`)."""
    hints = typing.get_type_hints(cls)
    given = args if isinstance(args, Mapping) else vars(args)
    values: dict[str, Any] = {}
    for f in cli_fields(cls):
        if f.name not in given or given[f.name] is argparse.SUPPRESS:
            continue
        raw = given[f.name]
        if raw is None and f.metadata.get("positional"):
            continue  # an optional positional left out
        values[f.name] = coerce(raw, hints[f.name], flag_name(f))
    return values


def from_args(cls: type[T], args: argparse.Namespace | Mapping[str, Any], **given: Any) -> T:
    """`cls` from the flags typed (`given` keyword values win); the dataclass's defaults fill the
    rest and its own checks run once, at construction."""
    values = typed_values(cls, args)
    values.update(given)
    return from_dict(cls, values)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _is_bool(annotation: Any) -> bool:
    return annotation is bool


def _choices(annotation: Any) -> list[str] | None:
    """The choices of a `Literal[...]` (also inside `X | None`), as the strings typed."""
    origin = get_origin(annotation)
    if origin is Literal:
        return [str(choice) for choice in get_args(annotation)]
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        if len(options) == 1:
            return _choices(options[0])
    return None


def _shown(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ",".join(_shown(v) for v in value)
    if value is None:
        return "none"
    return "inf" if isinstance(value, float) and math.isinf(value) else str(value)


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, flag: str) -> float:
    """ "60s", "5m", "1h", "1m30s" or plain seconds "90" -> seconds; a UserError naming `flag`
    otherwise (also for 0 or less)."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        seconds = float(text)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)([smh])", text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise UserError(f"{flag} {text!r}: write a duration like 60s, 5m, 1h or 1m30s")
        seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise UserError(f"{flag} {text!r}: the duration must be more than 0")
    return seconds
