"""The held-out field corpus (tests/fixtures/explain_field) is well formed and its split is the
recorded rule's. No scores are asserted here: benchmarks/doctor_explain_score.py measures them."""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIELD = FIXTURES / "explain_field"
REQUIRED = {
    "id": str,
    "family": str,
    "source": str,
    "thread": str,
    "resolution": str,
    "resolved": bool,
    "cause": str,
    "fix": str,
    "fix_any": list,
    "wrong_any": list,
    "deciding_facts": list,
    "abstain_ok": bool,
    "text": str,
}
OPTIONAL = {"fix_in_log": bool, "wrong_in_log": bool}
URL = re.compile(r"https://github\.com/([^/]+)/([^/]+)/(?:issues|pull|discussions)/(\d+)$")


def _load() -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    logs = []
    for path in sorted(FIELD.glob("*.toml")):
        if path.name == "split.toml":
            continue
        for log in tomllib.loads(path.read_text(encoding="utf-8"))["log"]:
            logs.append((path.stem, log))
    return logs, tomllib.loads((FIELD / "split.toml").read_text(encoding="utf-8"))


LOGS, SPLIT = _load()
THREADS = SPLIT["threads"]


def _entry_problems(stem: str, log: dict[str, Any]) -> list[str]:
    """What is wrong with one entry (empty: nothing)."""
    bad = [
        f"{key}: not {kind.__name__}"
        for key, kind in REQUIRED.items()
        if not isinstance(log.get(key), kind)
    ]
    if bad:
        return bad
    bad += [f"unknown key {k}" for k in set(log) - set(REQUIRED) - set(OPTIONAL)]
    if log["family"] != stem or not log["id"].startswith(f"{stem}--"):
        bad.append("family/id does not match the file")
    match = URL.match(log["source"])
    if not match or log["thread"] != f"{match[1]}/{match[2]}#{match[3]}":
        bad.append("source and thread disagree")
    if not log["fix_any"] or not log["deciding_facts"]:
        bad.append("empty fix_any or deciding_facts")
    if not 1 <= len(log["text"].strip("\n").splitlines()) <= 40:
        bad.append("text is not 1-40 lines")
    if not (log["resolution"].strip() and log["cause"].strip() and log["fix"].strip()):
        bad.append("empty resolution/cause/fix")
    for pattern in log["fix_any"] + log["wrong_any"]:
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error as e:
            bad.append(f"{pattern!r}: {e}")
            continue
        if regex.search("") or regex.search("see the log"):
            bad.append(f"{pattern!r} matches any answer")
    # An answer that only echoes the log is right only where the emitter's own message carries the
    # fix; such entries say so, and so do entries whose log suggests a known wrong fix.
    echoed = all(re.search(p, log["text"], re.IGNORECASE) for p in log["fix_any"])
    if echoed != log.get("fix_in_log", False):
        bad.append(f"fix_in_log should be {echoed}")
    misled = any(re.search(p, log["text"], re.IGNORECASE) for p in log["wrong_any"])
    if misled != log.get("wrong_in_log", False):
        bad.append(f"wrong_in_log should be {misled}")
    return bad


def test_entries_are_well_formed() -> None:
    problems = {log.get("id", stem): p for stem, log in LOGS if (p := _entry_problems(stem, log))}
    assert problems == {}


def test_ids_unique_and_corpus_large_enough() -> None:
    ids = Counter(log["id"] for _, log in LOGS)
    assert [i for i, n in ids.items() if n > 1] == []
    assert len(LOGS) >= 300
    assert len({stem for stem, _ in LOGS}) >= 60


def test_every_thread_is_on_exactly_one_side() -> None:
    threads = {log["thread"] for _, log in LOGS}
    assert threads == set(THREADS), threads ^ set(THREADS)
    assert set(THREADS.values()) <= {"dev", "test", "test2", "test3", "test4"}
    parts = Counter(THREADS[log["thread"]] for _, log in LOGS)
    assert parts["test"] + parts["test2"] >= 0.30 * len(LOGS), parts
    # test2: the fresh held-out part collected after `test` had been scored and its misses named.
    assert parts["test2"] >= 60, parts
    # test3: fresh again, collected after test2 had been scored and its misses named.
    assert parts["test3"] >= 60, parts
    # test4: fresh again, collected after test3 had been scored and its misses named.
    assert parts["test4"] >= 60, parts


def test_split_is_the_recorded_rule() -> None:
    """Recompute the split from the rule in split.toml: nobody moved a thread by hand. The later
    `test2`, `test3` and `test4` parts are held out whole (collected after the rule's split was
    scored), so they are outside it."""
    fraction = SPLIT["rule"]["test_fraction"]
    by_family: dict[str, set[str]] = defaultdict(set)
    for stem, log in LOGS:
        if THREADS[log["thread"]] not in ("test2", "test3", "test4"):
            by_family[stem].add(log["thread"])

    def digest(thread: str) -> str:
        return hashlib.sha256(thread.encode()).hexdigest()

    for threads in by_family.values():
        ordered = sorted(threads, key=digest)
        n = len(ordered)
        if n == 1:
            k = 1 if int(digest(ordered[0])[:8], 16) / 2**32 < fraction else 0
        else:
            k = min(n - 1, max(1, round(fraction * n)))
        for i, thread in enumerate(ordered):
            assert THREADS[thread] == ("test" if i < k else "dev"), thread
    both = sum(len({THREADS[t] for t in ts}) == 2 for ts in by_family.values())
    assert both >= 0.8 * len(by_family)


def test_held_out_from_the_tuned_corpus() -> None:
    """No thread of the corpus the explainer was tuned on reappears here."""
    tuned = set()
    for path in (FIXTURES / "explain_corpus").glob("*.toml"):
        for log in tomllib.loads(path.read_text(encoding="utf-8"))["log"]:
            tuned.add(log["source"].rstrip("/"))
    assert tuned.isdisjoint(log["source"] for _, log in LOGS)
