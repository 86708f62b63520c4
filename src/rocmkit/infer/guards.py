"""When a server benchmark must stop or count as failed, so a broken run never looks like a result.

Four rules, each a small piece that `serve.py` plugs into the load generator:
- a warm-up request that fails otherwise than with an HTTP 4xx answer is retried, up to
  `--warmup-retries` times with a growing pause (a server's one-off 500 must not cost the run);
- a failed warm-up aborts before anything is measured, with the server's answer in one line
  (an HTTP 4xx answer is the user's request being wrong: wrong model name, URL path or API key);
- a server that refuses connections for `unreachable_timeout_s` stops the sending;
- a measured point whose requests all failed, failed more often than `max_error_rate` (the error
  budget, default `DEFAULT_MAX_ERROR_RATE`), or could not connect to the server (it went away
  mid-run) makes the run a failure (`outcome` "failed": exit 1, after saving what it measured).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from rocmkit.errors import UserError
from rocmkit.infer.metrics import RequestRecord
from rocmkit.infer.workloads import Prompt

# The error budget: a point with more than 5% failed requests fails the run (exit 1). Above it,
# the latencies describe a server that is shedding load or broken, not one serving the workload.
DEFAULT_MAX_ERROR_RATE = 0.05
DEFAULT_WARMUP_RETRIES = 3
_RETRY_PAUSE_S = (0.25, 0.5, 1.0, 2.0)  # before retry 1, 2, 3, then 2 s each


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


def client_side(record: RequestRecord) -> bool:
    """An HTTP 4xx answer: the request itself is wrong, and sending it again cannot help."""
    return record.http_status is not None and 400 <= record.http_status < 500


def retrying(
    send: Callable[[Prompt], Awaitable[RequestRecord]], retries: int
) -> Callable[[Prompt], Awaitable[RequestRecord]]:
    """`send`, tried again after a failure (not a 4xx answer) up to `retries` times; a record
    that failed every attempt says how many it made."""

    # asyncio loads here, not with the module: `rocmkit.infer.settings` reads this module's
    # defaults to declare the CLI's flags, and `rocmkit --help` should not pay for asyncio.
    import asyncio

    async def send_retried(prompt: Prompt) -> RequestRecord:
        attempt = 0
        while True:
            record = await send(prompt)
            if record.ok or client_side(record) or attempt >= retries:
                break
            await asyncio.sleep(_RETRY_PAUSE_S[min(attempt, len(_RETRY_PAUSE_S) - 1)])
            attempt += 1
        if not record.ok and attempt:
            record.error = f"{record.error} ({attempt + 1} attempts, --warmup-retries {retries})"
        return record

    return send_retried


def check_warmup(records: Sequence[RequestRecord]) -> None:
    """Raise when the warm-up shows the run cannot work: any 4xx answer, or every request failed
    (each after its retries)."""
    failed = [r for r in records if not r.ok]
    if not failed:
        return
    wrong = [r for r in failed if client_side(r)]
    if wrong:
        first = wrong[0]
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


def point_failure(
    num_requests: int, num_failed: int, max_error_rate: float, num_unreachable: int = 0
) -> str | None:
    """Why a measured point counts as failed, or None when it does not. `num_failed` leaves out
    the requests the run itself cancelled (run timeout, Ctrl-C); `num_unreachable` requests
    could not connect: the server went away during the run."""
    if num_requests == 0:
        return None
    if num_failed == num_requests:
        return f"all {num_requests} requests failed"
    if num_unreachable:
        return (
            f"the server became unreachable during the run: {num_unreachable} of "
            f"{num_requests} requests could not connect"
        )
    share = num_failed / num_requests
    if share > max_error_rate:
        return (
            f"{num_failed} of {num_requests} requests failed ({share:.0%}), "
            f"more than --max-error-rate {max_error_rate:g}"
        )
    return None
