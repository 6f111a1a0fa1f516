"""adapters_ratelimit: the core's `RateLimiter` port over the `limits` library (in-process memory or Redis)."""

from adapters_ratelimit.limiter import DEFAULT_STORAGE, LimitsRateLimiter, describe_storage

__all__ = ["DEFAULT_STORAGE", "LimitsRateLimiter", "describe_storage"]
