"""`--burn-in DURATION`, the option alone: parsing the duration and adding the burn-in suite to
the run. Kept apart from `bench.burnin` so that declaring the flag imports nothing heavy."""

from __future__ import annotations

import argparse
import re
from typing import Any

from rocmkit.errors import UserError

SUITE = "burn-in"
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """ "60s", "5m", "1h", "1m30s" or plain seconds "90" -> seconds; UserError otherwise."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        seconds = float(text)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)([smh])", text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise UserError(f"--burn-in {text!r}: write a duration like 60s, 5m, 1h or 1m30s")
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise UserError(f"--burn-in {text!r}: the duration must be more than 0")
    return seconds


class BurnInAction(argparse.Action):
    """`--burn-in DURATION`: adds the burn-in suite and its duration to the run."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        try:
            seconds = parse_duration(str(values))
        except UserError as exc:
            parser.error(str(exc))
        namespace.suite = [*(getattr(namespace, "suite", None) or []), SUITE]
        overrides = list(getattr(namespace, "overrides", None) or [])
        namespace.overrides = [*overrides, f"suite_configs.burn_in.duration_s={seconds:g}"]
