"""A bench suite from another package: one module plus an entry point, and no rocmkit file touched.

The package is faked the way pip installs one: a module and a `*.dist-info` folder with
`entry_points.txt` on the path. It must show in `rocmkit bench --help`, run with `--suite`, and
its rows must reach result.json, the report's table and the HTML plot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmkit.bench import suites
from rocmkit.errors import UserError

SRC = Path(__file__).resolve().parents[2] / "src"

SUITE_MODULE = """
from dataclasses import dataclass

from rocmkit.bench import Suite, register_suite
from rocmkit.report import SuiteLayout
from rocmkit.results import Measurement


@dataclass(kw_only=True)
class CopyConfig:
    sizes_kib: list[int]
    scale: float = 1.0


def run_copy(config, platform, sampler):
    return [
        Measurement(suite="ext-copy", name=f"copy {n} KiB", metric="gbps",
                    value=n * config.scale, unit="GB/s", params={"op": "copy", "size_kib": n})
        for n in config.sizes_kib
    ]


def plot_copy(runs, labels):
    from rocmkit.report.plots import line_plot

    return line_plot(runs, labels, suite="ext-copy", metric="gbps", x="size_kib",
                     xlabel="size (KiB)", ylabel="GB/s", title="External copy")


BENCH_SUITE = register_suite(Suite(
    name="ext-copy",
    description="a suite from another package",
    run=run_copy,
    config_type=CopyConfig,
    defaults=lambda platform, mode: {"sizes_kib": [1, 2, 4] if mode == "quick" else [1, 2, 4, 8]},
    num_figures=lambda config, platform: len(config.sizes_kib),
    layout=SuiteLayout(title="External copy suite", plot=plot_copy),
))
"""


def _fake_package(root: Path, module: str, entry: str, source: str = SUITE_MODULE) -> None:
    """What `pip install` leaves: the module and a dist-info folder naming its entry point."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[rocmkit.bench_suites]\n{entry}\n")


def _rocmkit(path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{path}{os.pathsep}{SRC}", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=path,
        timeout=120,
    )


@pytest.mark.slow
def test_a_suite_from_another_package_reaches_help_results_table_and_plot(tmp_path):
    _fake_package(tmp_path, "extcopy", "ext-copy = extcopy")
    helped = _rocmkit(tmp_path, "bench", "--help")
    assert helped.returncode == 0
    suite_line = " ".join(helped.stdout.split()).replace("- ", "-")  # argparse wraps at hyphens
    assert "burn-in, ext-copy (default: gemm,bandwidth,train-precision;" in suite_line

    run = tmp_path / "run"
    argv = ["bench", "--suite", "ext-copy", "--device", "cpu", "--no-power", "--out", str(run)]
    done = _rocmkit(tmp_path, *argv, "--suite_configs.ext_copy.scale", "2")
    assert done.returncode == 0, done.stderr
    saved = json.loads((run / "result.json").read_text())
    rows = [m for m in saved["measurements"] if m["suite"] == "ext-copy"]
    assert [(m["name"], m["value"]) for m in rows] == [
        ("copy 1 KiB", 2.0),
        ("copy 2 KiB", 4.0),
        ("copy 4 KiB", 8.0),
    ]
    assert saved["config"]["suite_configs"]["ext_copy"] == {"sizes_kib": [1, 2, 4], "scale": 2.0}
    assert "External copy suite" in done.stdout  # the command's own table

    table = _rocmkit(tmp_path, "report", str(run), "--format", "md")
    assert table.returncode == 0, table.stderr
    assert "External copy suite" in table.stdout and "| copy 4 KiB | 8.00 |" in table.stdout
    html = tmp_path / "report.html"
    drawn = _rocmkit(tmp_path, "report", str(run), "-o", str(html))
    assert drawn.returncode == 0, drawn.stderr
    assert 'alt="ext-copy plot" src="data:image/png;base64,' in html.read_text()


@pytest.mark.slow
def test_rocmkit_help_does_not_load_suites(tmp_path):
    """The registry loads when bench needs it, not for every command's parser."""
    _fake_package(tmp_path, "extcopy", "ext-copy = extcopy")
    probe = (
        "import sys\nfrom rocmkit.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED' if {'extcopy', 'rocmkit.bench.gemm'} & set(sys.modules) else 'LAZY')\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{SRC}"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "LAZY", done.stderr


@pytest.fixture
def fresh_registry(monkeypatch, tmp_path):
    """The registry as a new process finds it, with `tmp_path` on the path; undone afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(suites, "SUITES", {})
    monkeypatch.setattr(suites, "_DISCOVERED", [])
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("extobj") or name.startswith("extbroken"):
            del sys.modules[name]


def test_an_entry_point_may_name_the_suite_object_and_runs_after_the_built_ins(fresh_registry):
    source = SUITE_MODULE.replace("BENCH_SUITE = register_suite(", "SUITE_OBJECT = (")
    _fake_package(fresh_registry, "extobj", "ext-copy = extobj:SUITE_OBJECT", source)
    names = list(suites.discovered())
    assert names == [
        "gemm",
        "bandwidth",
        "collectives",
        "attention",
        "train-precision",
        "links",
        "burn-in",
        "ext-copy",
    ]
    assert suites.default_suites("quick") == ["gemm", "bandwidth", "train-precision"]
    assert "ext-copy" in suites.suite_help()
    from rocmkit.report.layouts import suite_title

    assert suite_title("ext-copy") == "External copy suite"


def test_a_broken_entry_point_is_a_one_line_error_naming_the_package(fresh_registry):
    _fake_package(fresh_registry, "extbroken", "broken = extbroken", "import no_such_module_x\n")
    with pytest.raises(UserError, match=r"package 'extbroken' adds rocmkit.bench_suites entry "):
        suites.get_suite("gemm")
    with pytest.raises(UserError, match="uninstall"):
        suites.BenchConfig(suites=["gemm"])


def test_a_packaged_suite_named_like_a_built_in_one_is_refused(fresh_registry):
    source = SUITE_MODULE.replace('name="ext-copy"', 'name="gemm"')
    _fake_package(fresh_registry, "extobj", "fast-gemm = extobj", source)
    with pytest.raises(UserError, match="entry point 'fast-gemm' is called 'gemm'"):
        suites.get_suite("bandwidth")
