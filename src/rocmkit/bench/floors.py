"""`--expect`: floors under which a figure fails the run, as nccl-tests' bandwidth gate does.

Two kinds, which may be combined: a fraction of peak (`--expect 0.5`: every `pct_of_peak` figure
must reach 50 % of its device's peak), and per-figure floors from a TOML file, one line per figure,
`"suite/name/metric" = value` in the metric's own unit (`"gemm/fp32 4096x4096x4096/tflops" = 40`).
A figure under its floor keeps its value and gets `extra.below_floor = True` and `extra.floor`;
the run's outcome is then "failed" (exit 1). A floor whose figure has no value, or names no figure
of the run (a `floors/<key>/missing` row), fails too: an acceptance test never passes by omission.
The fraction of peak applies to figures with a peak only. Floors are minimums: they suit rates
(TFLOPS, GB/s, % of peak); a floor on a time figure (time_ms, time_us) is a user error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from rocmkit.errors import UserError
from rocmkit.results import Measurement


def figure_key(m: Measurement) -> str:
    """How a floor file names a figure: suite/name/metric."""
    return f"{m.suite}/{m.name}/{m.metric}"


def parse_expect(text: str) -> tuple[float | None, dict[str, float]]:
    """`--expect`'s value: a fraction of peak in (0, 1], or the path of a TOML file of floors."""
    try:
        fraction = float(text)
    except ValueError:
        return None, load_floors(text)
    check_fraction(fraction)
    return fraction, {}


def check_fraction(fraction: float) -> None:
    if not 0 < fraction <= 1:
        raise UserError(
            f"--expect takes a fraction of peak in (0, 1], e.g. 0.5 (got {fraction}), "
            "or a TOML file of floors"
        )


def load_floors(path: str | Path) -> dict[str, float]:
    """Floors from a TOML file of `"suite/name/metric" = value` lines."""
    import tomllib

    file = Path(path)
    if not file.is_file():
        raise UserError(f"--expect {path}: neither a fraction of peak nor a floors file")
    try:
        data = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"--expect {path}: not valid TOML ({exc})") from None
    return check_floors(data, str(path))


def check_floors(data: Mapping[str, object], where: str = "floors") -> dict[str, float]:
    """Validated floors: keys suite/name/metric, numeric values."""
    floors: dict[str, float] = {}
    for key, value in data.items():
        if key.count("/") < 2:
            raise UserError(f"{where}: {key!r} must read suite/name/metric")
        if key.rsplit("/", 1)[1].startswith("time"):
            raise UserError(f"{where}: {key!r} is a time, not a rate; floors are minimums")
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise UserError(f"{where}: the floor of {key!r} must be a number (got {value!r})")
        try:
            floors[key] = float(value)
        except ValueError:
            raise UserError(f"{where}: the floor of {key!r} must be a number") from None
    return floors


def apply_floors(
    measurements: Iterable[Measurement], fraction: float | None, floors: Mapping[str, float]
) -> list[Measurement]:
    """Mark every figure under its floor (`below_floor`, `floor`); a floor whose figure has no
    value is not met either. Returns one failed row per floor that names no figure of the run."""
    used: set[str] = set()
    for m in measurements:
        key = figure_key(m)
        floor = floors.get(key)
        if floor is not None:
            used.add(key)
        elif fraction is not None and m.metric == "pct_of_peak" and m.value is not None:
            floor = 100.0 * fraction
        if floor is None:
            continue
        # a copy: rows of one figure (a rate and its % of peak) may share one extra dict
        m.extra = {**m.extra, "floor": floor, "below_floor": m.value is None or m.value < floor}
    return [
        Measurement(
            suite="floors",
            name=key,
            metric="missing",
            value=None,
            unit="",
            extra={"skipped": "the floor names no figure of this run", "below_floor": True},
        )
        for key in floors
        if key not in used
    ]
