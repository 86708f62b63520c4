"""A pure summary of a torch.profiler trace: categories, idle gaps, top operators, launches.

The input is the event list of the Chrome trace torch.profiler exports (the same input Holistic
Trace Analysis reads), so it is tested on hand-written traces too. With device kernels in the trace
it summarises the device timeline (kernel time, idle gaps between kernels); without (a CPU run) it
summarises host operators by self time, and the gaps are host time spent outside any operator
(Python, data loading).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError
from rocmkit.profile.categories import CATEGORIES, CATEGORY_RULES, categorise, sdpa_backend
from rocmkit.results import Measurement

IDLE = "idle"
_DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
_HOST_CATS = frozenset({"cpu_op"})
_STEP_PREFIX = "ProfilerStep#"
# torch.utils.data.DataLoader annotates "enumerate(DataLoader)#...__next__"; rocmkit's loop may
# annotate its DataSource.get_batch calls.
_DATA_PATTERN = re.compile(r"DataLoader|get_batch|data_loading", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class OpStat:
    name: str  # in full, as the trace has it (JSON keeps it)
    category: str
    self_time_us: float
    count: int

    @property
    def short_name(self) -> str:
        return short_kernel_name(self.name)


SHORT_NAME_CHARS = 80


def short_kernel_name(name: str, max_chars: int = SHORT_NAME_CHARS) -> str:
    """A demangled kernel name as profilers show it: `void`, the parameter list and template
    arguments folded, `void at::native::elementwise_kernel<128, 4, ...>(int, ...)` ->
    `at::native::elementwise_kernel<…>`. A lone simple template argument is kept (it is what
    names a cutlass kernel). At most `max_chars` characters."""
    text = name.strip().replace("(anonymous namespace)", "(anon)").removeprefix("void ")
    text = _fold_templates(_drop_parameters(text))
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _drop_parameters(text: str) -> str:
    """Cut a trailing `(...)` that follows a name directly (a signature), not `Memcpy (HtoD)`."""
    if not text.endswith(")"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[index], 0)
        if depth == 0:
            return text[:index] if index > 0 and not text[index - 1].isspace() else text
    return text


def _fold_templates(text: str) -> str:
    """Replace each outermost <...> with <…>, unless it holds one simple argument."""
    out: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char == "<":
            if depth == 0:
                start = index
            depth += 1
        elif char == ">" and depth > 0:
            depth -= 1
            if depth == 0:
                inner = text[start + 1 : index]
                simple = not any(c in inner for c in ",<> ")
                out.append(f"<{inner}>" if simple else "<…>")
        elif depth == 0:
            out.append(char)
    return "".join(out)


@dataclass(kw_only=True)
class TraceSummary:
    """What dominated the profiled steps."""

    timeline: str  # "device" (GPU kernels) or "host" (CPU operators)
    num_steps: int
    step_time_us: float  # mean wall time of a profiled step
    category_time_us: dict[str, float]  # per step, incl. "idle"
    top_ops: list[OpStat] = field(default_factory=list)
    kernels_per_step: float | None = None  # device launches; None without device kernels
    ops_per_step: float = 0.0  # top-level host operators
    sdpa_backends: dict[str, int] = field(default_factory=dict)  # "flash" -> count per step
    data_time_us: float | None = None  # per step, inside data-loading annotations; None if none

    @property
    def category_share(self) -> dict[str, float]:
        total = self.step_time_us or 1.0
        return {name: t / total for name, t in self.category_time_us.items()}

    @property
    def data_share(self) -> float | None:
        """Fraction of the step spent fetching batches; None when no data-loading range ran."""
        if self.data_time_us is None or not self.step_time_us:
            return None
        return self.data_time_us / self.step_time_us

    def measurements(self, *, name: str) -> list[Measurement]:
        params = {"timeline": self.timeline, "num_steps": self.num_steps}
        rows = [
            Measurement(
                suite="profile",
                name=name,
                metric="step_time_ms",
                value=self.step_time_us / 1e3,
                unit="ms",
                params=params,
            ),
            Measurement(
                suite="profile",
                name=name,
                metric="ops_per_step",
                value=self.ops_per_step,
                unit="ops",
                params=params,
            ),
        ]
        if self.kernels_per_step is not None:
            rows.append(
                Measurement(
                    suite="profile",
                    name=name,
                    metric="kernels_per_step",
                    value=self.kernels_per_step,
                    unit="kernels",
                    params=params,
                )
            )
        for category, share in self.category_share.items():
            rows.append(
                Measurement(
                    suite="profile",
                    name=name,
                    metric=f"share_{category}",
                    value=100.0 * share,
                    unit="%",
                    params=params,
                )
            )
        if self.data_share is not None:
            rows.append(
                Measurement(
                    suite="profile",
                    name=name,
                    metric="share_data_loading",
                    value=100.0 * self.data_share,
                    unit="%",
                    params=params,
                    extra={"note": "host time inside data-loading ranges; overlaps other shares"},
                )
            )
        return rows


def load_trace(path: str | Path) -> list[dict[str, Any]]:
    """The event list of a Chrome trace file written by torch.profiler."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"no trace file at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path} is not a readable Chrome trace ({exc})") from None
    return trace_events(data)


