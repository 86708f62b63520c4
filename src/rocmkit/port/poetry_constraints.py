"""Poetry's dependency tables as PEP 508 requirement strings, so the package rules read their
versions as they read pip's (`torch = "^1.7.0"` is `torch>=1.7.0,<2.0.0`: no torch 2.x, so no
ROCm wheel a current ROCm install has, and pip takes PyPI's CUDA build).

From Poetry's own definition ("Dependency specification", python-poetry.org/docs/dependency-
specification): caret `^` allows the changes that keep the left-most non-zero part, tilde `~`
the patch changes of the given minor (or the minor changes of a bare major), `*` wildcards,
bare versions are exact, comparisons and commas are PEP 440's. A constraint Poetry reads in a
way PEP 508 cannot write (`||` alternatives, a list of per-platform tables) or a dependency
from git, a path or a URL gives the name alone: no version is guessed.
"""

from __future__ import annotations

import re
from typing import Any

_VERSION = re.compile(r"^\d+(?:\.\d+)*$")
_EXACT = re.compile(r"^\d+(?:\.\d+)*[\w.+!-]*$")  # a release, a pre/post/dev release too
_COMPARISON = re.compile(r"^(?:===|==|!=|<=|>=|~=|<|>)\s*[\w.*+!-]+$")


def requirement(name: str, spec: Any) -> str:
    """`name` with its constraint as PEP 440 specifiers (and extras), or the name alone when
    the constraint has no PEP 508 spelling."""
    extras = markers = ""
    if isinstance(spec, dict):
        if isinstance(spec.get("extras"), list):
            extras = "[" + ",".join(str(e) for e in spec["extras"]) + "]"
        markers = _markers(spec)
        spec = spec.get("version")
    specifiers = specifier_set(spec) if isinstance(spec, str) else None
    return name + extras + (specifiers or "") + (f"; {markers}" if markers else "")


def _markers(spec: dict[str, Any]) -> str:
    """A table's `markers` and `platform` (sys_platform) as one PEP 508 marker."""
    found = []
    if isinstance(spec.get("markers"), str):
        found.append(f"({spec['markers']})")
    if isinstance(spec.get("platform"), str):
        found.append(f'sys_platform == "{spec["platform"]}"')
    return " and ".join(found)


def specifier_set(constraint: str) -> str | None:
    """A Poetry version constraint as PEP 440 specifiers ("" for any version), or None."""
    constraint = constraint.strip()
    if "|" in constraint:
        return None
    parts = [p.strip() for p in constraint.split(",")] if constraint else []
    out: list[str] = []
    for part in parts:
        translated = _one(part)
        if translated is None:
            return None
        out += translated
    return ",".join(out)


def _one(part: str) -> list[str] | None:
    if part in ("", "*"):
        return []
    if part.startswith("^"):
        return _caret(part[1:].strip())
    if part.startswith("~") and not part.startswith("~="):
        return _tilde(part[1:].strip())
    if part.endswith(".*") and _VERSION.match(part[:-2]):
        return _wildcard(part[:-2])
    if _EXACT.match(part):
        return [f"=={part}"]  # a bare version is exact in Poetry
    if _COMPARISON.match(part):
        return [part.replace(" ", "")]
    return None


def _numbers(version: str) -> list[int] | None:
    return [int(n) for n in version.split(".")] if _VERSION.match(version) else None


def _caret(version: str) -> list[str] | None:
    """The first non-zero part may not change (^0 and ^0.0 keep the parts they give)."""
    numbers = _numbers(version)
    if numbers is None:
        return None
    keep = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1) + 1
    return _below(version, numbers, keep)


def _tilde(version: str) -> list[str] | None:
    """The patch part may change (the minor one too for a bare major)."""
    numbers = _numbers(version)
    return None if numbers is None else _below(version, numbers, min(len(numbers), 2))


def _wildcard(prefix: str) -> list[str] | None:
    numbers = _numbers(prefix)
    return None if numbers is None else _below(prefix, numbers, len(numbers))


def _below(version: str, numbers: list[int], keep: int) -> list[str]:
    """From `version` up to the next release of its first `keep` parts."""
    upper = numbers[:keep]
    upper[-1] += 1
    return [f">={version}", f"<{_dotted(upper)}"]


def _dotted(numbers: list[int]) -> str:
    return ".".join(str(n) for n in numbers)
