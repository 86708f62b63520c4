"""Console view of a `rocmkit hipify` run (kind "hipify"), read from the saved report document:
files that failed or were skipped, every diagnostic at its line, the optional conversions table,
compile checks, the plan of a dry run and the one-line summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

# A real tree has thousands of diagnostics; past this many the console says how many more.
MAX_DIAGNOSTIC_LINES = 200

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.report.views import ViewOptions
    from rocmkit.results import RunResult


def render(result: RunResult, console: Console, options: ViewOptions) -> None:
    data, config = result.data, result.config
    written = any(config.get(k) for k in ("output", "output_dir", "inplace"))
    files: list[dict[str, Any]] = data.get("files", [])
    for f in files:
        if f["status"] in ("error", "skipped"):
            _line(console, f"{f['source']}: {f['status']}: {f['reason']}")
    diagnostics: list[dict[str, Any]] = data.get("diagnostics", [])
    shown = [] if config.get("quiet") else diagnostics[:MAX_DIAGNOSTIC_LINES]
    for d in shown:
        where = f"{d.get('path') or '<text>'}:{d['line']}:{d['column']}"
        _line(console, f"{where}: {d['kind']} [{d['category']}] {d['name']}: {d['message']}")
    if len(shown) < len(diagnostics) and not config.get("quiet"):
        _line(
            console,
            f"... {len(diagnostics) - len(shown)} more diagnostics (all of them: --json; "
            "none: --quiet)",
        )
    if config.get("stats"):
        console.print(_stats_table(data.get("totals", {})))
    for check in data.get("check", []):
        status = "ok" if check["ok"] else f"FAIL: {check['first_error']}"
        _line(console, f"check {check['path']}: {status} ({check['seconds']:.1f}s)")
    if config.get("printed_code"):
        return
    if not written and not config.get("quiet"):
        for f in files:
            if f["status"] == "converted":
                edits = sum(f["converted"].values())
                _line(console, f"plan: {f['source']}: would change ({edits} edits)")
    _line(console, _summary(data, written=written) + _hip_version(result))
    if not written:
        _line(
            console,
            "dry run: nothing was written (add --output-dir DIR, -o FILE or --inplace to write)",
        )


def _hip_version(result: RunResult) -> str:
    """ "; HIP 6.2 names (installed hipcc /usr/bin/hipcc)": which release's API was targeted."""
    config = result.config
    version = config.get("hip_version") or (config.get("options") or {}).get("hip_version")
    if not version:
        return ""
    source = config.get("hip_version_source")
    return f"; HIP {version} names" + (f" ({source})" if source else "")


def _line(console: Console, text: str) -> None:
    # A hazard snippet from an 8-bit file carries lone surrogates that a terminal cannot encode.
    console.print(
        text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace"),
        markup=False,
        soft_wrap=True,  # a path:line:column stays one token
    )


def _stats_table(totals: dict[str, Any]) -> Table:
    table = Table(title="hipify: conversions by category")
    table.add_column("category")
    table.add_column("converted", justify="right")
    table.add_column("unconverted", justify="right")
    converted = totals.get("converted_by_category", {})
    unconverted = totals.get("unconverted_by_category", {})
    for category in sorted(set(converted) | set(unconverted), key=lambda c: -converted.get(c, 0)):
        table.add_row(category, str(converted.get(category, 0)), str(unconverted.get(category, 0)))
    return table


def _summary(data: dict[str, Any], *, written: bool) -> str:
    files: list[dict[str, Any]] = data.get("files", [])
    totals = data.get("totals", {})

    def count(status: str) -> int:
        return sum(f["status"] == status for f in files)

    converted = (
        ", ".join(f"{c} {n}" for c, n in totals.get("converted_by_category", {}).items())
        or "nothing"
    )
    unconverted = sum(totals.get("unconverted_by_category", {}).values())
    changed = "changed" if written else "would change"
    return (
        f"hipify: {len(files)} files ({count('converted')} {changed}, "
        f"{count('passthrough')} passed through, {count('skipped')} skipped, "
        f"{count('error')} errors) in {data.get('elapsed_s', 0):.2f}s; converted: {converted}; "
        f"unconverted: {unconverted}; hazards: {totals.get('hazards', 0)}"
    )
