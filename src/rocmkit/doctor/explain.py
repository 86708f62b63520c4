"""Match a pasted log against known ROCm/CUDA failure signatures (data in signatures.toml).

A signature reads the evidence, not just the first words: a line pattern, plus conditions on the
rest of the log (`when` / `unless` regexes) and on the facts the log states (`when_fact` /
`unless_fact`: the gfx target, whether it is an iGPU, WSL ...). Signatures of one `family` are
variants in order, most specific first: on a line, only the first variant whose conditions hold
fires. Causes and fixes are templates over the facts ({gfx}, {override}, {sm}, {device} ...);
when a fact a fix needs is not in the log, the `missing` text says what to run to find out.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from rocmkit.doctor.evidence import LogFacts, log_facts, scan_log

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from rocmkit.platform.backend import Platform

LEVELS = ("error", "warning", "harmless")


@dataclass(frozen=True, kw_only=True)
class Signature:
    id: str
    family: str
    pattern: re.Pattern[str]
    cause: str
    fix: str
    level: str = "error"  # "warning": worth a look; "harmless": explained so nobody chases it
    when: re.Pattern[str] | None = None  # must match some line of the log
    unless: re.Pattern[str] | None = None  # must match no line of the log
    when_fact: tuple[str, ...] = ()  # facts that must be known (see evidence.py)
    unless_fact: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()  # facts the fix needs; without them the fix is `missing`
    missing: str = ""


@dataclass(frozen=True, kw_only=True)
class Explanation:
    """One signature found in the log, where it first appeared, how often, and the lines
    (matched line first, then the evidence lines) it read."""

    id: str
    family: str
    level: str
    cause: str
    fix: str
    line_number: int  # 1-based, first occurrence
    line: str
    count: int = 1
    evidence: tuple[tuple[int, str], ...] = ()  # (line number, line); 0 = this machine
    facts: dict[str, str] = field(default_factory=dict)


@functools.cache
def _data() -> dict[str, Any]:
    raw = resources.files("rocmkit.doctor").joinpath("signatures.toml").read_text(encoding="utf-8")
    return tomllib.loads(raw)


def _regex(text: str | None) -> re.Pattern[str] | None:
    return re.compile(text, re.IGNORECASE) if text else None


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """Every known failure signature, in file order (variants of a family most specific first)."""
    rows = _data()["signature"]
    out = []
    for row in rows:
        assert row.get("level", "error") in LEVELS, row["id"]
        out.append(
            Signature(
                id=row["id"],
                family=row.get("family", row["id"]),
                pattern=re.compile(row["pattern"], re.IGNORECASE),
                cause=row["cause"],
                fix=row["fix"],
                level=row.get("level", "error"),
                when=_regex(row.get("when")),
                unless=_regex(row.get("unless")),
                when_fact=tuple(row.get("when_fact", ())),
                unless_fact=tuple(row.get("unless_fact", ())),
                needs=tuple(row.get("needs", ())),
                missing=row.get("missing", ""),
            )
        )
    return tuple(out)


def fact_tables() -> dict[str, dict[str, str]]:
    """The data tables facts are derived with: "hsa_override" (gfx target -> the
    HSA_OVERRIDE_GFX_VERSION of a supported target of its family), "cuda_wheel" (sm -> wheels)."""
    return {name: dict(_data().get(name, {})) for name in ("hsa_override", "cuda_wheel")}


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def explain(text: str, platform: Platform | None = None) -> list[Explanation]:
    """Signatures found in `text`, in order of first appearance.

    `platform`: when the log came from this machine, facts the log lacks (the gfx target) are
    taken from `detect()`'s devices and shown as line 0."""
    lines = [_ANSI.sub("", raw) for raw in text.splitlines()]
    found: dict[str, Explanation] = {}
    scan = scan_log(lines)
    facts_at = functools.cache(lambda i: log_facts(lines, i, fact_tables(), platform, scan))
    for index, line in enumerate(lines):
        fired: set[str] = set()
        for sig in signatures():
            if sig.family in fired:
                continue
            match = sig.pattern.search(line)
            if not match:
                continue
            evidence = _conditions(sig, lines, facts_at(index))
            if evidence is None:
                continue
            fired.add(sig.family)
            if sig.id in found:
                previous = found[sig.id]
                found[sig.id] = Explanation(**{**vars(previous), "count": previous.count + 1})
                continue
            found[sig.id] = _explanation(sig, lines, index, *evidence)
    return sorted(found.values(), key=lambda e: e.line_number)


def _conditions(
    sig: Signature, lines: list[str], facts: LogFacts
) -> tuple[LogFacts, list[int]] | None:
    """(facts, evidence line indexes) when every condition of `sig` holds, else None."""
    evidence: list[int] = []
    if sig.when is not None:
        hit = next((i for i, line in enumerate(lines) if sig.when.search(line)), None)
        if hit is None:
            return None
        evidence.append(hit)
    if sig.unless is not None and any(sig.unless.search(line) for line in lines):
        return None
    if not all(facts.has(f) for f in sig.when_fact) or any(facts.has(f) for f in sig.unless_fact):
        return None
    return facts, evidence


def _explanation(
    sig: Signature, lines: list[str], index: int, facts: LogFacts, evidence: list[int]
) -> Explanation:
    values = facts.values
    fix = sig.fix if all(facts.has(n) for n in sig.needs) else (sig.missing or sig.fix)
    used = {n for n in values if "{" + n + "}" in sig.cause + fix} | set(sig.when_fact)
    shown = sorted(
        {(i + 1, lines[i].strip()[:300]) for i in evidence if i != index}
        | {(facts.lines[n], _line_text(lines, facts.lines[n])) for n in used if n in facts.lines}
    )
    return Explanation(
        id=sig.id,
        family=sig.family,
        level=sig.level,
        cause=_fill(sig.cause, values),
        fix=_fill(fix, values),
        line_number=index + 1,
        line=lines[index].strip()[:300],
        evidence=tuple(e for e in shown if e[0] != index + 1),
        facts=dict(values),
    )


def _line_text(lines: list[str], number: int) -> str:
    return "(this machine, from detect())" if number == 0 else lines[number - 1].strip()[:300]


def _fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)