def trace_events(data: object) -> list[dict[str, Any]]:
    events = data.get("traceEvents") if isinstance(data, Mapping) else data
    if not isinstance(events, list):
        raise UserError("trace has no traceEvents list")
    return [e for e in events if isinstance(e, dict)]


def summarize_trace(
    events: Iterable[Mapping[str, Any]],
    *,
    top_k: int = 10,
    rules: tuple[tuple[str, str], ...] = CATEGORY_RULES,
) -> TraceSummary:
    """Summarise complete ("X") events: categories, idle gaps, top operators, launches per step."""
    spans = [e for e in events if e.get("ph") == "X" and "dur" in e and "ts" in e]
    steps = _step_windows(spans)
    device = [e for e in spans if e.get("cat") in _DEVICE_CATS]
    host = [e for e in spans if e.get("cat") in _HOST_CATS]
    if device:
        launch_ts = _launch_times(spans)
        timed = [(_start(e), _start(e) + _dur(e), e) for e in device]
        anchor = [launch_ts.get(_correlation(e), _start(e)) for e in device]
        timed = [t for t, a in zip(timed, anchor, strict=True) if _in_windows(a, steps)]
        self_times = [(e, end - start) for start, end, e in timed]
        busy = _union_length([(start, end) for start, end, _ in timed])
    else:
        host = [e for e in host if _in_windows(_start(e), steps)]
        self_times = _host_self_times(host)
        busy = _union_length(_top_level(host))
    num_steps = max(len(steps), 1)
    step_total = sum(end - start for start, end in steps)
    category_time = dict.fromkeys(CATEGORIES, 0.0)
    per_name: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for event, self_time in self_times:
        name = str(event.get("name", "?"))
        category_time[categorise(name, rules)] += self_time
        per_name[name][0] += self_time
        per_name[name][1] += 1
    category_time[IDLE] = max(step_total - busy, 0.0)
    top = sorted(per_name.items(), key=lambda item: -item[1][0])[:top_k]
    return TraceSummary(
        timeline="device" if device else "host",
        num_steps=num_steps,
        step_time_us=step_total / num_steps,
        category_time_us={k: v / num_steps for k, v in category_time.items()},
        top_ops=[
            OpStat(
                name=n,
                category=categorise(n, rules),
                self_time_us=t / num_steps,
                count=round(c / num_steps),
            )
            for n, (t, c) in top
        ],
        kernels_per_step=len(self_times) / num_steps if device else None,
        ops_per_step=len(_top_level(host)) / num_steps,
        sdpa_backends=_sdpa_counts(spans, num_steps),
        data_time_us=_data_time(spans, steps, num_steps),
    )


