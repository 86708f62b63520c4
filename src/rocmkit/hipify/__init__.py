"""CUDA -> HIP source translation: `translate` (pure), `hipify_paths` (trees), `check_compiles` (hipcc).

No torch import here: PyTorch's mapping table is read lazily, only when torch is installed.
"""

from rocmkit.hipify.arch import arch_table
from rocmkit.hipify.check import CompileResult, check_compiles
from rocmkit.hipify.hazards import find_hazards
from rocmkit.hipify.mappings import MappingTable, load_table
from rocmkit.hipify.project import FileResult, HipifyConfig, HipifyReport, hipify_paths
from rocmkit.hipify.toolkit import header_verdicts
from rocmkit.hipify.translate import (
    Diagnostic,
    Edit,
    TranslateOptions,
    Translation,
    TranslationStats,
    amd_dead_branches,
    hazard_diagnostics,
    translate,
)
from rocmkit.hipify.versions import LATEST as LATEST_HIP_VERSION

__all__ = [
    "LATEST_HIP_VERSION",
    "CompileResult",
    "Diagnostic",
    "Edit",
    "FileResult",
    "HipifyConfig",
    "HipifyReport",
    "MappingTable",
    "TranslateOptions",
    "Translation",
    "TranslationStats",
    "amd_dead_branches",
    "arch_table",
    "check_compiles",
    "find_hazards",
    "hazard_diagnostics",
    "header_verdicts",
    "hipify_paths",
    "load_table",
    "translate",
]
