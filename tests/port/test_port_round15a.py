"""Issue 26, fifteenth round (a): one finding per CUDA-only import that a package's own
__init__.py reaches (Python's import system runs a package's __init__ before any module below
it, and a module-level import runs what it names). Each case where it applies beside one where
it must not, on small synthetic trees written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port import PortFinding, PortReport

_KERNEL = "import cutlass\nimport cutlass.cute as cute\n\n\ndef kernel():\n    return cute\n"


def _by_place(report: PortReport, rule: str = "cutlass-dsl") -> dict[str, PortFinding]:
    return {f.path: f for f in report.findings if f.rule_id == rule}


def test_a_package_whose_init_reaches_the_dsl_reports_it_once(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "kern/__init__.py": "from kern.norm import norm\nfrom .softmax import softmax\n",
            "kern/norm.py": "import math\n\n" + _KERNEL + "norm = kernel\n",
            "kern/softmax.py": _KERNEL + "softmax = kernel\n",
            "kern/gemm.py": "import torch\n" + _KERNEL,
            "kern/sort/bitonic.py": _KERNEL,  # a namespace folder inside the package
            "tests/test_norm.py": _KERNEL + "from kern import norm\n",
            "tests/test_plain.py": _KERNEL,  # never imports kern: its own import stands
        },
    )
    found = _by_place(report)
    anchor = found["kern/norm.py"]
    assert (anchor.severity, anchor.line) == ("error", 3)
    assert "`import kern` reaches it; 3 more modules of kern" in anchor.evidence
    assert "1 that import kern" in anchor.evidence
    for path in ("kern/softmax.py", "kern/gemm.py", "kern/sort/bitonic.py", "tests/test_norm.py"):
        assert found[path].severity == "info", path
        assert found[path].note == "`import kern` already needs cutlass: reported at kern/norm.py:3"
    assert found["tests/test_plain.py"].severity == "error"


def test_the_anchor_is_the_nearest_module_to_the_init(tmp_path: Path) -> None:
    # helpers is imported first but reaches the DSL one step further than norm does
    report = _scan(
        tmp_path,
        {
            "kern/__init__.py": "import kern.helpers\nfrom kern import norm\n",
            "kern/helpers.py": "from kern.deep import x\n",
            "kern/deep.py": _KERNEL + "x = 1\n",
            "kern/norm.py": _KERNEL,
        },
    )
    found = _by_place(report)
    assert found["kern/norm.py"].severity == "error"
    assert found["kern/deep.py"].severity == "info"
    assert "kern/norm.py:1" in found["kern/deep.py"].note


def test_nothing_is_grouped_where_the_init_does_not_reach_it(tmp_path: Path) -> None:
    # an empty __init__ (each module is its own entry point), an import under try/except
    # ImportError and one inside a function: none of them runs with `import kern`
    report = _scan(
        tmp_path,
        {
            "kern/__init__.py": (
                "try:\n    from kern import norm\nexcept ImportError:\n    norm = None\n\n"
                "def load():\n    from kern import softmax\n    return softmax\n"
            ),
            "kern/norm.py": _KERNEL,
            "kern/softmax.py": _KERNEL,
            "kern/gemm.py": _KERNEL,
        },
    )
    found = _by_place(report)
    assert {found[p].severity for p in ("kern/norm.py", "kern/softmax.py", "kern/gemm.py")} == {
        "error"
    }
    assert not any("reaches it" in f.evidence for f in found.values())


def test_an_import_in_a_function_keeps_its_finding(tmp_path: Path) -> None:
    lazy = "def build():\n    import cutlass\n    return cutlass\n"
    report = _scan(
        tmp_path,
        {
            "kern/__init__.py": "from . import norm\n",
            "kern/norm.py": _KERNEL,
            "kern/gemm.py": _KERNEL,
            "kern/config.py": lazy,
        },
    )
    found = _by_place(report)
    assert found["kern/norm.py"].severity == "error"
    assert found["kern/gemm.py"].severity == "info"
    assert found["kern/config.py"].severity == "error"  # runs only when build() is called


def test_another_rule_or_module_is_its_own_fact(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "kern/__init__.py": "from . import norm\n",
            "kern/norm.py": _KERNEL,
            "kern/launch.py": "import cuda.bindings.driver as cuda\n",
            "kern/launch2.py": "import cuda.bindings.driver as cuda\n",
        },
    )
    assert _by_place(report)["kern/norm.py"].severity == "error"
    bindings = _by_place(report, "cuda-python")
    assert {f.severity for f in bindings.values()} == {"error"}  # the __init__ never reaches them
