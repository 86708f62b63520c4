"""Match a pasted log against known ROCm/CUDA failure signatures (data in signatures.toml)."""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True, kw_only=True)
class Signature:
    id: str
    pattern: re.Pattern[str]
    cause: str
    fix: str


@dataclass(frozen=True, kw_only=True)
class Explanation:
    """One signature found in the log, where it first appeared and how often."""

    id: str
    cause: str
    fix: str
    line_number: int  # 1-based, first occurrence
    line: str
    count: int = 1


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """Every known failure signature."""
    raw = resources.files("rocmkit.doctor").joinpath("signatures.toml").read_text(encoding="utf-8")
    return tuple(
        Signature(
            id=row["id"],
            pattern=re.compile(row["pattern"], re.IGNORECASE),
            cause=row["cause"],
            fix=row["fix"],
        )
        for row in tomllib.loads(raw)["signature"]
    )


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def explain(text: str) -> list[Explanation]:
    """Signatures found in `text`, in order of first appearance."""
    found: dict[str, Explanation] = {}
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = _ANSI.sub("", raw_line)
        for sig in signatures():
            if not sig.pattern.search(line):
                continue
            if sig.id in found:
                previous = found[sig.id]
                found[sig.id] = Explanation(**{**vars(previous), "count": previous.count + 1})
            else:
                found[sig.id] = Explanation(
                    id=sig.id,
                    cause=sig.cause,
                    fix=sig.fix,
                    line_number=number,
                    line=line.strip()[:300],
                )
    return sorted(found.values(), key=lambda e: e.line_number)
