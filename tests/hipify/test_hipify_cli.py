"""`rocmkit hipify` as a run: --out saves the report that --json prints, the hipcc check of a dry
run names the sources, and the exit-code rule (--strict) lives in the outcome."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.hipify.check import check_report
from rocmkit.hipify.outcome import HipifyOutcome
from rocmkit.hipify.project import HipifyConfig, hipify_paths
from rocmkit.results import load_result

KERNEL = (
    "#include <cuda_runtime.h>\n__global__ void k() {}\nint main() { cudaDeviceSynchronize(); }\n"
)


def _source(tmp_path: Path, text: str = KERNEL, name: str = "a.cu") -> Path:
    source = tmp_path / "src" / name
    source.parent.mkdir(exist_ok=True)
    source.write_text(text)
    return source


def test_out_saves_the_report_json_prints_and_the_code_goes_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source(tmp_path, KERNEL + "cudaBogus();\n")
    code, run = tmp_path / "hip", tmp_path / "run"
    argv = ["hipify", str(source.parent), "--output-dir", str(code), "--out", str(run), "--json"]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == json.loads((run / "result.json").read_text())  # --json is the saved file
    printed = document["data"]
    saved = load_result(run)
    assert saved.kind == "hipify" and saved.data == printed
    assert printed["schema_version"] == 1 and printed["totals"]["converted_files"] == 1
    assert saved.config["output_dir"] == str(code) and saved.config["strict"] is False
    assert (code / "a.cu").read_text().startswith("#include <hip/hip_runtime.h>")
    assert sorted(p.name for p in run.iterdir()) == ["result.json"]  # no code in the run dir
    assert main([*argv[:-1], "--strict"]) == 1  # cudaBogus is left behind
    assert load_result(run).config["strict"] is True
    err = capsys.readouterr().err.splitlines(keepends=True)
    shown = "".join(line for line in err if not line.startswith("wrote "))  # stderr: stdout is code
    assert "cudaBogus" in shown
    assert main(["report", str(run)]) == 1 - 1
    assert capsys.readouterr().out == shown  # report RUN prints the lines the command printed


def test_a_single_file_still_goes_to_stdout_and_nothing_is_saved_without_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["hipify", str(source)]) == 0
    assert capsys.readouterr().out.startswith("#include <hip/hip_runtime.h>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_help_tells_the_run_directory_from_the_code_directory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "500")  # one line per option
    with pytest.raises(SystemExit):
        main(["hipify", "--help"])
    lines = capsys.readouterr().out.splitlines()
    out = next(line for line in lines if line.strip().startswith("--out DIR"))
    output_dir = next(line for line in lines if line.strip().startswith("--output-dir DIR"))
    assert "result.json" in out and "Translated code goes to" in out
    assert "translated code" in output_dir and "result.json" not in output_dir


def test_dry_run_check_compiles_the_translated_text_and_names_the_sources(
    tmp_path: Path,
) -> None:
    good = _source(tmp_path, KERNEL, "good.cu")
    _source(tmp_path, "__global__ void k() { cudaBogus(); }\n", "bad.cu")
    compiled: list[str] = []

    def fake_hipcc(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        path = command[5]
        compiled.append(Path(path).read_text())
        if "bad" not in path:
            return subprocess.CompletedProcess(command, 0, "", "")
        return subprocess.CompletedProcess(command, 1, "", f"{path}:1:23: error: cudaBogus\n")

    report = hipify_paths(HipifyConfig(paths=(good.parent,), want_text=True))
    checks = check_report(report, arch="gfx942", hipcc="/x/hipcc", runner=fake_hipcc)
    by_name = {c.path.name: c for c in checks}
    assert by_name["good.cu"].ok and by_name["good.cu"].path == good
    bad = by_name["bad.cu"]
    assert not bad.ok and bad.first_error == f"{bad.path}:1:23: error: cudaBogus"
    assert any("hipDeviceSynchronize" in text for text in compiled)  # the translation, not CUDA
    outcome = HipifyOutcome(report=report, checks=tuple(checks))
    assert outcome.exit_code == 1
    assert [c["ok"] for c in outcome.to_dict()["check"]] == [c.ok for c in checks]


def test_strict_counts_cuda_left_behind_and_an_empty_run_is_a_user_error(tmp_path: Path) -> None:
    source = _source(tmp_path, KERNEL + "cudaBogus();\n")
    report = hipify_paths(HipifyConfig(paths=(source,)))
    assert HipifyOutcome(report=report).exit_code == 0
    assert HipifyOutcome(report=report, strict=True).exit_code == 1
    empty = hipify_paths(HipifyConfig(paths=(source.parent,), extensions=(".nothing",)))
    with pytest.raises(UserError, match="no file matched"):
        HipifyOutcome(report=empty)
