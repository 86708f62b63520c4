"""Profile AI work: traces and their summary, memory monitoring, a memory estimator, hints."""

from rocmkit.measure.memory import CategoryPeaks, MemoryMonitor, MemoryTimeline, measure_step_memory
from rocmkit.profile.categories import CATEGORIES, CATEGORY_RULES, categorise
from rocmkit.profile.estimator import EstimateConfig, MemoryEstimate, ModelShape, estimate
from rocmkit.profile.hints import Hint, HintInputs, hints
from rocmkit.profile.summary import TraceSummary, load_trace, summarize_trace
from rocmkit.profile.trace import ProfileSchedule, StepProfiler, profile_steps

__all__ = [
    "CATEGORIES",
    "CATEGORY_RULES",
    "CategoryPeaks",
    "EstimateConfig",
    "Hint",
    "HintInputs",
    "MemoryEstimate",
    "MemoryMonitor",
    "MemoryTimeline",
    "ModelShape",
    "ProfileSchedule",
    "StepProfiler",
    "TraceSummary",
    "categorise",
    "estimate",
    "hints",
    "load_trace",
    "measure_step_memory",
    "profile_steps",
    "summarize_trace",
]
