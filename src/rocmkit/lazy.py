"""Package names loaded on first use (PEP 562 `__getattr__`), so that importing a package such as
`rocmkit.train` or `rocmkit.bench` imports neither torch nor numpy: the CLI declares its flags
from these packages and `rocmkit --help` must stay fast."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: `names` maps a public name to the module defining
    it; the first access imports that module and keeps the value in the package."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
