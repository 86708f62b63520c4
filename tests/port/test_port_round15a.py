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


# -- PTX text handed to an inline-asm call ---------------------------------------------------------

_TRITON_PTX = """import triton
import triton.language as tl


@triton.jit
def rint(x):
    return tl.inline_asm_elementwise(
        "cvt.rni.f32.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1
    )
"""

_MLIR_PTX = """from cutlass._mlir.dialects import llvm

_ASM = "{.reg .pred p;\\n setp.eq.f16x2 p, $1, $2;\\n selp.f32 $0, $3, $4, p;}"


def select(a, b, c, d, T):
    return llvm.inline_asm(T.f32(), [a, b, c, d], _ASM, "=f,r,r,f,f", has_side_effects=False)
"""

_AMD_ASM = """import triton.language as tl


def fast_exp(x):
    return tl.inline_asm_elementwise("v_exp_f32 $0, $1", "=v,v", [x], dtype=tl.float32,
                                     is_pure=True, pack=1)
"""

_GATED_PTX = """import triton
import triton.language as tl


@triton.jit
def exp2(x):
    if tl.target_info.is_cuda():
        return tl.inline_asm_elementwise(
            "ex2.approx.ftz.f32 $0, $1;", "=r, r", [x], dtype=tl.float32, is_pure=True, pack=1
        )
    else:
        return tl.exp2(x)
"""


def test_ptx_in_a_triton_or_mlir_inline_asm_call_is_an_error(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops/rint.py": _TRITON_PTX, "ops/select.py": _MLIR_PTX})
    found = _by_place(report, "python-inline-ptx")
    assert (found["ops/rint.py"].line, found["ops/rint.py"].severity) == (7, "error")
    assert "cvt.rni.f32.f32" in found["ops/rint.py"].evidence
    # the asm text is a name bound to a string in the module
    assert (found["ops/select.py"].line, found["ops/select.py"].severity) == (7, "error")
    assert ".reg .pred p" in found["ops/select.py"].evidence


def test_amdgpu_asm_and_ptx_behind_a_cuda_target_test_are_not_errors(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops/amd.py": _AMD_ASM, "ops/act.py": _GATED_PTX})
    found = _by_place(report, "python-inline-ptx")
    assert "ops/amd.py" not in found  # AMDGPU instructions are not PTX
    assert found["ops/act.py"].severity == "info"
    assert "gated" in found["ops/act.py"].evidence


def test_ptx_in_an_opt_in_back_end_follows_its_extra(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "attn"\ndependencies = ["torch"]\n\n'
        '[project.optional-dependencies]\ncute = ["nvidia-cutlass-dsl>=4.1"]\n'
    )
    backend = "import cutlass\n" + _MLIR_PTX
    report = _scan(
        tmp_path,
        {"pyproject.toml": pyproject, "attn/__init__.py": "", "attn/kernels/ops.py": backend},
    )
    found = _by_place(report, "python-inline-ptx")["attn/kernels/ops.py"]
    assert found.severity == "info"
    assert "opt-in back end" in found.note
    # the same module in a package whose base install requires the DSL: the PTX is its own fact
    report = _scan(
        tmp_path / "base",
        {
            "pyproject.toml": pyproject.replace('["torch"]', '["torch", "nvidia-cutlass-dsl"]'),
            "attn/__init__.py": "from . import ops\n",
            "attn/ops.py": backend,
            "attn/more.py": "import cutlass\n",
        },
    )
    assert _by_place(report, "python-inline-ptx")["attn/ops.py"].severity == "error"
    assert _by_place(report)["attn/more.py"].severity == "info"  # grouped at attn/ops.py


# -- a uv source selected by an extra's marker -----------------------------------------------------

_UV_INDEX = """[project]
name = "kern"
dependencies = ["torch"]

[project.optional-dependencies]
cu13 = ["nvidia-cutlass-dsl[cu13]>=4.7"]

[[tool.uv.index]]
name = "pytorch-cu130"
url = "https://download.pytorch.org/whl/cu130"
explicit = true

[tool.uv.sources]
torch = [{ index = "pytorch-cu130", marker = "MARKER" }]
"""


def test_an_explicit_index_selected_by_an_nvidia_extras_marker_is_info(tmp_path: Path) -> None:
    text = _UV_INDEX.replace("MARKER", "extra == 'cu13'")
    report = _scan(tmp_path, {"pyproject.toml": text})
    found = _by_place(report, "torch-cuda-index")["pyproject.toml"]
    assert (found.line, found.severity) == (10, "info")
    assert "NVIDIA extra cu13" in found.evidence


def test_an_explicit_index_selected_by_a_platform_marker_stays(tmp_path: Path) -> None:
    text = _UV_INDEX.replace("MARKER", "sys_platform == 'linux'")  # every Linux install uses it
    report = _scan(tmp_path, {"pyproject.toml": text})
    assert _by_place(report, "torch-cuda-index")["pyproject.toml"].severity == "error"


def test_the_closure_follows_relative_imports_in_a_src_layout(tmp_path: Path) -> None:
    # src/kern/__init__.py -> .ops (a subpackage) -> ..norm (two levels up): `import kern` needs
    # the DSL at kern/norm.py; kern/gemm.py's import is a repeat
    report = _scan(
        tmp_path,
        {
            "src/kern/__init__.py": "from . import ops\n",
            "src/kern/ops/__init__.py": "from ..norm import norm\n",
            "src/kern/norm.py": _KERNEL + "norm = kernel\n",
            "src/kern/gemm.py": _KERNEL,
            "tests/test_gemm.py": "import cutlass\nimport kern.gemm\n",
        },
    )
    found = _by_place(report)
    assert found["src/kern/norm.py"].severity == "error"
    assert found["src/kern/gemm.py"].severity == "info"
    assert found["tests/test_gemm.py"].severity == "info"  # loading it runs kern first
    assert "reported at src/kern/norm.py:1" in found["tests/test_gemm.py"].note


def test_a_fifo_named_like_a_module_of_the_package_is_not_waited_on(tmp_path: Path) -> None:
    # the import walk reads the modules `import kern` runs; a FIFO named kern/slow.py (refused
    # unread by the scan) must not make that walk wait for a writer
    import os
    import threading

    (tmp_path / "kern").mkdir()
    os.mkfifo(tmp_path / "kern" / "slow.py")
    files = {
        "kern/__init__.py": "from . import slow\nfrom .norm import norm\n",
        "kern/norm.py": _KERNEL + "norm = kernel\n",
        "kern/gemm.py": _KERNEL,
    }
    done: list[PortReport] = []
    worker = threading.Thread(target=lambda: done.append(_scan(tmp_path, files)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert done, "the import walk waited on a FIFO"
    found = _by_place(done[0])
    assert found["kern/norm.py"].severity == "error"  # the module `import kern` reaches
    assert found["kern/gemm.py"].severity == "info"
