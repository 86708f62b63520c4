"""Issue 26, session seventeen: each change, with a case where the finding must appear and one where
it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- a compose device reservation written as a Python dict ------------------------------------------

_COMPOSE = """import yaml


def service(image, gpus):
    config = {"image": image}
    if gpus:
        config["deploy"] = {
            "resources": {
                "reservations": {
                    "devices": [
                        {
                            "driver": "nvidia",
                            "count": gpus,
                            "capabilities": ["gpu"],
                        }
                    ]
                }
            }
        }
    return yaml.safe_dump({"services": {"model": config}})
"""


def test_a_generated_compose_reservation_for_the_nvidia_driver_is_an_error(
    tmp_path: Path,
) -> None:
    # compose-spec's device reservation: `driver: nvidia` names NVIDIA's container driver, which
    # an AMD host does not have, whether the file is written by hand or by the project's code.
    report = _scan(tmp_path, {"compose_gen.py": _COMPOSE})
    assert _found(report, "container-nvidia-gpu") == {("compose_gen.py", 12): "error"}
    (finding,) = [f for f in report.findings if f.rule_id == "container-nvidia-gpu"]
    assert "compose device reservation" in finding.evidence
    assert "/dev/kfd" in finding.fix


def test_a_dict_of_the_projects_own_with_a_driver_key_is_not_a_reservation(
    tmp_path: Path,
) -> None:
    # A "driver" key alone (a database or display driver setting) is not compose's reservation.
    source = 'SETTINGS = {"driver": "nvidia", "display": ":0"}\n'
    report = _scan(tmp_path, {"settings.py": source})
    assert _found(report, "container-nvidia-gpu") == {}
    # ...nor is the AMD driver's reservation.
    amd = _COMPOSE.replace('"driver": "nvidia"', '"driver": "amd"')
    assert _found(_scan(tmp_path / "amd", {"compose_gen.py": amd}), "container-nvidia-gpu") == {}


# -- the Triton warp-count look before a module's tree is parsed ---------------------------------

_BLOCK_LOOPS = """import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BT": BT}, num_warps=num_warps)
        for BT in [16, 32, 64]
        for num_warps in [2, 4, 8]
    ],
    key=["K"],
)
@triton.jit
def kernel(x, K: tl.constexpr, BT: tl.constexpr):
    pass


def launch(x, K, BT):
    kernel[(1,)](x, K, num_warps=8 if BT == 128 else 4)
"""


def test_block_size_loops_and_compared_sizes_do_not_make_a_module_a_warp_candidate() -> None:
    from rocmkit.port import triton_warps

    # 16/32/64 are block sizes and 128 is compared with: no warp count over 16 is written.
    assert not triton_warps.may_have(_BLOCK_LOOPS)
    # A warp loop (a count of 8 or fewer first) and a 32 given as num_warps still are.
    assert triton_warps.may_have(_BLOCK_LOOPS.replace("in [2, 4, 8]", "in [2, 4, 8, 16, 32]"))
    assert triton_warps.may_have(_BLOCK_LOOPS.replace("8 if BT == 128", "32 if BT == 128"))
    # A module that looks at ROCm holds no place: nothing to parse for.
    rocm = _BLOCK_LOOPS.replace("in [2, 4, 8]", "in [4, 32]") + "IS_HIP = False\n"
    assert not triton_warps.may_have(rocm)


def test_a_32_warp_config_loop_and_a_32_warp_launch_are_still_found(tmp_path: Path) -> None:
    source = """import triton


def configs():
    return [
        triton.Config({"BT": BT}, num_warps=w)
        for BT in [16, 32, 64]
        for w in [4, 8, 16, 32]
    ]


def launch(kernel, x, BT):
    kernel[(1,)](x, num_warps=32 if BT == 128 else 4)
"""
    report = _scan(tmp_path, {"kernel.py": source})
    found = _found(report, "triton-num-warps-32")
    assert found == {("kernel.py", 8): "warn", ("kernel.py", 13): "error"}, found


# -- a package that setuptools' package-dir maps onto the project folder --------------------------

_FA4_PYPROJECT = """[project]
name = "flash-attn-4"
version = "4.0.0"

[tool.setuptools]
packages = ["flash_attn.cute"]
package-dir = {"flash_attn.cute" = "."}
"""


def test_imports_of_the_package_the_project_folder_installs_are_its_own(tmp_path: Path) -> None:
    # FlashAttention 4's sdist is flash_attn.cute laid out at the root: its modules import each
    # other as flash_attn.cute.*, which is the project itself, not a dependency to replace.
    files = {
        "pyproject.toml": _FA4_PYPROJECT,
        "__init__.py": "from .interface import flash_attn_func\n",
        "interface.py": "from flash_attn.cute.utils import helper\n\n\ndef flash_attn_func():\n"
        "    return helper()\n",
        "utils.py": "def helper():\n    return 1\n",
    }
    assert _found(_scan(tmp_path / "mapped", files), "flash-attn-cute") == {}
    # Without the mapping the same import is of another distribution's flash_attn.cute.
    unmapped = {**files, "pyproject.toml": '[project]\nname = "other"\nversion = "1"\n'}
    assert ("interface.py", 1) in _found(_scan(tmp_path / "plain", unmapped), "flash-attn-cute")


def test_setup_py_package_dir_onto_the_root_counts_too(tmp_path: Path) -> None:
    from rocmkit.port.setup_static import root_packages

    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n\nsetup(name='paddleclas', package_dir={'paddleclas': ''})\n"
    )
    assert root_packages(str(tmp_path)) == {"paddleclas"}
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n\nsetup(package_dir={'': 'src'})\n"
    )
    assert root_packages(str(tmp_path)) == set()
