"""Blind pooled adjudication (benchmarks/port_adjudication.py): the pool holds every place either
list or port flagged, with nothing that says where it came from; port and both annotators are
scored against the adjudicated lists the same way; and the committed adjudicated lists judge every
pooled place exactly once. No network, no torch."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import port_adjudication
import port_corpus
import port_score

from rocmkit.port import PortFinding


def _h(file: str, line: int, kind: str, severity: str = "error") -> dict[str, Any]:
    return {"file": file, "line": line, "kind": kind, "severity": severity, "why": "w"}


def _n(file: str, line: int) -> dict[str, Any]:
    return {"file": file, "line": line, "why": "fine"}


def _f(path: str, lines: tuple[int, ...], rule: str, severity: str = "error") -> PortFinding:
    return PortFinding(
        path=path, line=lines[0], column=0, rule_id=rule, severity=severity,  # type: ignore[arg-type]
        title="t", evidence="e", fix="f", source="s", lines=lines,
    )  # fmt: skip


def _scan(*findings: PortFinding) -> port_score.Scan:
    return port_score.Scan(findings=findings, num_files=3, num_python=2)


def test_pool_is_both_lists_and_every_line_of_ports_shown_findings_without_their_source() -> None:
    first = {"hazard": [_h("setup.py", 10, "gencode-flags")], "not_hazard": [_n("x.py", 1)]}
    second = {"hazard": [_h("setup.py", 10, "gencode-flags"), _h("a.py", 5, "nvml-call")]}
    found = _scan(
        _f("b.py", (7, 30), "nvml", "warn"),  # both lines go in
        _f("c.py", (2,), "cudnn-means-miopen", "info"),  # info is not shown: not pooled
    )
    pool = port_adjudication.candidates(first, {**second, "not_hazard": []}, found)
    assert pool == [
        {"file": "a.py", "line": 5},
        {"file": "b.py", "line": 7},
        {"file": "b.py", "line": 30},
        {"file": "setup.py", "line": 10},  # listed by both: once
    ]
    assert all(set(place) == {"file", "line"} for place in pool)  # no kind, no reason, no source


def test_an_annotators_list_is_scored_strict_and_loose_against_the_adjudicated_one() -> None:
    listed = [
        _h("setup.py", 11, "gencode-flags"),  # right place, right kind
        _h("b.py", 40, "nvidia-smi-call"),  # right place, other kind
        _h("e.py", 90, "cuda-only-package"),  # the adjudicator said no
    ]
    gold = [
        _h("setup.py", 10, "gencode-flags"),
        _h("b.py", 41, "nvml-call"),
        _h("z.py", 3, "nccl-env"),
    ]
    c = port_adjudication.list_against(listed, gold)
    assert (c["listed_true_strict"], c["listed_true_loose"]) == (1, 2)
    assert (c["gold_found_strict"], c["gold_found_loose"]) == (1, 2)
    assert (c["num_listed"], c["num_gold"]) == (3, 3)


def test_recall_over_groups_counts_one_patterns_lines_in_one_file_once() -> None:
    gold = [_h("env.yml", n, "torch-cuda-pin") for n in (10, 20, 30, 40)] + [
        _h("a.py", 5, "nvml-call")
    ]
    listed = [_h("env.yml", 11, "torch-cuda-pin")]  # one entry for the dump: its group is found
    c = port_adjudication.list_against(listed, gold)
    assert (c["gold_found_strict"], c["num_gold"]) == (1, 5)
    assert (c["gold_groups_found_strict"], c["num_gold_groups"]) == (1, 2)


def test_port_findings_nobody_judged_are_set_apart_not_counted_false() -> None:
    project = next(p for p in port_corpus.load_manifest() if p.name == "svox")
    gold = {
        "hazard": [_h("common.cuh", 152, "cuda-extension-no-hip")],
        "not_hazard": [_n("setup.py", 16)],
    }
    found = _scan(
        _f("common.cuh", (152,), "hip-atomic-redefinition"),  # true
        _f("setup.py", (16,), "cuda-extension"),  # judged: not a hazard
        _f("new.py", (8,), "nvml", "warn"),  # a later commit's finding: nobody judged it
    )
    scored = port_adjudication.port_against(project, found, gold)
    assert (scored["num_true_positive"], scored["num_findings"]) == (1, 2)
    assert (scored["num_hazards_found"], scored["num_hazards"]) == (1, 1)
    assert scored["unjudged"] == ["new.py:8 nvml (warn)"]
    assert (scored["hazard_groups_found"], scored["num_hazard_groups"]) == (1, 1)


POOLS = sorted(port_adjudication.POOLS.glob("*.toml"))
PROJECTS = {p.name: p for p in port_corpus.load_manifest()}


@pytest.mark.parametrize("pool", POOLS, ids=[p.stem for p in POOLS])
def test_every_pooled_place_is_judged_exactly_once_with_a_known_kind(pool: Path) -> None:
    document = tomllib.loads(pool.read_text())
    part = document["part"]
    names = [name for name, p in PROJECTS.items() if p.part == part]
    lists = [port_adjudication.ADJUDICATED / f"{n}.toml" for n in names]
    if not any(path.is_file() for path in lists):
        pytest.skip(f"the pool of {part} is not adjudicated yet")
    assert all(path.is_file() for path in lists), f"{part}: every project needs an adjudicated list"
    judged = {n: port_corpus.load_hazards(n, port_adjudication.ADJUDICATED) for n in names}
    for place in document["place"]:
        entries = judged[place["project"]]
        at = [
            e
            for e in entries["hazard"] + entries["not_hazard"]
            if (e["file"], e["line"]) == (place["file"], place["line"])
        ]
        assert len(at) == 1, f"{place}: judged {len(at)} times"
    pooled = {(p["project"], p["file"], p["line"]) for p in document["place"]}
    for name, entries in judged.items():
        for hazard in entries["hazard"]:
            assert (
                hazard["kind"] in port_corpus.KINDS and hazard["severity"] in port_corpus.SEVERITIES
            )
            assert hazard["why"].strip()
        for entry in entries["hazard"] + entries["not_hazard"]:
            assert (name, entry["file"], entry["line"]) in pooled, (
                f"{name}: {entry} is not a pooled place"
            )


def test_a_part_annotated_once_pools_and_scores_the_first_list_only() -> None:
    rows = {
        "p": {
            "num_pooled": 2,
            "port": {"num_findings": 2, "num_true_positive": 1, "num_hazards": 2,
                     "num_hazards_found": 1, "unjudged": [],
                     "num_hazard_groups": 2, "hazard_groups_found": 1},
            "first": port_adjudication.list_against([_h("a.py", 1, "nvml-call")], [_h("a.py", 2, "nvml-call")]),
        }
    }  # fmt: skip
    t = port_adjudication.totals(rows)
    assert "second" not in t and t["first"]["recall_strict"] == 1.0
    assert (t["port"]["precision"], t["port"]["recall"]) == (0.5, 0.5)
