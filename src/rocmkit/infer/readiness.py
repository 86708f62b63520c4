"""Before a run: is the server there, is it ready, which model does it serve?"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from rocmkit.errors import UserError
from rocmkit.infer.client import Client, Endpoint, describe_error
from rocmkit.infer.guards import ServerFailure


async def prepare_endpoint(endpoint: Endpoint, *, wait_ready_s: float = 0.0) -> Endpoint:
    """Check (or wait until) the server answers; fill in the model from /models when not given."""
    if wait_ready_s > 0:
        await wait_ready(endpoint, wait_ready_s)
    else:
        await check_reachable(endpoint)
    if endpoint.model:
        return endpoint
    models = await list_models(endpoint)
    if not models:
        raise UserError(f"no --model given and {endpoint.base_url}/models lists none: give --model")
    return dataclasses.replace(endpoint, model=models[0])


async def list_models(endpoint: Endpoint) -> list[str]:
    """Model ids the server lists at GET /models (OpenAI format), in its order."""
    async with Client(endpoint) as client:
        status, data = await client.get_json("/models")
    entries = data.get("data") if isinstance(data, dict) and status == 200 else None
    if not isinstance(entries, list):
        return []
    return [str(e["id"]) for e in entries if isinstance(e, dict) and e.get("id")]


async def wait_ready(endpoint: Endpoint, timeout_s: float, *, poll_s: float = 0.5) -> None:
    """Poll GET /models until it answers 200 (a server still loading refuses or answers 503)."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while True:
        async with Client(endpoint) as client:
            try:
                status, _ = await asyncio.wait_for(client.get_json("/models"), 5.0)
                if status == 200:
                    return
                last = f"HTTP {status}"
            except (OSError, asyncio.TimeoutError) as exc:
                last = "timeout" if isinstance(exc, asyncio.TimeoutError) else describe_error(exc)
        if time.monotonic() + poll_s > deadline:
            raise ServerFailure(
                f"the server at {endpoint.base_url} was not ready after {timeout_s:g} s "
                f"(last answer: {last})"
            )
        await asyncio.sleep(poll_s)


async def check_reachable(endpoint: Endpoint, *, timeout_s: float = 5.0) -> None:
    """Raise UserError when nothing answers at the base URL (any HTTP answer counts as alive)."""
    async with Client(endpoint) as client:
        try:
            await asyncio.wait_for(client.get_json("/models"), timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            why = "timeout" if isinstance(exc, asyncio.TimeoutError) else describe_error(exc)
            raise UserError(
                f"cannot reach the server at {endpoint.base_url}: {why} (is it running?)"
            ) from None
