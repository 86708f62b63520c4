"""Issue 26, session twenty-eight: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- CUDA libraries linked by name: the driver (libcuda) and torch's JIT builds


def test_the_cuda_driver_linked_by_an_extension_build_is_cuda_extension(tmp_path: Path) -> None:
    setup = (
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "setup(name='lap', ext_modules=[CUDAExtension('lap._C', ['csrc/lap.cu'],\n"
        "    extra_link_args=['-lcuda'])], cmdclass={'build_ext': BuildExtension})\n"
    )
    found = _scan(tmp_path, {"setup.py": setup})
    # the extension itself is info (torch hipifies it); the library it links is not there
    assert _found(found, "cuda-extension") == {("setup.py", 3): "info", ("setup.py", 4): "error"}


def test_cuda_libraries_a_jit_build_links_are_cuda_extension(tmp_path: Path) -> None:
    # torch.utils.cpp_extension.load() links what extra_ldflags names, also through a variable
    # and a keyword dictionary; ROCm has no libcusparse, libcublas or libcuda
    jit = (
        "import os\n"
        "from torch.utils.cpp_extension import load\n"
        "spmm = load(name='spmm', sources=['spmm.cu'], extra_ldflags=['-lcusparse'])\n"
        "flags = [f\"-L{os.environ['CUDA_LIB']}\", '-lcublas']\n"
        "gemm = load(name='gemm', sources=['gemm.cu'], extra_ldflags=flags)\n"
        "args = {'verbose': True, 'extra_ldflags': ['-lcuda']}\n"
        "drv = load(name='drv', sources=['drv.cu'], **args)\n"
    )
    found = _scan(tmp_path, {"pkg/ops.py": jit})
    assert _found(found, "cuda-extension") == {
        ("pkg/ops.py", 3): "error",
        ("pkg/ops.py", 4): "error",
        ("pkg/ops.py", 6): "error",
    }


def test_a_jit_build_with_a_rocm_side_or_a_cuda_device_string_is_not_flagged(
    tmp_path: Path,
) -> None:
    with_hip = (
        "import torch\n"
        "from torch.utils.cpp_extension import load\n"
        "flags = [] if torch.version.hip else ['-lcublas']\n"
        "ops = load(name='ops', sources=['ops.cu'], extra_ldflags=flags)\n"
    )
    device = (
        "import torch\n"
        "from torch.utils.cpp_extension import load\n"
        "ops = load(name='ops', sources=['ops.cpp'], extra_ldflags=['-lm'])\n"
        "x = torch.zeros(3, device='cuda')\n"
    )
    found = _scan(tmp_path, {"a/ops.py": with_hip, "b/ops.py": device})
    assert _found(found, "cuda-extension") == {}
