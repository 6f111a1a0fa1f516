"""Rate limits on the memory routes: the core's check, made once per authenticated request, and its headers.

Headers follow draft-ietf-httpapi-ratelimit-headers-06 (December 2022), the last draft with the
separate `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` fields that clients and
gateways read today (later drafts merge them into one `RateLimit` field).
"""

from __future__ import annotations

import math

from starlette.concurrency import run_in_threadpool

from memorybank_core.ports import Principal
from memorybank_core.rate_limits import Operation, RateLimits, WindowState


async def admit(rate_limits: RateLimits, principal: Principal, operation: Operation) -> WindowState | None:
    """The core's check; a limiter that waits on the network (Redis) is asked from the thread pool.

    Raises:
        RateLimitedError: a limit is reached.
    """
    if rate_limits.may_block:
        return await run_in_threadpool(rate_limits.admit, principal, operation)
    return rate_limits.admit(principal, operation)


def rate_limit_headers(state: WindowState) -> dict[str, str]:
    """`RateLimit-Limit`, `-Remaining`, `-Reset` (whole seconds until a slot frees, rounded up) and `-Policy`."""
    return {
        "RateLimit-Limit": str(state.limit),
        "RateLimit-Remaining": str(state.remaining),
        "RateLimit-Reset": str(math.ceil(state.reset_seconds)),
        "RateLimit-Policy": f"{state.limit};w={state.window_seconds}",
    }
