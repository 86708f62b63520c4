"""Infer results as Measurement rows, built the same way by `infer local` and `infer serve`:
the energy figures of a timed window, and one row per (metric, value, unit, extra)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rocmkit.measure.power import EnergyWindow, per_unit, units_per_joule
from rocmkit.results import Measurement

Value = tuple[str, float | None, str]  # (metric, value, unit)


def energy_values(energy_j: float | None, window_s: float, num_tokens: int) -> list[Value]:
    """Average board power over the window, joules per output token, output tokens per joule."""
    window = EnergyWindow(start=0.0, end=window_s, energy_j=energy_j)
    return [
        ("avg_power_w", window.avg_watts, "W"),
        ("energy_j_per_token", per_unit(energy_j, num_tokens), "J/token"),
        ("tokens_per_joule", units_per_joule(energy_j, num_tokens), "tokens/J"),
    ]


def measurement_rows(
    suite: str,
    name: str,
    params: Mapping[str, Any],
    values: Iterable[tuple[str, float | None, str, Mapping[str, Any]]],
) -> list[Measurement]:
    """One Measurement of `suite` per (metric, value, unit, extra), all with one name and params."""
    return [
        Measurement(
            suite=suite,
            name=name,
            metric=metric,
            value=value,
            unit=unit,
            params=dict(params),
            extra=dict(extra),
        )
        for metric, value, unit, extra in values
    ]
