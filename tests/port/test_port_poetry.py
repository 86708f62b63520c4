"""Poetry's dependency tables are read with their versions (Poetry's own constraint definitions),
so `torch = "^1.7.0"` is the pin that keeps a ROCm torch 2.x out, found at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.port import PortConfig, scan_project
from rocmkit.port.poetry_constraints import requirement, specifier_set

# The examples of Poetry's "Dependency specification" page: constraint -> allowed versions.
POETRY_DOCS = (
    ("^1.2.3", ">=1.2.3,<2"),
    ("^1.2", ">=1.2,<2"),
    ("^1", ">=1,<2"),
    ("^0.2.3", ">=0.2.3,<0.3"),
    ("^0.0.3", ">=0.0.3,<0.0.4"),
    ("^0.0", ">=0.0,<0.1"),
    ("^0", ">=0,<1"),
    ("~1.2.3", ">=1.2.3,<1.3"),
    ("~1.2", ">=1.2,<1.3"),
    ("~1", ">=1,<2"),
    ("*", ""),
    ("1.*", ">=1,<2"),
    ("1.2.*", ">=1.2,<1.3"),
    (">= 1.2.0", ">=1.2.0"),
    (">= 1.2, < 1.5", ">=1.2,<1.5"),
    ("!=1.2.3", "!=1.2.3"),
    ("1.2.3", "==1.2.3"),  # a bare version is exact
    ("==1.2.3", "==1.2.3"),
    ("~=1.2", "~=1.2"),
)


@pytest.mark.parametrize(("constraint", "pep440"), POETRY_DOCS)
def test_poetry_constraints_translate_by_poetrys_definition(constraint: str, pep440: str) -> None:
    assert specifier_set(constraint) == pep440


def test_constraints_pep_508_cannot_write_give_the_name_alone() -> None:
    assert specifier_set("^1.2 || ^2.0") is None
    assert requirement("torch", "^1.2 || ^2.0") == "torch"
    assert requirement("torch", [{"version": "^2", "platform": "linux"}]) == "torch"
    assert requirement("mylib", {"git": "https://github.com/x/mylib.git"}) == "mylib"
    assert (
        requirement("torch", {"version": "^2.1", "extras": ["cu"], "platform": "linux"})
        == 'torch[cu]>=2.1,<3; sys_platform == "linux"'
    )


PYPROJECT = """\
[tool.poetry]
name = "pointclouds"

[tool.poetry.dependencies]
python = "^3.8"
torchnet = "^0.0.4"
torch = "^1.7.0"
numpy = "<1.20.0"

[tool.poetry.group.dev.dependencies]
pytest = "^7"
"""


def test_a_caret_pin_that_excludes_torch_2_is_found_at_its_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    findings = scan_project(PortConfig(path=tmp_path / "pyproject.toml")).findings
    pins = [f for f in findings if f.rule_id == "torch-pypi-pin"]
    assert [(f.line, f.severity) for f in pins] == [(7, "warn")]
    assert "torch>=1.7.0,<2" in pins[0].evidence


def test_a_caret_range_a_rocm_torch_satisfies_is_no_finding(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.replace('"^1.7.0"', '"^2.4"'))
    findings = scan_project(PortConfig(path=tmp_path / "pyproject.toml")).findings
    assert not [f for f in findings if f.rule_id == "torch-pypi-pin"]
