"""`--workload NAME` comes from a registry: the built-in kinds and other packages' entry points."""

from __future__ import annotations

import sys
import textwrap

import pytest
from stub_server import StubConfig, StubServer

from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.infer import workload_kinds as workloads
from rocmkit.infer.settings import ServeSettings
from rocmkit.results import load_result

URL = "http://127.0.0.1:9/v1"  # never contacted: these tests only make prompts

PACKAGE_MODULE = """
from rocmkit.infer.workload_kinds import WorkloadKind
from rocmkit.infer.workloads import Prompt, Workload


def make(settings, tokenizer):
    prompts = [
        Prompt(messages=({"role": "user", "content": f"question {i}"},), max_tokens=2)
        for i in range(settings.num_prompts)
    ]
    return Workload(name="fixed-questions", prompts=prompts, length_unit="words")


KIND = WorkloadKind(name="fixed-questions", description="numbered questions", make=make)
"""


@pytest.fixture
def package(monkeypatch, tmp_path):
    """An installed package (module + dist-info entry point) and a registry that has not yet
    read the entry points, as in a new process."""
    (tmp_path / "extprompts.py").write_text(textwrap.dedent(PACKAGE_MODULE))
    info = tmp_path / "extprompts-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extprompts\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[rocmkit.infer_workloads]\nfixed-questions = extprompts:KIND\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(workloads, "WORKLOADS", dict(workloads.WORKLOADS))
    monkeypatch.setattr(workloads, "_ENTRY_POINTS_LOADED", [])
    yield tmp_path
    sys.modules.pop("extprompts", None)


def test_a_packaged_workload_drives_a_serve_run(package, capsys):
    server = StubServer(StubConfig(ttft_s=0.01, itl_s=0.002)).start()
    try:
        argv = ["infer", "serve", "--url", server.base_url, "--model", "m"]
        out = package / "run"
        assert main([*argv, "--workload", "fixed-questions", "--num-prompts", "3",
                     "--out", str(out)]) == 0  # fmt: skip
    finally:
        server.stop()
    done = {m.metric: m.value for m in load_result(out).measurements}
    assert done["num_completed"] == 3
    assert load_result(out).measurements[0].params["workload"] == "fixed-questions"


def test_every_built_in_kind_is_registered_and_an_unknown_one_lists_them(package):
    assert list(workloads.workload_kinds()) == [
        "random",
        "jsonl",
        "sharegpt",
        "shared-prefix",
        "trace",
        "fixed-questions",
    ]
    with pytest.raises(UserError, match=r"choose from random, jsonl, .*fixed-questions"):
        workloads.make_workload(ServeSettings(url=URL, workload="nope"), None)


def test_options_another_kind_reads_are_refused_by_name(package):
    with pytest.raises(UserError, match=r"--prefix-groups applies to the random workload$"):
        workloads.make_workload(
            ServeSettings(url=URL, workload="fixed-questions", prefix_groups=2), None
        )
    with pytest.raises(UserError, match="--prefix-len applies to the random and shared-prefix"):
        workloads.make_workload(
            ServeSettings(url=URL, workload="fixed-questions", prefix_len=8), None
        )