def _start(event: Mapping[str, Any]) -> float:
    return float(event["ts"])


def _dur(event: Mapping[str, Any]) -> float:
    return float(event["dur"])


def _correlation(event: Mapping[str, Any]) -> object:
    args = event.get("args")
    return args.get("correlation") if isinstance(args, Mapping) else None


def _step_windows(spans: list[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """Host ProfilerStep#N ranges; without any, the whole trace is one step."""
    windows = [
        (_start(e), _start(e) + _dur(e))
        for e in spans
        if str(e.get("name", "")).startswith(_STEP_PREFIX) and e.get("cat") != "gpu_user_annotation"
    ]
    if windows or not spans:
        return sorted(windows)
    return [(min(_start(e) for e in spans), max(_start(e) + _dur(e) for e in spans))]


def _in_windows(ts: float, windows: list[tuple[float, float]]) -> bool:
    return any(start <= ts <= end for start, end in windows)


def _launch_times(spans: list[Mapping[str, Any]]) -> dict[Any, float]:
    """Correlation id -> host time of the runtime call that launched the kernel."""
    runtime = (e for e in spans if e.get("cat") in ("cuda_runtime", "cuda_driver", "hip_runtime"))
    return {c: _start(e) for e in runtime if (c := _correlation(e)) is not None}


def _nesting(events: list[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], list[float]]]:
    """(event, its direct children's durations) for host events, per thread, by time nesting."""
    by_thread: dict[tuple[Any, Any], list[Mapping[str, Any]]] = defaultdict(list)
    for event in events:
        by_thread[(event.get("pid"), event.get("tid"))].append(event)
    result: list[tuple[Mapping[str, Any], list[float]]] = []
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (_start(e), -_dur(e)))
        stack: list[tuple[float, list[float]]] = []
        for event in thread_events:
            start, end = _start(event), _start(event) + _dur(event)
            while stack and stack[-1][0] < start:
                stack.pop()
            if stack:
                stack[-1][1].append(_dur(event))
            children: list[float] = []
            result.append((event, children))
            stack.append((end, children))
    return result


def _host_self_times(events: list[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], float]]:
    return [(e, max(_dur(e) - sum(children), 0.0)) for e, children in _nesting(events)]


def _top_level(events: list[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """Intervals of host operators that no other operator on their thread encloses."""
    nested = {id(child) for child in _children(events)}
    return [(_start(e), _start(e) + _dur(e)) for e in events if id(e) not in nested]


def _children(events: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    by_thread: dict[tuple[Any, Any], list[Mapping[str, Any]]] = defaultdict(list)
    for event in events:
        by_thread[(event.get("pid"), event.get("tid"))].append(event)
    nested = []
    for thread_events in by_thread.values():
        ordered = sorted(thread_events, key=lambda e: (_start(e), -_dur(e)))
        open_until = float("-inf")
        for event in ordered:
            if _start(event) < open_until:
                nested.append(event)
            open_until = max(open_until, _start(event) + _dur(event))
    return nested


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None and current_start is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None and current_start is not None:
        total += current_end - current_start
    return total


def _sdpa_counts(spans: list[Mapping[str, Any]], num_steps: int) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for event in spans:
        if event.get("cat") in _HOST_CATS and (backend := sdpa_backend(str(event.get("name", "")))):
            counts[backend] += 1
    return {k: round(v / num_steps) for k, v in counts.items()}


def _data_time(
    spans: list[Mapping[str, Any]], steps: list[tuple[float, float]], num_steps: int
) -> float | None:
    """Host time inside data-loading ranges (DataLoader's record_function, rocmkit's get_batch)."""
    loading = [
        e
        for e in spans
        if e.get("cat") in ("user_annotation", "cpu_op")
        and _DATA_PATTERN.search(str(e.get("name", "")))
        and _in_windows(_start(e), steps)
    ]
    if not loading:
        return None
    return _union_length([(_start(e), _start(e) + _dur(e)) for e in loading]) / num_steps
