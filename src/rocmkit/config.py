"""Typed configs: dataclasses filled from TOML files and dotted overrides (`--train.lr 3e-4`).

Every component's config is a `@dataclass(kw_only=True)`; nested sections are nested dataclasses.
Values coming from the command line are strings and are coerced to the field's annotated type here,
once, so that a typo fails at start with a message that names the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from rocmkit.errors import UserError
from rocmkit.results import jsonable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file; missing, unreadable or malformed files raise UserError."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise UserError(f"config file not found: {file}") from None
    except OSError as exc:
        raise UserError(f"cannot read config file {file}: {exc.strerror}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"config file {file} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"invalid TOML in {file}: {exc}") from None


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """Turn ["train.lr=3e-4", "--model.n_layer", "4"] style tokens into {"train.lr": "3e-4", ...}."""
    result: dict[str, str] = {}
    tokens = list(items)
    index = 0
    while index < len(tokens):
        token = tokens[index].removeprefix("--")
        if "=" in token:
            key, value = token.split("=", 1)
        elif index + 1 < len(tokens):
            key, value = token, tokens[index + 1]
            index += 1
        else:
            raise UserError(f"override --{token} has no value (write --{token} VALUE)")
        if not key or "." not in key:
            raise UserError(f"override '{key}' must be SECTION.KEY, e.g. --train.lr 3e-4")
        result[key] = value
        index += 1
    return result


def flatten_dotted(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"model": {"n_layer": 2}} -> {"model.n_layer": 2}: the inverse of `merge_dotted` (an empty
    table stays a value, so an explicit `options = {}` is kept)."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten_dotted(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def merge_dotted(data: Mapping[str, Any], dotted: Mapping[str, Any]) -> dict[str, Any]:
    """Return a deep copy of `data` with dotted keys ("a.b.c") set to their values."""
    merged = _deep_copy(data)
    for key, value in dotted.items():
        node = merged
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise UserError(f"cannot set '{key}': '{part}' is a value, not a section")
            node = child
        node[parts[-1]] = value
    return merged


def _deep_copy(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, Mapping) else v for k, v in data.items()}


def from_dict(cls: type[T], data: Mapping[str, Any], *, prefix: str = "") -> T:
    """Build dataclass `cls` from a (nested) mapping, coercing and checking every value."""
    if not isinstance(data, Mapping):
        raise UserError(f"'{prefix or cls.__name__}' must be a table of settings")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    _refuse_unknown(data, fields, prefix)
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = coerce(value, hints[name], f"{prefix}{name}")
    missing = [
        n
        for n, f in fields.items()
        if n not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise UserError(f"missing required setting '{prefix}{missing[0]}'")
    return cls(**kwargs)


def _refuse_unknown(data: Mapping[str, Any], fields: Mapping[str, Any], prefix: str) -> None:
    """A UserError naming the first key of `data` that is not a field, with a "did you mean"."""
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f"'{prefix}{unknown[0]}'"
        raise UserError(
            f"unknown setting {where}{_closest(unknown[0], data[unknown[0]], fields, prefix)}; "
            f"known in this section: {', '.join(sorted(fields))}"
        )


def check_settings(cls: type, data: Mapping[str, Any], *, prefix: str = "") -> None:
    """Check the names and types of `data` against dataclass `cls` without building it: the
    settings a user gave before the rest is filled in (bench sizes its suites for the device only
    when it runs). Unknown keys and values of the wrong type raise UserError as `from_dict` does;
    fields left out are not an error."""
    if not isinstance(data, Mapping):
        raise UserError(f"'{prefix.rstrip('.') or cls.__name__}' must be a table of settings")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    _refuse_unknown(data, fields, prefix)
    for name, value in data.items():
        section = _dataclass_of(hints[name])
        if section is not None and isinstance(value, Mapping):
            check_settings(section, value, prefix=f"{prefix}{name}.")
        else:
            coerce(value, hints[name], f"{prefix}{name}")


def _dataclass_of(annotation: Any) -> type | None:
    """The dataclass `annotation` is (`X` or `X | None`), else None."""
    options = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else ()
    for candidate in (annotation, *options):
        if dataclasses.is_dataclass(candidate) and isinstance(candidate, type):
            return candidate
    return None


def _closest(name: str, value: Any, fields: Iterable[str], prefix: str) -> str:
    """ " (did you mean 'train.steps'?)" for an unknown key (a section's first key kept)."""
    close = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.6)
    if not close:
        return ""
    rest = next(iter(flatten_dotted(value)), "") if isinstance(value, Mapping) and value else ""
    return f" (did you mean '{prefix}{close[0]}{'.' + rest if rest else ''}'?)"


