"""CUDA -> HIP source translation: `translate` (pure), `hipify_paths` (trees), `check_compiles` (hipcc).

No torch import here: PyTorch's mapping table is read lazily, only when torch is importable.
"""

from rocmkit.hipify.mappings import MappingTable, load_table
from rocmkit.hipify.translate import (
    Diagnostic,
    Edit,
    TranslateOptions,
    Translation,
    TranslationStats,
    translate,
)

__all__ = [
    "Diagnostic",
    "Edit",
    "MappingTable",
    "TranslateOptions",
    "Translation",
    "TranslationStats",
    "load_table",
    "translate",
]
