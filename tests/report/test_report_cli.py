"""`rocmkit report --out DIR` and `--json`: report files into a directory, the runs as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.results import Measurement, RunResult, load_result


def _run(tmp_path: Path, name: str, tflops: float) -> Path:
    result = RunResult(
        kind="bench",
        environment={"backend": "cpu", "torch_version": "2.9.0"},
        config={"mode": "quick"},
        measurements=[
            Measurement(suite="gemm", name="fp32 64", metric="tflops", value=tflops, unit="TFLOPS")
        ],
        label=name,
    )
    return result.save(tmp_path / name).parent


def test_out_writes_markdown_and_html_into_the_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _run(tmp_path, "a", 1.0), _run(tmp_path, "b", 2.0)
    out = tmp_path / "reports" / "ab"
    assert main(["report", str(first), str(second), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # the files are the output
    assert str(out / "report.md") in captured.err and str(out / "report.html") in captured.err
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# rocmkit comparison: a vs b") and "| 0.50x |" in markdown
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_json_prints_every_run_document_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _run(tmp_path, "a", 1.0), _run(tmp_path, "b", 2.0)
    assert main(["report", str(second), str(first), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["kind"] == "report"  # one shape of --json for every command: a run document
    doc = printed["data"]
    assert doc["schema"] == "rocmkit.report" and doc["schema_version"] == 1
    assert [r["label"] for r in doc["runs"]] == ["b", "a"]
    assert doc["runs"][1] == load_result(first).to_dict()


def test_out_and_o_are_one_or_the_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, "a", 1.0)
    argv = ["report", str(run), "--out", str(tmp_path / "r"), "-o", str(tmp_path / "x.md")]
    assert main(argv) == 2
    assert main(["report", str(run), "--out", str(tmp_path / "r"), "--format", "md"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("--out DIR writes report.md and report.html" in e for e in err)
    assert not (tmp_path / "r").exists() and not (tmp_path / "x.md").exists()


def _port_scan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A saved `rocmkit port` run over the clean fixture project (its output swallowed)."""
    scan = tmp_path / "scan"
    clean = Path(__file__).resolve().parent.parent / "fixtures" / "port" / "clean"
    assert main(["port", str(clean), "--out", str(scan)]) == 0
    capsys.readouterr()
    return scan


def test_a_document_run_is_reported_with_its_answer_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scan = _port_scan(tmp_path, capsys)
    assert main(["report", str(scan), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["data"]["runs"]
    assert run["kind"] == "port" and run["data"]["schema"] == "rocmkit.port"
    assert run["label"] == "port clean"  # a scan names what it read, not a device


def test_a_document_run_reads_as_a_note_with_its_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = RunResult(
        kind="doctor",
        environment={},
        config={},
        data={"schema": "rocmkit.doctor", "counts": {"ok": 9, "warn": 0, "fail": 2}},
    ).save(tmp_path / "doctor")
    assert main(["report", str(run), "--format", "md"]) == 0
    assert "doctor answer: 9 ok, 2 fail; the whole document" in capsys.readouterr().out


def test_a_port_run_claims_no_device_in_its_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scan = _port_scan(tmp_path, capsys)
    assert main(["report", str(scan), "--format", "md"]) == 0
    text = capsys.readouterr().out
    assert "port clean" in text and "no GPU used" not in text and "ran on" not in text
