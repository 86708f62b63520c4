"""Two annotators' hazard lists compared with port_score's matching (benchmarks/port_agreement.py):
the figures that say how much of port's measured score is the list writer's judgement."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import port_agreement


def _h(file: str, line: int, kind: str, severity: str = "error") -> dict[str, Any]:
    return {"file": file, "line": line, "kind": kind, "severity": severity, "why": "w"}


def _n(file: str, line: int) -> dict[str, Any]:
    return {"file": file, "line": line, "why": "fine"}


FIRST = {
    "hazard": [
        _h("setup.py", 10, "gencode-flags"),
        _h("a.py", 5, "cuda-only-import", "warn"),
        _h("b.py", 40, "nvml-call"),
        _h("c.cu", 7, "warp-size-32"),
    ],
    "not_hazard": [_n("d.py", 3)],
}
SECOND = {
    "hazard": [
        _h("setup.py", 12, "gencode-flags"),  # same place within 3 lines, same kind, same severity
        _h("a.py", 6, "cuda-only-import", "error"),  # same, severity differs
        _h("b.py", 41, "nvidia-smi-call"),  # same place, another kind
        _h("d.py", 4, "torch-version-cuda"),  # the first calls this place fine
        _h("e.py", 90, "cuda-only-package"),  # nobody else sees it
    ],
    "not_hazard": [_n("c.cu", 7)],  # the second calls the first's warp hazard fine
}


def test_agreement_counts_strict_loose_severity_and_contested_places() -> None:
    a = port_agreement.agree(FIRST, SECOND)
    assert (a["num_first"], a["num_second"]) == (4, 5)
    assert (a["first_in_second_strict"], a["first_in_second_loose"]) == (2, 3)
    assert (a["second_in_first_strict"], a["second_in_first_loose"]) == (2, 3)
    assert a["same_severity"] == 1
    assert (a["first_contested"], a["second_contested"]) == (1, 1)
    assert [r["file"] for r in a["only_first"]] == ["c.cu"]
    assert [r["file"] for r in a["only_second"]] == ["d.py", "e.py"]
    assert [(k["first"]["kind"], k["second"]["kind"]) for k in a["kind_differs"]] == [
        ("nvml-call", "nvidia-smi-call")
    ]


def test_union_keeps_every_hazard_once_and_drops_not_hazards_either_calls_a_hazard() -> None:
    u = port_agreement.union(FIRST, SECOND)
    places = sorted((h["file"], h["line"]) for h in u["hazard"])
    # the second's strict duplicates go; its other-kind b.py entry stays (a finding of either kind
    # is then true there)
    assert places == [
        ("a.py", 5),
        ("b.py", 40),
        ("b.py", 41),
        ("c.cu", 7),
        ("d.py", 4),
        ("e.py", 90),
        ("setup.py", 10),
    ]
    assert u["not_hazard"] == []  # d.py and c.cu are hazards for one of the two


def test_consensus_is_what_both_list_with_the_same_kind() -> None:
    c = port_agreement.consensus(FIRST, SECOND)
    assert sorted(h["file"] for h in c["hazard"]) == ["a.py", "setup.py"]
    assert port_agreement.consensus(SECOND, {"hazard": [], "not_hazard": []})["hazard"] == []


def test_pooled_agreement_adds_the_parts_counts() -> None:
    def part(first: int, shared: int, found: int) -> dict[str, Any]:
        counts = dict.fromkeys(port_agreement.COUNTS, 0)
        counts.update(num_first=first, num_second=first, first_in_second_strict=shared)
        counts.update(second_in_first_strict=shared, same_severity=shared)
        port = {"num_findings": 4, "num_true_positive": 2, "num_hazards": first}
        port["num_hazards_found"] = found
        return {
            "agreement": counts,
            "port": dict.fromkeys(("first", "second", "union"), port),
            "port_consensus": {"num_hazards": shared, "num_hazards_found": found},
        }

    p = port_agreement.pooled({"a": part(18, 7, 1), "b": part(2, 2, 1)})
    assert p["parts"] == ["a", "b"]
    assert p["agreement"]["ratios"]["first_in_second_strict"] == 0.45  # 9/20, not (7/18 + 1)/2
    assert p["port"]["first"]["precision"] == 0.5 and p["port"]["first"]["recall"] == 0.1
    assert p["port_consensus"]["recall"] == round(2 / 9, 4)
