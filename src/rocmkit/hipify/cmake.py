"""Notes for CMake files that build CUDA: what to change for HIP (reported, never rewritten).

CMake >= 3.21 has first-class HIP support: `enable_language(HIP)`, `.hip` sources (or
`set_source_files_properties(... LANGUAGE HIP)`), `CMAKE_HIP_ARCHITECTURES` and `find_package(hip)`.
"""

from __future__ import annotations

import re
from pathlib import Path

from rocmkit.hipify.lexer import LineIndex
from rocmkit.hipify.translate import Diagnostic

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\bfind_package\s*\(\s*CUDA\b", re.IGNORECASE),
        "find_package(CUDA) is the deprecated FindCUDA module: use enable_language(HIP) "
        "and find_package(hip REQUIRED), link hip::device / hip::host",
    ),
    (
        re.compile(r"\bfind_package\s*\(\s*CUDAToolkit\b", re.IGNORECASE),
        "find_package(CUDAToolkit): use find_package(hip) plus hipblas/hiprand/... packages "
        "(CUDA::cublas -> roc::hipblas, CUDA::cudart -> hip::host)",
    ),
    (
        re.compile(r"\benable_language\s*\(\s*CUDA\b|\bproject\s*\([^)]*\bCUDA\b", re.IGNORECASE),
        "CUDA language enabled: use enable_language(HIP) (CMake >= 3.21) and mark sources "
        "LANGUAGE HIP or rename them to .hip",
    ),
    (
        re.compile(r"\bCUDA_ARCHITECTURES\b|\bCMAKE_CUDA_ARCHITECTURES\b"),
        "CUDA_ARCHITECTURES lists sm_XX targets: use HIP_ARCHITECTURES / CMAKE_HIP_ARCHITECTURES "
        "with gfx targets (e.g. gfx90a;gfx942)",
    ),
    (
        re.compile(r"\bcuda_add_(?:executable|library)\s*\(", re.IGNORECASE),
        "cuda_add_executable/cuda_add_library come from FindCUDA: use add_executable/add_library "
        "with LANGUAGE HIP sources",
    ),
    (
        re.compile(r"\bCMAKE_CUDA_FLAGS\b|\bCUDA_NVCC_FLAGS\b"),
        "nvcc flags: move them to CMAKE_HIP_FLAGS (hipcc/clang spelling, e.g. -O3 --offload-arch)",
    ),
)


def is_cmake_file(path: Path) -> bool:
    return path.name == "CMakeLists.txt" or path.name.endswith(".cmake")


def cmake_notes(text: str) -> list[Diagnostic]:
    """One `note` diagnostic per CUDA-specific construct in a CMake file."""
    index = LineIndex(text)
    notes = []
    for pattern, message in _RULES:
        for match in pattern.finditer(text):
            line, column = index.position(match.start())
            notes.append(Diagnostic("note", line, column, match.group(), "cmake", message))
    return sorted(notes, key=lambda note: (note.line, note.column))


# Macros the build defines: `-DNAME[=value]` in flags, and the arguments of the
# *_compile_definitions / add_definitions commands (a target's name and its scope keywords aside).
_FLAG_DEFINITION = re.compile(r"(?<![\w$])-D[ \t]*([A-Za-z_]\w*)")
_DEFINITIONS_COMMAND = re.compile(
    r"\b(target_compile_definitions|add_compile_definitions)\s*\(([^)]*)\)", re.IGNORECASE
)
_SCOPES = frozenset({"PUBLIC", "PRIVATE", "INTERFACE"})


def cmake_definitions(text: str) -> set[str]:
    """The macro names a CMake file defines for the compiler (`-DCUDA_ARCH=61`,
    `add_compile_definitions(USE_CUDA)`): the project's own, not CUDA's."""
    names = set(_FLAG_DEFINITION.findall(text))
    for command, arguments in _DEFINITIONS_COMMAND.findall(text):
        words = arguments.split()
        if command.lower() == "target_compile_definitions":
            words = words[1:]
        for word in words:
            name = re.match(r"[A-Za-z_]\w*", word.strip("\"'"))
            if name is not None and name.group() not in _SCOPES:
                names.add(name.group())
    return names
