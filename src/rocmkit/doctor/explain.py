"""Match a pasted log against known ROCm/CUDA failure signatures (data in signatures.toml).

A signature reads the evidence, not just the first words: a line pattern, plus conditions on the
rest of the log (`when` / `unless` regexes) and on the facts the log states (`when_fact` /
`unless_fact`: the gfx target, whether it is an iGPU, WSL ...). Signatures of one `family` are
variants in order, most specific first: on a line, only the first variant whose conditions hold
fires. Causes and fixes are templates over the facts ({gfx}, {override}, {sm}, {device} ...);
when a fact a fix needs is not in the log, the `missing` text says what to run to find out.
A fix that presumes a fact about the machine (`presumes`: an NVIDIA GPU, an AMD GPU, a GPU that
is not a Mac's) is stated only when the log establishes it; otherwise the answer abstains naming
it as a candidate and the command that decides, and a log that rules it out gets no such fix.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from rocmkit.doctor.evidence import LogFacts, log_facts, precondition, scan_log

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
    # From the catalogue (catalogue/*.toml); signatures.toml rows leave them empty.
    confidence: str = ""  # "certain" / "likely" / "candidates"; empty: derived (see _confidence)
    candidates: tuple[str, ...] = ()  # the causes an abstention names
    ask: str = ""  # the command that prints the fact that decides between the candidates
    source: str = ""  # where the emitter defines the message (header/source and version, or URL)
    emitter: str = ""
    code: str = ""  # the enum name (value) of an enumerated code
    consequence: bool = False  # a follow-on error: never the first failure when a cause is found
    abstain: bool = False  # says what the message means, states no fix
    # Facts about the machine the fix takes for granted (signatures.toml's [precondition.*]: an
    # NVIDIA GPU, an AMD GPU, a GPU that is not a Mac's). Not established by the log: the answer
    # abstains naming the fix as one candidate and the command that decides; ruled out: the fix
    # is not given (another variant of the family, or the precondition's own answer, is).
    presumes: tuple[str, ...] = ()


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
    # Added in explain schema 3 (all optional for readers of version 2):
    confidence: str = "likely"  # "certain" | "likely" | "candidates" | "unknown"
    abstain: bool = False  # no fix stated: `candidates` and `ask` say what would decide
    candidates: tuple[str, ...] = ()
    ask: str = ""  # command that prints the missing deciding fact
    deciding: dict[str, str] = field(default_factory=dict)  # the facts this answer used
    first_failure: bool = False  # the causal line of the log (others are its consequences)
    code: str = ""
    emitter: str = ""
    source: str = ""


@functools.cache
def _data() -> dict[str, Any]:
    raw = resources.files("rocmkit.doctor").joinpath("signatures.toml").read_text(encoding="utf-8")
    return tomllib.loads(raw)


def _regex(text: str | None) -> re.Pattern[str] | None:
    return re.compile(text, re.IGNORECASE) if text else None


def _signature(row: dict[str, Any]) -> Signature:
    assert row.get("level", "error") in LEVELS, row["id"]
    return Signature(
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
        confidence=row.get("confidence", ""),
        candidates=tuple(row.get("candidates", ())),
        ask=row.get("ask", ""),
        source=row.get("source", ""),
        emitter=row.get("emitter", ""),
        code=row.get("code", ""),
        consequence=bool(row.get("consequence", False)),
        abstain=bool(row.get("abstain", False)),
        presumes=tuple(row.get("presumes", ())),
    )


@functools.cache
def _active() -> tuple[Signature, ...]:
    """The signatures matched one by one: the catalogue's curated entries (catalogue/*.toml,
    built from the emitters), then signatures.toml. Variants of a family are in order, most
    specific first."""
    from rocmkit.doctor.catalogue import entries

    curated = [r for r in entries() if r.get("fix")]
    return tuple(_signature(row) for row in [*curated, *_data()["signature"]])


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """Every known failure signature: `_active()` and then the catalogue's enumerated codes that
    only say what a code means (explain() finds those through one index, see `_plain_index`)."""
    from rocmkit.doctor.catalogue import entries

    return _active() + tuple(_signature(r) for r in entries() if not r.get("fix"))


@functools.cache
def _plain_index() -> tuple[re.Pattern[str], dict[str, dict[str, Any]], list[re.Pattern[str]]]:
    """The enumerated codes (hundreds) are not matched one regex at a time: one pattern finds
    any enum name, one per emitter finds any of its message texts after its prefix, and a dict
    maps the hit to its entry. Built on first use, so a log without such a line pays little."""
    from rocmkit.doctor.catalogue import CONTEXT, LONG_MESSAGE, entries

    by_key: dict[str, dict[str, Any]] = {}
    texts: dict[str, list[str]] = {}
    for row in entries():
        if row.get("fix"):
            continue
        name = row["id"]
        by_key[name] = row
        message = row.get("text", "")
        if message:
            by_key.setdefault(_norm(message), row)  # the first emitter's, CUDA's before HIP's
            by_key.setdefault(row["emitter"] + ":" + _norm(message), row)
            texts.setdefault(row["emitter"] if len(message) < LONG_MESSAGE else "", []).append(
                message
            )
    names = re.compile(
        r"(?<![A-Za-z0-9_])(cudaError[A-Za-z0-9]+|CUDA_ERROR_[A-Z0-9_]+|hipError[A-Za-z0-9]+"
        r"|HSA_STATUS_[A-Z_]+|NVML_ERROR_[A-Z_]+|nccl[A-Z][A-Za-z]+|CUBLAS_STATUS_[A-Z_]+"
        r"|CUDNN_STATUS_[A-Z0-9_]+)(?![A-Za-z0-9_])"
    )
    by_text = []
    for emitter, messages in texts.items():
        alternatives = "|".join(
            r"\s+".join(map(re.escape, m.split())) for m in sorted(messages, key=len, reverse=True)
        )
        prefix = CONTEXT.get(emitter, "") if emitter else ""
        by_text.append(re.compile(prefix + "(?P<text>" + alternatives + ")", re.IGNORECASE))
    return names, by_key, by_text


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


@functools.cache
def _plain_signature(key: str) -> Signature:
    return _signature(_plain_index()[1][key])


def _plain_matches(line: str) -> list[Signature]:
    """The enumerated codes a line names (by enum name or by the emitter's own text)."""
    names, by_key, by_text = _plain_index()
    hits = [m.group(1) for m in names.finditer(line) if m.group(1) in by_key]
    hip = _HIP_LINE.search(line) is not None
    for rx in by_text:
        if m := rx.search(line):
            text = _norm(m.group("text"))
            row = by_key.get("hip:" + text) if hip else None
            hits.append((row or by_key[text])["id"])
    return [_plain_signature(h) for h in dict.fromkeys(hits)]


def preconditions() -> dict[str, dict[str, Any]]:
    """The preconditions fixes may presume (signatures.toml `[precondition.NAME]`): the facts that
    establish or rule out each, the command that decides, and the texts of the two outcomes."""
    return dict(_data().get("precondition", {}))


def fact_tables() -> dict[str, dict[str, str]]:
    """The data tables facts are derived with: "hsa_override" (gfx target -> the
    HSA_OVERRIDE_GFX_VERSION of a supported target of its family), "cuda_wheel" (sm -> wheels)."""
    return {
        name: dict(_data().get(name, {}))
        for name in ("hsa_override", "cuda_wheel", "tensile_targets")
    }


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Cheap gate before the enumerated-code index: an enum-like name or an emitter's name.
_MAYBE_CODE = re.compile(r"cuda|hip|hsa|nvml|nccl|rccl|cublas|cudnn|rocm", re.IGNORECASE)
_HIP_LINE = re.compile(r"\bHIP\b|\bhip\w*|ROCm", re.IGNORECASE)  # the text is HIP's, not CUDA's
_QUOTE = re.compile(r"^\s*(>\s?)+")  # "> " quoting of a pasted reply


def explain(text: str, platform: Platform | None = None) -> list[Explanation]:
    """Signatures found in `text`, in order of first appearance.

    `platform`: when the log came from this machine, facts the log lacks (the gfx target) are
    taken from `detect()`'s devices and shown as line 0."""
    lines = [_QUOTE.sub("", _ANSI.sub("", raw)) for raw in text.splitlines()]
    found: dict[str, Explanation] = {}
    scan = scan_log(lines)
    facts_at = functools.cache(lambda i: log_facts(lines, i, fact_tables(), platform, scan))
    for index, line in enumerate(lines):
        fired: set[str] = set()
        ruled: dict[str, tuple[Signature, str, str, list[int]]] = {}
        wrapped = _joined(lines, index)
        for sig in _active():
            if sig.family in fired:
                continue
            if not sig.pattern.search(line) and not _across(sig.pattern, wrapped, len(line)):
                continue
            evidence = _conditions(sig, lines, facts_at(index))
            if evidence is None:
                continue
            states = _presumed(sig, evidence[0])
            if (no := next((s for s in states if s[1] == "no"), None)) is not None:
                ruled.setdefault(sig.family, (sig, no[0], no[2], evidence[1]))
                continue  # the fix cannot apply here; a later variant may
            fired.add(sig.family)
            if sig.id in found:
                previous = found[sig.id]
                found[sig.id] = Explanation(**{**vars(previous), "count": previous.count + 1})
                continue
            unknown = [name for name, state, _ in states if state == "unknown"]
            found[sig.id] = _explanation(sig, lines, index, *evidence, unknown=unknown)
        for family, (sig, name, fact, ev) in ruled.items():
            if family in fired:
                continue
            fired.add(family)
            key = f"{sig.id}:no-{name}"
            if key not in found:
                found[key] = _ruled_out(sig, key, name, fact, lines, index, facts_at(index), ev)
        if fired or not _MAYBE_CODE.search(line):
            continue  # a code's bare meaning only where nothing more specific fired
        for sig in _plain_matches(line):
            if sig.id in found:
                previous = found[sig.id]
                found[sig.id] = Explanation(**{**vars(previous), "count": previous.count + 1})
            else:
                found[sig.id] = _explanation(sig, lines, index, facts_at(index), [])
    return _mark_first_failure(sorted(found.values(), key=lambda e: e.line_number))


def _joined(lines: list[str], index: int) -> str:
    """The line and the next one, for a message a terminal or a paste wrapped in two."""
    if index + 1 >= len(lines) or len(lines[index]) < 40 or not lines[index + 1].strip():
        return ""
    return lines[index] + " " + lines[index + 1].strip()


def _across(pattern: re.Pattern[str], wrapped: str, cut: int) -> bool:
    """True when `pattern` matches `wrapped` across the join (not within the next line alone,
    which is matched on its own turn)."""
    if not wrapped:
        return False
    match = pattern.search(wrapped)
    return match is not None and match.start() < cut < match.end()


def _mark_first_failure(matches: list[Explanation]) -> list[Explanation]:
    """Mark the causal explanation: the earliest error that states a cause (not a harmless line,
    not a bare code meaning, not a follow-on error such as NCCL's 'unhandled system error' after
    the WARN that caused it); a consequence only when nothing else explains the log."""
    errors = [m for m in matches if m.level == "error" and not (m.abstain and not m.candidates)]
    causes = [m for m in errors if not _is_consequence(m)]
    if not errors:
        return matches
    pick = (causes or errors)[0]
    return [Explanation(**{**vars(m), "first_failure": True}) if m is pick else m for m in matches]


@functools.cache
def _consequences() -> frozenset[str]:
    return frozenset(s.id for s in _active() if s.consequence)


def _is_consequence(m: Explanation) -> bool:
    return m.id in _consequences()


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


def _presumed(sig: Signature, facts: LogFacts) -> list[tuple[str, str, str]]:
    """(precondition, "yes"/"no"/"unknown", deciding fact) for each precondition `sig` presumes."""
    defs = preconditions()
    return [(name, *precondition(defs[name], facts)) for name in sig.presumes]


def _ruled_out(
    sig: Signature,
    key: str,
    name: str,
    fact: str,
    lines: list[str],
    index: int,
    facts: LogFacts,
    evidence: list[int],
) -> Explanation:
    """The answer when the log rules out a precondition of the family's fix: what the log shows
    instead, and what to do on such a machine (the precondition's own texts)."""
    spec = preconditions()[name]
    at = facts.lines.get(fact, 0)
    shown = {(i + 1, lines[i].strip()[:300]) for i in evidence if i != index}
    if at:
        shown.add((at, _line_text(lines, at)))
    return Explanation(
        id=key,
        family=sig.family,
        level=sig.level,
        cause=_fill(spec["ruled_out_cause"], {"fact": spec["facts"].get(fact, fact)}),
        fix=spec["ruled_out_fix"],
        line_number=index + 1,
        line=lines[index].strip()[:300],
        evidence=tuple(sorted(e for e in shown if e[0] != index + 1)),
        facts=dict(facts.values),
        confidence="likely",
        deciding={fact: facts.values[fact]},
        code=sig.code,
        emitter=sig.emitter,
        source=sig.source,
    )


def _explanation(
    sig: Signature,
    lines: list[str],
    index: int,
    facts: LogFacts,
    evidence: list[int],
    unknown: list[str] | None = None,
) -> Explanation:
    if unknown and not sig.abstain:
        return _undecided(sig, lines, index, facts, evidence, unknown)
    values = facts.values
    decided = all(facts.has(n) for n in sig.needs)
    fix = sig.fix if decided else (sig.missing or sig.fix)
    used = {n for n in values if "{" + n + "}" in sig.cause + fix} | set(sig.when_fact)
    used |= {n for n in sig.needs if n in values}
    abstain = sig.abstain or (not decided and bool(sig.missing) and bool(sig.candidates))
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
        confidence=_confidence(sig, decided, abstain),
        abstain=abstain,
        candidates=sig.candidates,
        ask=sig.ask,
        deciding={n: values[n] for n in sorted(used) if n in values},
        code=sig.code,
        emitter=sig.emitter,
        source=sig.source,
    )


