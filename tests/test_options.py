"""The input side of every command: its flags come from its config class (`rocmkit.options`),
old spellings of the run directory keep working with a note, a --config file is read once, and
the command line's import path stays light."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from rocmkit.cli.main import (
    _parse,
    _Parser,
    build_parser,
    command_parser,
    main,
    option_strings,
)
from rocmkit.errors import UserError
from rocmkit.options import add_flags, flag_name, from_args, option

ROOT = Path(__file__).resolve().parents[1]


@dataclass(kw_only=True)
class Throwaway:
    """A config no command has: every kind of field once."""

    target: Path | None = option(None, "what to work on", positional=True)
    num_items: int = option(4, "how many")
    mode: Literal["fast", "slow"] = option("fast", "how")
    sizes: tuple[int, ...] = option((1, 2), "comma list")
    tag: tuple[str, ...] = option((), "repeat me", repeat=True)
    dry_run: bool = option(False, "do nothing")
    power: bool = option(True, "sample power", off="do not sample power")
    ratio: float | None = option(None, "a ratio", flag="--r", short="-r", metavar="R")
    hidden: int = option(0, "not a flag", cli=False)


def _parser(cls: type = Throwaway, show_defaults: bool = False) -> _Parser:
    parser = _Parser(prog="rocmkit throwaway")
    add_flags(parser, cls, show_defaults=show_defaults)
    return parser


def test_every_kind_of_field_becomes_the_flag_a_user_expects():
    parser = _parser()
    flags = set(option_strings(parser))
    assert {"--num-items", "--mode", "--sizes", "--tag", "--dry-run", "--no-power", "--r"} <= flags
    assert "--hidden" not in flags and "--target" not in flags  # cli=False; a positional
    args = parser.parse_args(
        [
            "x",
            "--num-items",
            "7",
            "--mode",
            "slow",
            "--sizes",
            "8,16",
            "--tag",
            "a",
            "--tag",
            "b",
            "--dry-run",
            "--no-power",
            "-r",
            "0.5",
        ]
    )
    config = from_args(Throwaway, args)
    assert config == Throwaway(
        target=Path("x"),
        num_items=7,
        mode="slow",
        sizes=(8, 16),
        tag=("a", "b"),
        dry_run=True,
        power=False,
        ratio=0.5,
    )
    assert from_args(Throwaway, parser.parse_args([])) == Throwaway()  # untyped: the defaults


def test_help_comes_from_the_field_with_its_default():
    text = _parser(show_defaults=True).format_help()
    assert "how many (default: 4)" in text
    assert "{fast,slow}" in text and "do not sample power" in text
    assert "comma list (default: 1,2)" in text and "-r R, --r R" in text


def test_a_bad_value_names_the_flag_and_a_bad_choice_suggests_one():
    parser = _parser()
    with pytest.raises(UserError, match=r"^--num-items must be an integer \(got 'many'\)"):
        from_args(Throwaway, parser.parse_args(["--num-items", "many"]))
    with pytest.raises(UserError, match=r"--sizes\[1\] must be an integer"):
        from_args(Throwaway, parser.parse_args(["--sizes", "1,x"]))
    with pytest.raises(UserError, match="did you mean slow"):
        parser.parse_args(["--mode", "slo"])


# (words that reach the command's parser, module and class its flags come from)
COMMAND_CONFIGS = [
    (["doctor"], "rocmkit.doctor.diagnose", "DoctorConfig"),
    (["port"], "rocmkit.port.project", "PortConfig"),
    (["hipify"], "rocmkit.hipify.command", "HipifySettings"),
    (["profile", "memory"], "rocmkit.profile.commands", "EstimateRequest"),
    (["infer", "serve"], "rocmkit.infer.settings", "ServeSettings"),
    (["infer", "local"], "rocmkit.infer.settings", "LocalSettings"),
]


@pytest.mark.parametrize(("words", "module", "name"), COMMAND_CONFIGS)
def test_a_field_added_to_a_commands_config_shows_up_as_its_flag(words, module, name, monkeypatch):
    config_class = getattr(importlib.import_module(module), name)
    grown = dataclasses.make_dataclass(
        name,
        [("brand_new_knob", int, option(3, "a setting added later"))],
        bases=(config_class,),
        kw_only=True,
        frozen=config_class.__dataclass_params__.frozen,
    )
    grown.__module__ = module
    monkeypatch.setattr(importlib.import_module(module), name, grown)
    parser = command_parser(build_parser(), words)
    flags = option_strings(parser)
    assert "--brand-new-knob" in flags
    # every field of the real config is a flag of the command, spelled as the field says
    fields = [f for f in dataclasses.fields(config_class) if f.metadata.get("cli", True)]
    positional = {f.name for f in fields if f.metadata.get("positional")}
    assert {flag_name(f) for f in fields if f.name not in positional} <= set(flags)
    assert "a setting added later" in parser.format_help()


def test_profile_memory_builds_its_estimate_from_the_generated_flags():
    from rocmkit.profile.command import build_memory

    args = _parse(build_parser(), ["profile", "memory", "--preset", "gpt-tiny", "--micro-batch", "3",
                                   "--precision", "fp16", "--master-weights"])  # fmt: skip
    job = build_memory(args)
    assert (job.config.micro_batch, job.config.precision, job.config.master_weights) == (
        3,
        "fp16",
        True,
    )
    assert job.preset == "gpt-tiny" and not job.measure


def test_hipify_builds_its_request_from_the_generated_flags(tmp_path):
    from rocmkit.hipify.command import build

    source = tmp_path / "a.cu"
    source.write_text("int main() { cudaDeviceSynchronize(); }\n")
    args = _parse(build_parser(), ["hipify", str(source), "--no-runtime-include", "--ext", "cu",
                                   "--strict", "-j", "2", "--hip-version", "6.0"])  # fmt: skip
    request = build(args)
    assert request.strict and request.config.jobs == 2 and request.code_to_stdout
    assert request.config.options.add_runtime_include is False
    assert request.config.extensions == (".cu",) and request.config.want_text


# --- train: the run directory has one name (--out); the old spellings keep working -------------


def _train_job(argv: list[str]):
    from rocmkit.train.command import build

    return build(_parse(build_parser(), ["train", "--preset", "gpt-tiny", *argv]))


def test_run_dir_flag_still_works_with_a_note_naming_out(tmp_path):
    job = _train_job(["--run-dir", str(tmp_path / "old")])
    assert job.out == str(tmp_path / "old")
    assert len(job.notes) == 1 and "--run-dir" in job.notes[0] and "--out DIR" in job.notes[0]


def test_logging_run_dir_still_works_with_a_note_naming_out(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(f'[logging]\nrun_dir = "{tmp_path / "from-file"}"\n')
    job = _train_job(["--config", str(config)])
    assert job.out == str(tmp_path / "from-file")
    assert len(job.notes) == 1 and "logging.run_dir" in job.notes[0] and "--out" in job.notes[0]
    dotted = _train_job(["--logging.run_dir", str(tmp_path / "dotted")])
    assert dotted.out == str(tmp_path / "dotted") and "logging.run_dir" in dotted.notes[0]
    flag = _train_job(["--config", str(config), "--out", str(tmp_path / "flag")])
    assert flag.out == str(tmp_path / "flag") and flag.notes == ()  # --out wins, nothing to say
    plain = _train_job([])
    assert plain.out is None and plain.notes == ()  # the one default: runs/train-<UTC stamp>


def _count_reads(monkeypatch, path: Path) -> list[Path]:
    reads: list[Path] = []
    original = Path.read_bytes

    def counting(self: Path) -> bytes:
        if self.resolve() == path.resolve():
            reads.append(self)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    return reads


def test_train_reads_its_config_file_once(tmp_path, monkeypatch):
    config = tmp_path / "run.toml"
    config.write_text(f'[train]\nsteps = 3\n[logging]\nrun_dir = "{tmp_path / "r"}"\n')
    reads = _count_reads(monkeypatch, config)
    job = _train_job(["--config", str(config)])
    assert job.config.train.steps == 3 and job.out == str(tmp_path / "r")
    assert len(reads) == 1


def test_infer_reads_its_config_file_once(tmp_path, monkeypatch):
    from rocmkit.infer.command import settings_from_args

    config = tmp_path / "serve.toml"
    config.write_text('url = "http://127.0.0.1:1/v1"\nnum_prompts = 50\n')
    reads = _count_reads(monkeypatch, config)
    args = _parse(build_parser(), ["infer", "serve", "--config", str(config), "--num-prompts", "4"])
    settings = settings_from_args(args, "serve")
    assert settings.num_prompts == 4 and settings.url == "http://127.0.0.1:1/v1"  # the flag wins
    assert len(reads) == 1


# --- the import path of the command line ------------------------------------------------------


def _modules_after(code: str) -> dict[str, bool]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


CHECK = "; print(json.dumps({m: m in sys.modules for m in %r}))"


def test_doctor_explain_imports_neither_numpy_nor_torch(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: HIP error: invalid device function\n")
    code = (
        "import json, sys, contextlib, io\n"
        "from rocmkit.cli.main import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): main(['doctor', '--explain', {str(log)!r}])\n"
        + CHECK.strip("; ")
        % (["numpy", "torch"],)
    )
    assert _modules_after(code) == {"numpy": False, "torch": False}


def test_rocmkit_help_imports_no_config_module():
    modules = ["numpy", "torch", "rocmkit.infer.settings", "rocmkit.hipify", "rocmkit.port"]
    code = (
        "import json, sys, contextlib, io\n"
        "from rocmkit.cli.main import main\n"
        "from rocmkit.cli.main import build_parser\n"
        "with contextlib.redirect_stdout(io.StringIO()): build_parser().format_help()\n"
        + CHECK.strip("; ")
        % (modules,)
    )
    assert not any(_modules_after(code).values())


def test_json_prints_the_saved_document_for_a_generated_flag_command(tmp_path, capsys):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.cuda.get_device_name(0)\n")
    code = main(["port", str(project), "--show-info", "--fail-on", "never", "--json",
                 "--out", str(tmp_path / "run")])  # fmt: skip
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert printed == saved
    assert saved["config"]["fail_on"] == "never" and saved["config"]["show_info"] is True
