"""The check registry, the JSON document, and `rocmkit doctor` end to end."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from doctor_fakes import MI300X, platform

import rocmkit
from rocmkit.cli.main import main
from rocmkit.doctor import Finding, run_checks
from rocmkit.doctor.registry import all_checks, select_checks
from rocmkit.errors import UserError
from rocmkit.results import RunResult, load_result

ISSUE_CHECKS = [
    "torch-build",
    "gfx-arch-list",
    "hsa-override",
    "visible-devices",
    "kernel-driver",
    "rocm-userspace",
    "container",
    "dtypes",
    "sdpa",
    "smoke",
    "allocator-comm",
    "jax",
]


def test_registry_holds_the_twelve_checks_in_report_order():
    assert list(all_checks()) == ISSUE_CHECKS
    assert [c.id for c in select_checks(["smoke", "torch-build"])] == ["torch-build", "smoke"]
    with pytest.raises(UserError, match="unknown doctor check nope"):
        select_checks(["nope"])


def test_full_run_on_a_fake_machine_gives_a_versioned_document(make_ctx):
    report = run_checks(
        make_ctx(platform("rocm", [MI300X]), {"HSA_OVERRIDE_GFX_VERSION": "'9.4.2'"})
    )
    doc = report.to_dict()
    assert doc["schema"] == "rocmkit.doctor" and doc["schema_version"] == 2
    assert [f["id"] for f in doc["findings"]] == ISSUE_CHECKS
    assert doc["exit_code"] == 1 and doc["counts"]["fail"] >= 1  # the quoted override
    assert doc["environment"]["devices"][0]["arch"] == "gfx942"
    json.dumps(doc)  # serialisable as is


def test_a_crashing_check_becomes_a_fail_finding(make_ctx, monkeypatch):
    def broken(ctx):
        raise KeyError("surprise")

    from rocmkit.doctor import registry

    original = registry.CHECKS["container"]
    monkeypatch.setitem(
        registry.CHECKS,
        "container",
        registry.Check("container", original.title, broken, original.order),
    )
    (finding,) = run_checks(make_ctx(), ["container"]).findings
    assert finding == Finding(
        id="container",
        status="fail",
        summary="the check itself crashed: KeyError: 'surprise'",
        fix=finding.fix,
    )


def test_cli_list_and_single_check_json(capsys):
    assert main(["doctor", "--list"]) == 0
    assert capsys.readouterr().out.split()[0] == "torch-build"
    os.environ["HSA_OVERRIDE_GFX_VERSION"] = '"10.3.0"'  # restored by the hygiene fixture
    assert main(["doctor", "--check", "hsa-override", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)["data"]
    assert [f["status"] for f in doc["findings"]] == ["fail"]


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--bogus"],
        ["doctor", "--check", "nope"],
        ["doctor", "--timeout", "0"],
        ["doctor", "--explain", "/no/such/file.log"],
        ["doctor", "--explain", "x.log", "--check", "smoke"],
        ["doctor", "--from", "/no/such/rocminfo.txt"],
        ["doctor", "--from", "a.txt", "--explain", "b.log"],
    ],
)
def test_cli_usage_errors_are_one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rocmkit: error:") and "Traceback" not in err


def test_cli_explain_binary_and_directory_are_rejected(tmp_path, capsys):
    binary = tmp_path / "core"
    binary.write_bytes(b"\x7fELF\x00\x00\x01garbage")
    assert main(["doctor", "--explain", str(binary)]) == 2
    assert main(["doctor", "--explain", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "binary" in err[0] and "directory" in err[1]


def test_cli_explain_file_and_stdin(tmp_path, capsys, monkeypatch):
    # A deep directory, as pytest-xdist workers make on a GPU box: the path:line must not wrap.
    deep = tmp_path / ("popen-gw3-" + "x" * 90) / "test_cli_explain_file_and_stdin0"
    deep.mkdir(parents=True)
    log = deep / "train.log"
    log.write_text("step 1\nRuntimeError: HIP error: invalid device function\n")
    assert main(["doctor", "--explain", str(log)]) == 0
    out = capsys.readouterr().out
    assert "invalid-device-function" in out and f"{log}:2" in out and "fix:" in out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"all fine\n")))
    assert main(["doctor", "--explain", "-"]) == 0
    assert "no known failure signature in stdin" in capsys.readouterr().out
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Found no NVIDIA driver on your system\n"))
    )
    assert main(["doctor", "--explain", "-", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["data"]
    assert (
        doc["schema"] == "rocmkit.doctor.explain" and doc["matches"][0]["id"] == "no-nvidia-driver"
    )


@pytest.mark.slow
def test_doctor_on_this_machine_end_to_end():
    """The real command, in a subprocess: exits 0 here and tells the truth about torch and GPUs."""
    import torch

    src = str(Path(rocmkit.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)["data"]
    findings = {f["id"]: f for f in doc["findings"]}
    assert doc["environment"]["torch_version"] == torch.__version__
    if not torch.cuda.is_available():
        assert doc["environment"]["torch_device"] == "cpu"
        assert "no GPU" in findings["smoke"]["summary"]
    if torch.version.cuda:
        assert f"CUDA {torch.version.cuda} build" in findings["torch-build"]["summary"]


def test_cli_from_reads_pasted_outputs_and_logs(tmp_path, capsys, local_fixtures):
    paste = local_fixtures / "smi_text"
    log = tmp_path / "train.log"
    log.write_text("ROCm error: invalid device function\n")
    argv = ["doctor", "--from", str(paste / "amd-smi_static_mi350x.txt"), str(log), "--json"]
    assert main(argv) == 1  # the log holds an error
    doc = json.loads(capsys.readouterr().out)["data"]
    by_id = {f["id"]: f for f in doc["findings"]}
    mi350 = by_id["from:amd-smi_static_mi350x.txt"]
    assert mi350["status"] == "ok" and "gfx950" in mi350["summary"] and "2307.2" in mi350["summary"]
    assert by_id["from:train.log:invalid-device-function"]["status"] == "fail"
    assert main(["doctor", "--from", str(paste / "rocm-smi_concise_r9700.txt")]) == 0
    assert "--showproductname" in capsys.readouterr().out


def test_cli_here_needs_explain_and_explain_shows_evidence_lines(tmp_path, capsys):
    assert main(["doctor", "--here"]) == 2
    assert "--here goes with --explain" in capsys.readouterr().err
    log = tmp_path / "llama.log"
    log.write_text(
        "  Device 1: AMD Radeon 740M Graphics, gfx1103 (0x1103), VMM: no\n"
        "ROCm error: invalid device function\n"
        "  current device: 1, in function ggml_cuda_compute_forward\n"
    )
    capsys.readouterr()
    assert main(["doctor", "--explain", str(log)]) == 0
    out = capsys.readouterr().out
    assert "invalid-device-function-igpu" in out and "llama.log:1:" in out
    assert "HIP_VISIBLE_DEVICES" in out


def _saved(out: Path) -> RunResult:
    result = load_result(out)
    assert result.kind == "doctor"
    return result


def test_out_saves_what_json_prints_and_nothing_is_saved_without_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default run directory would appear here
    os.environ["HSA_OVERRIDE_GFX_VERSION"] = '"10.3.0"'  # restored by the hygiene fixture
    out = tmp_path / "ci" / "doctor"
    assert main(["doctor", "--check", "hsa-override", "--json", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert printed == json.loads((out / "result.json").read_text())  # --json is the saved file
    assert printed["outcome"] == "failed" and printed["data"]["schema"] == "rocmkit.doctor"
    assert f"wrote {out / 'result.json'}" in captured.err
    assert main(["doctor", "--check", "hsa-override"]) == 1  # printing is the output
    shown = capsys.readouterr().out
    assert "hsa-override" in shown
    assert main(["report", str(out)]) == 1 - 1  # report renders the saved run: the same cells
    assert capsys.readouterr().out == shown
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ci"]  # no runs/ directory appeared


def test_explain_and_from_save_their_documents_with_out(tmp_path, capsys, local_fixtures):
    log = tmp_path / "train.log"
    log.write_text("step 1\nRuntimeError: HIP error: invalid device function\n")
    explained = tmp_path / "explained"
    assert main(["doctor", "--explain", str(log), "--out", str(explained)]) == 0
    shown = capsys.readouterr().out
    assert "invalid-device-function" in shown  # still printed as text
    assert main(["report", str(explained)]) == 0
    assert capsys.readouterr().out == shown  # report prints the explanation the command printed
    saved = _saved(explained)
    doc = saved.data
    assert doc["schema"] == "rocmkit.doctor.explain" and doc["source"] == str(log)
    assert doc["matches"][0]["id"] == "invalid-device-function"
    assert saved.config["explain"] == str(log)
    pasted = tmp_path / "pasted"
    paste = local_fixtures / "smi_text" / "rocm-smi_concise_r9700.txt"
    assert main(["doctor", "--from", str(paste), "--json", "--out", str(pasted)]) == 0
    assert _saved(pasted).to_dict() == json.loads(capsys.readouterr().out)


def test_an_unwritable_out_is_refused_before_the_checks_run(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["doctor", "--check", "torch-build", "--out", str(blocker / "run")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "cannot write the --out directory" in captured.err


def test_an_unreadable_log_is_a_one_line_error_naming_the_option_that_gave_it(tmp_path, capsys):
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x7fELF\x00\x00")
    cases = [
        (["--explain", str(tmp_path)], f"--explain {tmp_path}: is a directory"),
        (["--explain", str(binary)], f"--explain {binary}: looks like a binary file"),
        (["--from", str(tmp_path / "missing.txt")], f"--from {tmp_path / 'missing.txt'}: cannot"),
    ]
    for argv, message in cases:
        assert main(["doctor", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and message in captured.err
        assert captured.err.count("\n") == 1, argv
