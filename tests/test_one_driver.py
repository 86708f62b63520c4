"""Issue 24's "Done when", for every command at once: each command line ends in the one driver,
`--json` prints exactly the saved result.json, an outcome is the exit code of the table in
docs/architecture.md, and nothing but `runs.save` writes result.json.

The commands' own work is replaced by a run that returns the outcome asked for, so all of them are
checked in seconds; each command's own tests run it for real (tests/<command>/)."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import json
from pathlib import Path

import pytest

import rocmkit
from rocmkit import driver
from rocmkit.cli.main import build_parser, main
from rocmkit.results import RunResult

PACKAGE = Path(rocmkit.__file__).resolve().parent

# Every command line: (its words, the driver Command it runs, arguments that build a valid config
# cheaply, with {tmp} for the test's directory). A new command must be added here.
COMMANDS = {
    ("doctor",): ("rocmkit.doctor.command", "COMMAND", ["--check", "hsa-override"]),
    ("hipify",): ("rocmkit.hipify.command", "COMMAND", ["{tmp}/proj/k.cu"]),
    ("port",): ("rocmkit.port.command", "COMMAND", ["{tmp}/proj"]),
    ("train",): ("rocmkit.train.command", "COMMAND", ["--preset", "gpt-tiny"]),
    ("bench",): ("rocmkit.bench.command", "COMMAND", ["--suite", "gemm", "--device", "cpu"]),
    ("report",): ("rocmkit.report.command", "COMMAND", ["{tmp}/earlier"]),
    ("infer", "serve"): ("rocmkit.infer.command", "SERVE", ["--url", "http://127.0.0.1:9/v1"]),
    ("infer", "local"): ("rocmkit.infer.command", "LOCAL", ["{tmp}/model"]),
    ("profile",): ("rocmkit.profile.command", "MISSING", []),
    ("profile", "train"): ("rocmkit.profile.command", "TRAIN", ["--preset", "gpt-tiny"]),
    ("profile", "infer"): ("rocmkit.profile.command", "INFER", ["{tmp}/model"]),
    ("profile", "memory"): ("rocmkit.profile.command", "MEMORY", ["--preset", "gpt-tiny"]),
}
# `rocmkit profile` alone is a usage error (exit 2) before any run: nothing to fake there.
RUNNABLE = [words for words in COMMANDS if words != ("profile",)]


def _leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    handler = parser._defaults.get("handler")
    if handler is not None:
        yield words, handler
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, (*words, name))


def test_every_command_line_ends_in_the_driver():
    """cli/ declares arguments; each command line's one action is the driver's `execute`."""
    found = {}
    for words, handler in _leaves(build_parser()):
        assert handler.__qualname__ == "handler.<locals>.run", words  # cli.pipeline.handler
        names = inspect.getclosurevars(handler).nonlocals
        found[words] = (names["module"], names["attribute"])
    assert found == {words: spec[:2] for words, spec in COMMANDS.items()}
    for module, attribute in found.values():
        assert isinstance(getattr(importlib.import_module(module), attribute), driver.Command)


@pytest.fixture
def inputs(tmp_path):
    """What the cheap command lines of COMMANDS read: a project, a model directory, a run."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text('{"model_type": "gpt2"}\n')
    RunResult(kind="bench", environment={}, config={}).save(tmp_path / "earlier")
    return tmp_path


def _argv(words: tuple[str, ...], tmp: Path, *tail: str) -> list[str]:
    given = [arg.replace("{tmp}", str(tmp)) for arg in COMMANDS[words][2]]
    return [*words, *given, *tail]


def _fake(monkeypatch, words: tuple[str, ...], run) -> driver.Command:
    module, attribute, _ = COMMANDS[words]
    command = getattr(importlib.import_module(module), attribute)
    monkeypatch.setattr(
        importlib.import_module(module), attribute, dataclasses.replace(command, run=run)
    )
    return command


