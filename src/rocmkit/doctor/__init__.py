"""`rocmkit doctor`: a registry of environment checks, each returning a Finding with the fix,
and an explainer that matches pasted logs against known ROCm/CUDA failure signatures."""

from rocmkit.doctor.context import DoctorContext, TorchFacts
from rocmkit.doctor.explain import Explanation, explain
from rocmkit.doctor.findings import DoctorReport, Finding
from rocmkit.doctor.registry import all_checks, register, run_checks

__all__ = [
    "DoctorContext",
    "DoctorReport",
    "Explanation",
    "Finding",
    "TorchFacts",
    "all_checks",
    "explain",
    "register",
    "run_checks",
]