def _undecided(
    sig: Signature,
    lines: list[str],
    index: int,
    facts: LogFacts,
    evidence: list[int],
    unknown: list[str],
) -> Explanation:
    """The answer when the log does not establish a precondition of the fix: it abstains, naming
    the fix (for the machine it presumes) and the other case as candidates, and the command that
    decides. The fix itself is not stated as the answer."""
    spec = preconditions()[unknown[0]]
    known = _explanation(sig, lines, index, facts, evidence)
    asks = " and ".join(f"`{preconditions()[n]['ask']}`" for n in unknown)
    return Explanation(
        **{
            **vars(known),
            "cause": spec["unknown_cause"],
            "fix": f"Run {asks}: {spec['decide']}",
            "confidence": "candidates",
            "abstain": True,
            "candidates": (
                f"{spec['present']}: {known.cause} Fix: {known.fix}",
                spec["absent"],
            ),
            "ask": "; ".join(preconditions()[n]["ask"] for n in unknown),
        }
    )


def _confidence(sig: Signature, decided: bool, abstain: bool) -> str:
    """How sure the answer is, from the evidence it used: `certain` when the message and the
    deciding facts it names settle it, `candidates` when it abstains naming causes, `unknown`
    when it only says what a code means, else the entry's own `confidence` or `likely`."""
    if abstain:
        return "candidates" if sig.candidates else "unknown"
    if not decided:
        return "likely" if sig.confidence == "certain" else (sig.confidence or "likely")
    if sig.confidence:
        return sig.confidence
    return "certain" if (sig.when_fact or sig.needs) else "likely"


def _line_text(lines: list[str], number: int) -> str:
    return "(this machine, from detect())" if number == 0 else lines[number - 1].strip()[:300]


def _fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)