@pytest.mark.parametrize("words", RUNNABLE, ids=" ".join)
def test_json_is_the_saved_document_and_each_outcome_its_exit_code(
    words, inputs, monkeypatch, capsys
):
    outcome = {"now": "ok"}

    def run(config, ctx):
        return RunResult(kind="probe", environment={}, config={"made": type(config).__name__},
                         outcome=outcome["now"], partial=None)  # fmt: skip

    command = _fake(monkeypatch, words, run)
    for name, code in driver.EXIT_CODES.items():
        outcome["now"] = name
        out = inputs / "runs" / name
        tail = ["--json"] if command.saves == "never" else ["--json", "--out", str(out)]
        assert main(_argv(words, inputs, *tail)) == code, name
        printed = json.loads(capsys.readouterr().out)
        assert printed["outcome"] == name and printed["kind"] == "probe"
        if command.saves != "never":
            assert printed == json.loads((out / "result.json").read_text())  # exactly the file
    assert main(_argv(words, inputs, "--no-such-flag")) == 2  # a user error: one line, no run
    assert capsys.readouterr().err.startswith("rocmkit: error:")


@pytest.mark.parametrize("words", RUNNABLE, ids=" ".join)
def test_ctrl_c_in_any_command_exits_130_and_leaves_no_empty_run_directory(
    words, inputs, monkeypatch, capsys
):
    def run(config, ctx):
        raise KeyboardInterrupt

    command = _fake(monkeypatch, words, run)
    out = inputs / "stopped"
    tail = [] if command.saves == "never" else ["--out", str(out)]
    assert main(_argv(words, inputs, *tail)) == driver.EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines()[-1] == "rocmkit: interrupted"
    assert not out.exists()


# `.save(...)` calls that write something other than a run's result (checkpoints, memory timelines).
OTHER_SAVES = {"dcp", "torch", "safetensors_torch", "self.manager", "session.checkpoints",
               "monitor.timeline"}  # fmt: skip
# Modules that name result.json only to read it.
READERS = {"report/load.py", "train/command.py"}


def test_only_runs_save_writes_result_json():
    """The training loops once wrote result.json themselves; now `runs.save` (called by the
    driver) is the one writer, and the only caller of `RunResult.save`."""
    bad = []
    writers = {("runs.py", "result"), ("driver.py", "runs")}  # RunResult.save, runs.save
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                receiver = ast.unparse(node.func.value)
                if node.func.attr == "save" and receiver not in OTHER_SAVES | {
                    r for m, r in writers if m == relative
                }:
                    bad.append(f"{relative}:{node.lineno} {receiver}.save")
            named = (isinstance(node, ast.Name) and node.id == "RESULT_FILENAME") or (
                isinstance(node, ast.Constant) and node.value == "result.json"
            )
            if named and relative not in {"results.py", "runs.py", *READERS}:
                bad.append(f"{relative}:{node.lineno} names result.json")
    assert bad == []


def _tiny_gpt2(tmp: Path) -> Path:
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=64)
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp / "tiny-gpt2")
    return tmp / "tiny-gpt2"


PROFILES = {
    "memory": lambda tmp: ["profile", "memory", "--preset", "gpt-tiny"],
    "train": lambda tmp: ["profile", "train", "--preset", "gpt-tiny", "--active", "1",
                          "--micro-batch", "2", "--train.device", "cpu", "--threads", "1"],
    "infer": lambda tmp: ["profile", "infer", str(_tiny_gpt2(tmp)), "--wait", "0", "--warmup",
                          "1", "--active", "1", "--max-new-tokens", "2"],
}  # fmt: skip


@pytest.mark.parametrize(
    "mode",
    [
        "memory",
        pytest.param("train", marks=pytest.mark.slow),
        pytest.param("infer", marks=pytest.mark.slow),
    ],
)
def test_profile_prints_what_rocmkit_report_prints_and_json_is_the_file(
    mode, tmp_path, monkeypatch, capsys
):
    """The other commands have this test beside their own (tests/<command>/); profile's compared
    its output with the view function, not with the `rocmkit report` command line."""
    monkeypatch.setenv("COLUMNS", "120")
    argv = PROFILES[mode](tmp_path)
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr().out
    assert main(["report", str(tmp_path / "run")]) == 0
    assert capsys.readouterr().out == printed and printed.strip()
    assert main([*argv, "--out", str(tmp_path / "again"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == json.loads((tmp_path / "again" / "result.json").read_text())
    assert document["kind"] == f"profile-{mode}"