def coerce(value: Any, annotation: Any, key: str) -> Any:
    """Coerce a TOML or command-line value to `annotation`; raise UserError naming `key`."""
    origin = get_origin(annotation)
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return from_dict(annotation, value, prefix=f"{key}.")
    if origin in (Union, types.UnionType):
        return _coerce_union(value, get_args(annotation), key)
    if origin is Literal:
        choices = get_args(annotation)
        for choice in choices:
            if value == choice or (isinstance(value, str) and str(choice) == value):
                return choice
        raise UserError(f"{key} must be one of {', '.join(map(str, choices))} (got {value!r})")
    if origin in (list, tuple):
        return _coerce_sequence(value, annotation, key)
    if origin in (dict, Mapping) or annotation is dict:
        if not isinstance(value, Mapping):
            raise UserError(f"{key} must be a table")
        return dict(value)
    if annotation is Any:
        return value
    return _coerce_scalar(value, annotation, key)


def _coerce_union(value: Any, options: tuple[Any, ...], key: str) -> Any:
    if type(None) in options and (
        value is None or (isinstance(value, str) and value.lower() in {"none", "null", ""})
    ):
        return None
    errors = []
    for option in options:
        if option is type(None):
            continue
        try:
            return coerce(value, option, key)
        except UserError as exc:
            errors.append(str(exc))
    raise UserError(errors[0] if errors else f"{key} has an invalid value {value!r}")


def _coerce_sequence(value: Any, annotation: Any, key: str) -> Any:
    if isinstance(value, str):
        value = [item.strip() for item in value.split(",") if item.strip()]
    if not isinstance(value, list | tuple):
        raise UserError(f"{key} must be a list (got {value!r})")
    args = get_args(annotation)
    item_type = args[0] if args else Any
    items = [coerce(item, item_type, f"{key}[{i}]") for i, item in enumerate(value)]
    return tuple(items) if get_origin(annotation) is tuple else items


def _coerce_scalar(value: Any, annotation: Any, key: str) -> Any:
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise UserError(f"{key} must be true or false (got {value!r})")
    if annotation is int:
        if isinstance(value, bool):
            raise UserError(f"{key} must be an integer (got {value!r})")
        if isinstance(value, int):
            return value
        try:
            return int(str(value).replace("_", ""))
        except ValueError:
            raise UserError(f"{key} must be an integer (got {value!r})") from None
    if annotation is float:
        if isinstance(value, bool):
            raise UserError(f"{key} must be a number (got {value!r})")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise UserError(f"{key} must be a number (got {value!r})") from None
    if annotation is str:
        if isinstance(value, str):
            return value
        raise UserError(f"{key} must be a string (got {value!r})")
    if annotation is Path:
        return Path(str(value))
    return value


def to_dict(config: Any) -> dict[str, Any]:
    """A JSON/TOML-friendly dict of a config dataclass (see `rocmkit.results.jsonable`)."""
    result: dict[str, Any] = jsonable(dataclasses.asdict(config))
    return result


def field_help(cls: type) -> dict[str, str]:
    """Map dotted field names to their `help` metadata, recursing into nested sections."""
    hints = typing.get_type_hints(cls)
    result: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        annotation = hints[f.name]
        if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
            for sub, text in field_help(annotation).items():
                result[f"{f.name}.{sub}"] = text
        else:
            result[f.name] = str(f.metadata.get("help", ""))
    return result


def load_config(
    cls: type[T],
    *,
    base: Mapping[str, Any] | None = None,
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> T:
    """base dict <- TOML file <- dotted overrides, then build and validate `cls`."""
    data: dict[str, Any] = _deep_copy(base or {})
    if path is not None:
        data = _deep_merge(data, load_toml(path))
    if overrides:
        data = merge_dotted(data, overrides)
    return from_dict(cls, data)


def _deep_merge(left: Mapping[str, Any], right: Mapping[str, Any]) -> dict[str, Any]:
    merged = _deep_copy(left)
    for key, value in right.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
