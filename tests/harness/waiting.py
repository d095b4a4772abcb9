"""Waiting on a condition with a time-out, never a bare sleep (tests, reliability, bench).

`wait_until` / `async_wait_until` poll a condition until it holds and fail with what was
awaited (`WaitTimeout`, an assertion failure) when it does not in time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class WaitTimeout(AssertionError):
    """A condition did not become true in time (an assertion failure, with what was awaited)."""


def wait_until(
    cond: Callable[[], object], timeout: float, what: str, interval: float = 0.05
) -> object:
    """Poll `cond` until it returns something truthy; return it, or raise WaitTimeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting for: {what}")
        time.sleep(interval)


def wait_or_false(cond: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll `cond` for up to `timeout` seconds: True as soon as it holds, else False."""
    try:
        wait_until(cond, timeout, "", interval)
    except WaitTimeout:
        return False
    return True


async def async_wait_until(
    cond: Callable[[], object | Awaitable[object]],
    timeout: float,
    what: str,
    interval: float = 0.05,
) -> object:
    """`wait_until` on an event loop: `cond` may be sync or async."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting for: {what}")
        await asyncio.sleep(interval)
