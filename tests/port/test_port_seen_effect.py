"""benchmarks/port_seen_effect.py: two versions of port's code on the seen corpus, compared place by
place, scored with one scorer; only parts already scored are scanned; bad arguments exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import port_corpus
import port_seen_effect

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "port_seen_effect.py"


def _side(found: int, misses: list[str], false: list[str], true: int) -> dict[str, Any]:
    return {
        "found": found,
        "hazards": found + len(misses),
        "findings": true + len(false),
        "true": true,
        "misses": misses,
        "false": false,
    }


def test_compare_names_each_place_that_moved_and_adds_up_both_sides() -> None:
    base = {
        "a": _side(1, ["x.py:3 nvml-call", "y.py:9 docker-gpus"], ["z.py:1 nvml warn"], 1),
        "b": _side(2, [], [], 2),
    }
    head = {
        "a": _side(2, ["y.py:9 docker-gpus"], ["w.py:4 nvidia-smi warn"], 2),
        "b": _side(2, [], [], 2),
    }
    result = port_seen_effect.compare(base, head)
    assert result["per_project"] == {
        "a": {
            "miss_fixed": ["x.py:3 nvml-call"],
            "fp_gone": ["z.py:1 nvml warn"],
            "fp_new": ["w.py:4 nvidia-smi warn"],
        }
    }  # b did not move: not listed
    assert result["changes"] == {"miss_fixed": 1, "miss_new": 0, "fp_gone": 1, "fp_new": 1}
    assert result["totals"]["base"] == {"found": 3, "hazards": 5, "findings": 4, "true": 3}
    assert result["totals"]["head"] == {"found": 4, "hazards": 5, "findings": 5, "true": 4}


def test_compare_refuses_a_project_scored_on_one_side_only() -> None:
    with pytest.raises(ValueError, match="one side only"):
        port_seen_effect.compare({"a": _side(0, [], [], 0)}, {})


def test_the_seen_parts_end_at_the_last_part_a_result_file_scores(tmp_path: Path) -> None:
    (tmp_path / "port_score_x.json").write_text(json.dumps({"parts": {"test7": {}, "test12": {}}}))
    (tmp_path / "port_score_y.json").write_text(json.dumps({"parts": {"dev": {}, "test9": {}}}))
    (tmp_path / "port_score_broken.json").write_text("{not json")
    (tmp_path / "other_test99.json").write_text(json.dumps({"parts": {"test99": {}}}))
    assert port_seen_effect.last_scored_part(tmp_path) == "test12"
    seen = port_seen_effect.seen_parts("test12")
    assert "dev" in seen and "test12" in seen and "test13" not in seen
    assert port_seen_effect.last_scored_part(tmp_path / "empty") is None


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO, check=False
    )


def test_an_unknown_commit_is_a_one_line_error_with_exit_2() -> None:
    out = _run("--base", "no-such-commit-anywhere", "--part", "dev")
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "port_seen_effect: no such commit: 'no-such-commit-anywhere' (give a commit, tag or branch)"
    )


def test_a_part_after_the_seen_ones_is_refused_before_anything_is_scanned() -> None:
    last = port_seen_effect.last_scored_part(REPO / "benchmarks" / "results")
    assert last is not None
    later = [p for p in port_corpus.PARTS if port_seen_effect.part_number(p) > 0][-1]
    out = _run("--base", "HEAD", "--until", "test3", "--part", later)
    assert out.returncode == 2
    assert f"--part {later}: not seen (after test3)" in out.stderr
    assert _run("--part", "dev").returncode == 2  # no --base


@pytest.mark.slow
def test_both_sides_scan_the_code_of_their_own_commit(tmp_path: Path) -> None:
    """The same commit on both sides moves nothing, and each child imports rocmkit from the src/
    unpacked for it, not from this checkout."""
    projects = [p for p in port_corpus.load_manifest() if p.part == "test426"]
    if not projects or not all(p.root().is_dir() for p in projects):
        pytest.skip("part test426 is not fetched (python benchmarks/port_corpus.py)")
    out_file = tmp_path / "effect.json"
    out = _run(
        "--base", "HEAD", "--head", "HEAD", "--part", "test426", "--write", "--out", str(out_file)
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    document = json.loads(out_file.read_text())
    assert document["changes"] == {"miss_fixed": 0, "miss_new": 0, "fp_gone": 0, "fp_new": 0}
    assert document["num_projects"] == len(projects)
    assert document["totals"]["base"] == document["totals"]["head"]
    src = port_seen_effect.unpack_src(port_seen_effect.resolve("HEAD"), tmp_path)
    side = port_seen_effect.run_side(src, [projects[0].name], 1)
    assert Path(side["rocmkit_file"]).is_relative_to(tmp_path)
