"""`rocmkit port` as a user runs it: table, JSON, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmkit.cli.main import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "port"
GPTQ = FIXTURES / "real" / "gptq-for-llama"


def test_missing_path_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", "/no/such/project"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "rocmkit: error: no such file or directory: /no/such/project"


@pytest.mark.parametrize(
    ("folder", "fail_on", "code"),
    [
        (GPTQ, None, 1),  # errors fail by default
        (GPTQ, "never", 0),
        (FIXTURES / "rules" / "nvidia-smi", None, 0),  # warnings alone pass by default
        (FIXTURES / "rules" / "nvidia-smi", "warn", 1),
        (FIXTURES / "rules" / "nccl-env", "warn", 0),  # info alone passes --fail-on warn
        (FIXTURES / "rules" / "nccl-env", "info", 0),  # info never fails a build
        (FIXTURES / "rules" / "nvidia-smi", "info", 1),  # --fail-on info fails on warnings
        (FIXTURES / "clean", "info", 0),
    ],
)
def test_exit_code_follows_fail_on(folder: Path, fail_on: str | None, code: int) -> None:
    args = ["port", str(folder), "--json"] + (["--fail-on", fail_on] if fail_on else [])
    assert main(args) == code


def test_no_path_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port"]) == 2
    assert "rocmkit port PATH" in capsys.readouterr().err


def test_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["port", str(GPTQ), "--json"]) == 1
    run = json.loads(capsys.readouterr().out)
    assert (run["kind"], run["outcome"]) == ("port", "failed")
    doc = run["data"]  # the port report inside the run document (the same as result.json)
    assert (doc["schema"], doc["schema_version"], doc["exit_code"]) == ("rocmkit.port", 2, 1)
    assert doc["counts"] == {"error": 2, "warn": 1, "info": 0}  # info only with --show-info
    assert doc["num_below_floor"] == 2
    assert doc["summary"][0]["severity"] == "error"
    docker = next(f for f in doc["findings"] if f["rule_id"] == "docker-gpus")
    assert (docker["path"], docker["line"], docker["severity"]) == ("build_and_run.sh", 9, "warn")
    assert "/dev/kfd" in docker["fix"] and docker["source"].startswith("https://rocm.docs.amd.com")


def test_console_table_names_place_rule_and_fix(capsys: pytest.CaptureFixture[str]) -> None:
    os.environ["COLUMNS"] = "250"
    main(["port", str(GPTQ), "--verbose"])
    out = capsys.readouterr().out
    assert "docker/Dockerfile:1:1" in out and "cuda-base-image" in out
    assert "rocm/pytorch" in out  # the fix
    assert "https://rocm.docs.amd.com/projects/install-on-linux" in out  # --verbose: the source
    assert "2 error, 1 warn, 2 info hidden (--show-info)" in out


def test_unreadable_files_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.py").write_bytes(b"\xff\xfeimport pynvml\n")
    assert main(["port", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "not scanned: bad.py: not UTF-8" in captured.out
    assert "no findings, 1 files not scanned" in captured.out


def test_list_rules_shows_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    from rocmkit.port import load_rules

    assert main(["port", "--list-rules"]) == 0
    out = capsys.readouterr().out
    assert all(rule.id in out for rule in load_rules().rules)


def test_real_command_line_in_a_subprocess() -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "rocmkit", "port", str(GPTQ), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert len(json.loads(proc.stdout)["data"]["findings"]) == 3  # info left out by default


def test_out_saves_what_json_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rocmkit.results import load_result

    out = tmp_path / "scan"
    assert main(["port", str(GPTQ), "--json", "--out", str(out), "--fail-on", "warn"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((out / "result.json").read_text())  # --json is the saved file
    saved = load_result(out)
    assert saved.kind == "port" and saved.data == printed["data"]
    assert saved.config["fail_on"] == "warn" and printed["data"]["fail_on"] == "warn"
    assert main(["port", str(GPTQ), "--out", str(tmp_path / "table")]) == 1
    shown = capsys.readouterr().out
    assert "docker-gpus" in shown  # the table is still printed
    assert load_result(tmp_path / "table").data["counts"] == printed["data"]["counts"]
    # `rocmkit report RUN` prints the very cells the command printed
    assert main(["report", str(tmp_path / "table")]) == 0
    assert capsys.readouterr().out == shown


def test_no_run_directory_without_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["port", str(FIXTURES / "clean")]) == 0
    assert list(tmp_path.iterdir()) == []


def test_console_shows_grouped_lines_the_summary_and_what_is_hidden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run.sh").write_text("nvidia-smi -L\nnvidia-smi -q\nexport NCCL_DEBUG=INFO\n")
    (tmp_path / "b.py").write_text("import pynvml\n")
    assert main(["port", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "(+1: 2)" in out  # one finding for the two nvidia-smi lines, with the other line
    assert "by rule" in out and "2 places in 1 files" in out
    assert "1 info hidden (--show-info)" in out
