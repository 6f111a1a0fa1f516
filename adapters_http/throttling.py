"""The `RateLimit-*` headers of the memory routes, from the core's window state.

Headers follow draft-ietf-httpapi-ratelimit-headers-06 (December 2022), the last draft with the
separate `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` fields that clients and
gateways read today (later drafts merge them into one `RateLimit` field).
"""

from __future__ import annotations

import math

from memorybank_core.rate_windows import WindowState


def rate_limit_headers(state: WindowState) -> dict[str, str]:
    """`RateLimit-Limit`, `-Remaining`, `-Reset` (whole seconds until a slot frees, rounded up) and `-Policy`."""
    return {
        "RateLimit-Limit": str(state.limit),
        "RateLimit-Remaining": str(state.remaining),
        "RateLimit-Reset": str(math.ceil(state.reset_seconds)),
        "RateLimit-Policy": f"{state.limit};w={state.window_seconds}",
    }
