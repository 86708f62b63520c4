"""Console views of `rocmkit profile` runs, read from the saved document: where the step time went
and the hints ("profile-train", "profile-infer": `render_trace`), and a memory estimate with its
measured comparison ("profile-memory": `render_estimate`). The summary, hints, estimate and
comparison are in `result.data` (`rocmkit.profile.commands`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from rocmkit.report.memory_chart import memory_unit

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.report.views import ViewOptions
    from rocmkit.results import RunResult

PERFETTO = "https://ui.perfetto.dev"


def render_trace(result: RunResult, console: Console, options: ViewOptions) -> None:
    data = result.data
    title = f"{result.kind.replace('-', ' ')} {data.get('name', '')}".strip()
    render_summary(console, data, title=title)
    memory = data.get("memory")
    if memory:
        console.print(f"memory peak {_gib(memory.get('peak_bytes'))} ({escape(memory['source'])})")
    if data.get("trace"):
        console.print(f"trace: {escape(data['trace'])} (open in {PERFETTO})", soft_wrap=True)


def render_summary(console: Console, data: dict[str, Any], *, title: str) -> None:
    """The trace summary of a profile document: headline, shares, data loading, top operators,
    hints."""
    per_step = f"{data['step_time_us'] / 1e3:.2f} ms/step over {data['num_steps']} steps"
    if data.get("kernels_per_step") is not None:
        launches = f", {data['kernels_per_step']:.0f} kernel launches/step"
    else:
        launches = f", {data.get('ops_per_step', 0):.0f} top-level host ops/step (no GPU kernels)"
    timeline = f"{data['timeline']} timeline"
    console.print(f"[bold]{escape(title)}[/bold]: {timeline}, {per_step}{launches}")
    shares = Table(title="where the step time went")
    for column in ("category", "ms/step", "share"):
        shares.add_column(column, justify="right" if column != "category" else "left")
    category_time = data.get("category_time_us", {})
    for category, share in sorted(data.get("category_share", {}).items(), key=lambda kv: -kv[1]):
        time_ms = category_time[category] / 1e3
        shares.add_row(escape(category), f"{time_ms:.3f}", f"{100 * share:.1f}%")
    console.print(shares)
    if data.get("data_share") is not None and data.get("data_time_us") is not None:
        console.print(
            f"data loading (batch fetch, overlaps the shares above): "
            f"{data['data_time_us'] / 1e3:.3f} ms/step, {100 * data['data_share']:.1f}%"
        )
    top = Table(title="top operators/kernels by self time")
    for column in ("name", "category", "ms/step", "calls/step"):
        top.add_column(column, overflow="fold")
    from rocmkit.profile.summary import short_kernel_name

    for op in data.get("top_ops", []):
        top.add_row(
            escape(short_kernel_name(op["name"])),
            escape(op["category"]),
            f"{op['self_time_us'] / 1e3:.3f}",
            str(op["count"]),
        )
    console.print(top)
    _render_hints(console, data.get("hints", []))


def _render_hints(console: Console, hints: list[dict[str, Any]]) -> None:
    if not hints:
        console.print("hints: none (no rule found its evidence)")
        return
    for hint in hints:
        console.print(
            f"[yellow]hint[/yellow] {escape(hint['rule'])}: {escape(hint['change'])} "
            f"[dim]({escape(hint['evidence'])})[/dim]"
        )


def _gib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**30:.2f} GiB"


def render_estimate(result: RunResult, console: Console, options: ViewOptions) -> None:
    """A memory estimate per category (and its measured comparison), from the document."""
    data = result.data
    config = data["config"]
    console.print(
        f"[bold]{escape(data['label'])}[/bold]: {data['num_params'] / 1e6:.1f}M parameters, "
        f"micro-batch {config['micro_batch']} x {config['shape']['seq_len']} tokens, per device"
    )
    amounts = dict(data["bytes"])
    total, peak = amounts.pop("total"), amounts.pop("peak", None)
    unit, scale = memory_unit(total)
    table = Table()
    table.add_column("category")
    table.add_column(unit, justify="right")
    for name, value in amounts.items():
        table.add_row(escape(name), f"{value / scale:.3f}")
    table.add_row("[bold]total[/bold]", f"[bold]{total / scale:.3f}[/bold]")
    if peak is not None:
        table.add_row("peak in time", f"{peak / scale:.3f}")
    console.print(table)
    for note in data.get("notes", []):
        console.print(f"[dim]note: {escape(note)}[/dim]")
    if data.get("measured") is not None:
        _render_comparison(console, data["measured"])
    if data.get("chart"):
        console.print(f"chart: {escape(data['chart'])}", soft_wrap=True)


def _render_comparison(console: Console, comparison: dict[str, Any]) -> None:
    title = f"estimate vs measured on {comparison['device']} ({comparison['source']})"
    table = Table(title=escape(title))
    for column in ("category", "estimated MiB", "measured MiB", "error"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for name, row in comparison["rows"].items():
        error = "n/a" if row["error"] is None else f"{100 * row['error']:+.1f}%"
        table.add_row(
            escape(name), f"{row['estimated'] / 2**20:.2f}", f"{row['measured'] / 2**20:.2f}", error
        )
    console.print(table)
    if comparison["note"]:
        console.print(f"[dim]measured: {escape(comparison['note'])}[/dim]")
