"""Core plumbing: CLI errors, typed configs, the results format (atomic writes: test_atomic.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

import rocmkit
from rocmkit.cli.main import main
from rocmkit.config import load_config, parse_overrides
from rocmkit.errors import UserError
from rocmkit.results import Measurement, RunResult, load_result


def test_public_api_is_pinned():
    assert rocmkit.__all__ == sorted(rocmkit.__all__)
    assert set(rocmkit.__all__) == {
        "MissingExtraError",
        "RocmkitWarning",
        "UserError",
        "__version__",
    }


def test_unknown_command_is_one_line_exit_2(capsys):
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice" in err


def test_python_dash_m_runs_without_importing_torch():
    code = (
        "import sys, runpy; sys.argv=['rocmkit','--version']\n"
        "try:\n runpy.run_module('rocmkit', run_name='__main__')\nexcept SystemExit: pass\n"
        "print('torch' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(rocmkit.__file__).parent.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip().splitlines() == [f"rocmkit {rocmkit.__version__}", "False"]


@dataclass(kw_only=True)
class _Optim:
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.95)


@dataclass(kw_only=True)
class _Run:
    name: str
    steps: int = 10
    precision: Literal["fp32", "bf16"] = "fp32"
    compile: bool = False
    limit: int | None = None
    optim: _Optim = field(default_factory=_Optim)


def test_config_from_toml_and_dotted_overrides(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('name = "a"\nsteps = 5\n[optim]\nlr = 0.1\n')
    overrides = parse_overrides(["--optim.lr", "3e-4", "--run.x=1"])
    overrides.pop("run.x")
    config = load_config(_Run, path=toml, overrides={**overrides, "precision": "bf16"})
    assert config.steps == 5 and config.optim.lr == pytest.approx(3e-4)
    assert config.precision == "bf16" and config.optim.betas == (0.9, 0.95)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "a", "stepz": 1}, "unknown setting 'stepz'"),
        ({"name": "a", "steps": "many"}, "steps must be an integer"),
        ({"name": "a", "precision": "fp8"}, "precision must be one of fp32, bf16"),
        ({"steps": 1}, "missing required setting 'name'"),
        ({"name": "a", "optim": {"lr": "x"}}, "optim.lr must be a number"),
        ({"name": "a", "compile": "maybe"}, "compile must be true or false"),
    ],
)
def test_config_errors_name_the_key(data, message):
    with pytest.raises(UserError, match=message):
        load_config(_Run, base=data)


def test_config_file_errors(tmp_path):
    with pytest.raises(UserError, match="config file not found"):
        load_config(_Run, path=tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(UserError, match="invalid TOML"):
        load_config(_Run, path=bad)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UserError, match="not UTF-8"):
        load_config(_Run, path=binary)


def test_result_roundtrip_and_validation(tmp_path):
    result = RunResult(
        kind="bench",
        environment={"backend": "cpu"},
        config={"suite": "gemm"},
        measurements=[
            Measurement(suite="gemm", name="fp32 64", metric="gflops", value=1.5, unit="GFLOP/s")
        ],
    )
    path = result.save(tmp_path / "run1")
    loaded = load_result(tmp_path / "run1")
    assert path.name == "result.json"
    assert loaded.measurements[0].value == 1.5 and loaded.select(suite="gemm")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(UserError, match="corrupt JSON"):
        load_result(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(UserError, match="schema version 99"):
        load_result(tmp_path / "other.json")
    with pytest.raises(UserError, match="no result file"):
        load_result(tmp_path / "missing.json")


def test_debug_flag_anywhere_shows_the_traceback(tmp_path):
    with pytest.raises(UserError, match="config file not found"):
        main(["train", "--config", str(tmp_path / "missing.toml"), "--debug"])


def test_piped_output_is_not_wrapped_at_80_columns(monkeypatch):
    from rocmkit.console import PIPE_WIDTH, make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    console = make_console()
    assert console.width == PIPE_WIDTH  # pytest's captured stdout is not a terminal
    monkeypatch.setenv("COLUMNS", "90")
    assert make_console().width == 90


def _rocmkit(*argv: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    import time

    env = {**os.environ, "PYTHONPATH": str(Path(rocmkit.__file__).parent.parent)}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "rocmkit", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return done, time.monotonic() - start


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--config", "missing.toml"], "config file not found: missing.toml"),
        (["profile", "train", "--config", "missing.toml"], "config file not found: missing.toml"),
        (["bench", "--gemm.dtypes", "fp7"], "gemm dtype 'fp7' is unknown"),
        (["bench", "--suite", "gemmm"], "unknown bench suite 'gemmm'"),
    ],
)
def test_first_mistakes_are_answered_before_torch_loads(tmp_path, argv, message):
    # Importing torch alone takes seconds: a mistake is answered without it (asserted on what
    # was imported, not on a clock, so a loaded machine cannot fail the test).
    probe = (
        "import sys; from rocmkit.cli.main import main; code = main(sys.argv[1:]); "
        "sys.stdout.write('torch imported' if 'torch' in sys.modules else 'no torch'); "
        "sys.exit(code)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(rocmkit.__file__).parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.startswith(f"rocmkit: error: {message}")
    assert done.stderr.count("\n") == 1
    assert done.stdout == "no torch"
    assert list(tmp_path.iterdir()) == []  # no run directory left behind


def test_one_error_prefix_for_argument_mistakes(tmp_path):
    done, _ = _rocmkit("train", "--steps", "x", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("rocmkit: error: argument --steps: invalid int value")
    assert done.stderr.count("rocmkit") == 2  # the prefix and the `rocmkit train --help` hint
    done, _ = _rocmkit("profile", cwd=tmp_path)
    assert done.stderr.startswith("rocmkit: error: profile needs a subcommand")


def test_train_export_help_is_exports_help(tmp_path):
    done, _ = _rocmkit("train", "export", "--help", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: rocmkit train export")
    assert "checkpoint" in done.stdout and "--preset" not in done.stdout


def test_a_version_1_train_result_reads_with_mfu_in_percent(tmp_path):
    """rocmkit 0.1 wrote train's mfu as a fraction; today's reader shows it as bench does (%)."""
    old = {
        "schema_version": 1,
        "kind": "train",
        "environment": {},
        "config": {},
        "created_at": "2026-01-01T00:00:00+00:00",
        "rocmkit_version": "0.1.0",
        "measurements": [
            {"suite": "train", "name": "gpt", "metric": "mfu", "value": 0.41, "unit": "fraction"}
        ],
    }
    (tmp_path / "result.json").write_text(json.dumps(old))
    loaded = load_result(tmp_path)
    (mfu,) = loaded.select(metric="mfu")
    assert (mfu.value, mfu.unit) == (pytest.approx(41.0), "%")
    assert loaded.schema_version == 2 and loaded.data == {}


def test_flatten_dotted_is_the_inverse_of_merge_dotted():
    from rocmkit.config import flatten_dotted, merge_dotted

    nested = {"model": {"n_layer": 2, "options": {}}, "train": {"lr": 3e-4}}
    flat = flatten_dotted(nested)
    assert flat == {"model.n_layer": 2, "model.options": {}, "train.lr": 3e-4}
    assert merge_dotted({}, flat) == nested
