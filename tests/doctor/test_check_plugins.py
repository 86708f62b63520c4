"""Doctor checks from other packages: a module named by the `rocmkit.doctor_checks` entry point
group registers its checks, which run and report like the built-in ones."""

from __future__ import annotations

import json
import sys

import pytest

from rocmkit.cli.main import main
from rocmkit.doctor import registry
from rocmkit.errors import UserError

CHECK_MODULE = """
from rocmkit.doctor import Finding, register


@register("{check_id}", "Site policy: scratch space", order=990)
def scratch(ctx):
    return Finding(id="{check_id}", status="warn", summary="no /scratch here",
                   fix="ask the admins for a scratch volume")
"""


def _install(root, module: str, check_id: str) -> None:
    (root / f"{module}.py").write_text(CHECK_MODULE.format(check_id=check_id))
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[rocmkit.doctor_checks]\nsite = {module}\n")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A registry that has not read the entry points yet, as in a new process; undone after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "CHECKS", dict(registry.all_checks()))
    monkeypatch.setattr(registry, "_ENTRY_POINTS_LOADED", [])
    yield tmp_path
    for name in ("extsite", "extclash"):
        sys.modules.pop(name, None)


def test_a_packaged_check_is_listed_and_runs_last(fresh, capsys):
    _install(fresh, "extsite", "site-scratch")
    assert list(registry.all_checks())[-1] == "site-scratch"
    assert main(["doctor", "--list"]) == 0
    assert "site-scratch" in capsys.readouterr().out
    assert main(["doctor", "--check", "site-scratch", "--json"]) == 0
    (finding,) = json.loads(capsys.readouterr().out)["data"]["findings"]
    assert (finding["id"], finding["status"]) == ("site-scratch", "warn")


def test_a_check_named_like_a_built_in_one_is_refused_by_name(fresh):
    _install(fresh, "extclash", "container")
    with pytest.raises(UserError, match="two doctor checks are called 'container'"):
        registry.all_checks()
