"""When a server benchmark must stop or count as failed, so a broken run never looks like a result.

Three rules, each a small pure piece that `serve.py` plugs into the load generator:
- a failed warm-up aborts before anything is measured, with the server's answer in one line
  (an HTTP 4xx answer is the user's request being wrong: wrong model name, URL path or API key);
- a server that refuses connections for `unreachable_timeout_s` stops the sending;
- a measured point whose requests all failed, or failed more often than `max_error_rate`, makes
  the run a failure (`outcome` "failed": the command exits 1, after saving what it measured).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rocmkit.errors import UserError
from rocmkit.infer.metrics import RequestRecord


class ServerFailure(UserError):
    """The server did not serve the benchmark (not a mistake in the command): exit code 1."""

    exit_code = 1


_HINTS = {
    401: "check --api-key (or OPENAI_API_KEY)",
    403: "check --api-key (or OPENAI_API_KEY)",
    404: "check --url (it should end in /v1) and --model",
    400: "check --model and the request options (--extra-body, sampling)",
    422: "check --model and the request options (--extra-body, sampling)",
}


def check_warmup(records: Sequence[RequestRecord]) -> None:
    """Raise when the warm-up shows the run cannot work: any 4xx answer, or every request failed."""
    failed = [r for r in records if not r.ok]
    if not failed:
        return
    client_side = [r for r in failed if r.http_status is not None and 400 <= r.http_status < 500]
    if client_side:
        first = client_side[0]
        hint = _HINTS.get(first.http_status or 0, "check --url, --model and the request options")
        raise UserError(f"warm-up request failed: {first.error} ({hint})")
    if len(failed) == len(records):
        raise ServerFailure(f"warm-up request failed: {failed[0].error}")


class UnreachableWatch:
    """Says stop once every answer for `timeout_s` seconds was a failed connection."""

    def __init__(self, timeout_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.timeout_s = timeout_s
        self._clock = clock
        self._since: float | None = None  # start of the current run of failed connections

    def __call__(self, record: RequestRecord) -> str | None:
        if not record.unreachable:
            self._since = None
            return None
        now = self._clock()
        if self._since is None:
            self._since = now
        if now - self._since >= self.timeout_s:
            return f"server unreachable for {self.timeout_s:g} s, stopped sending"
        return None


def point_failure(num_requests: int, num_failed: int, max_error_rate: float) -> str | None:
    """Why a measured point counts as failed, or None when it does not."""
    if num_requests == 0:
        return None
    if num_failed == num_requests:
        return f"all {num_requests} requests failed"
    share = num_failed / num_requests
    if share > max_error_rate:
        return (
            f"{num_failed} of {num_requests} requests failed ({share:.0%}), "
            f"more than --max-error-rate {max_error_rate:g}"
        )
    return None
