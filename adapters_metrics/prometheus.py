"""`PrometheusMetrics`: the request observer and event sink that feeds /metrics."""

from __future__ import annotations

import os
from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from memorybank_core import events
from memorybank_core.errors import UnavailableError
from memorybank_core.ports import EventSink

MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's own variable: set (before the first import) in every worker of a multi-process server."""

#: Request durations: from a cache-hot millisecond to a slow second.
LATENCY_BUCKETS = (0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
#: How many memories a search returns.
SIZE_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


class PrometheusMetrics(EventSink):
    """Counts and times memory requests and searches; renders them in the Prometheus text format.

    Each instance registers its metrics in its own registry, so several apps in one process
    (tests) never collide. In a server with several worker processes, set
    `PROMETHEUS_MULTIPROC_DIR` before prometheus_client is first imported in each: every
    worker then writes its figures there and `render` adds them up, whichever worker answers.
    Events are passed on to `forward` (the log), unchanged.
    """

    def __init__(self, *, forward: EventSink | None = None) -> None:
        self._forward = forward
        self._registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "memorybank_http_requests",
            "Memory requests answered, by operationId and HTTP status.",
            ["operation", "status"],
            registry=self._registry,
        )
        self.duration = Histogram(
            "memorybank_http_request_duration_seconds",
            "Time to answer a memory request, from routing to the response, by operationId.",
            ["operation"],
            buckets=LATENCY_BUCKETS,
            registry=self._registry,
        )
        self.database_errors = Counter(
            "memorybank_database_errors",
            "Memory requests that failed because the database could not be reached (503), by operationId.",
            ["operation"],
            registry=self._registry,
        )
        self.search_candidates = Histogram(
            "memorybank_search_candidates",
            "Candidate memories a search scored to choose its results (the engine's work per search).",
            buckets=SIZE_BUCKETS,
            registry=self._registry,
        )
        self.secrets_refused = Counter(
            "memorybank_secrets_refused",
            "Saves refused because they held what looks like a credential, by kind (never the secret).",
            ["kind"],
            registry=self._registry,
        )
        self.search_results = Histogram(
            "memorybank_search_results",
            "Memories a search returned.",
            buckets=SIZE_BUCKETS,
            registry=self._registry,
        )

    def observe_request(self, *, operation_id: str, status: int, seconds: float, error: Exception | None) -> None:
        """Count and time one memory request (the HTTP facade's `RequestObserver`)."""
        self.requests.labels(operation_id, str(status)).inc()
        self.duration.labels(operation_id).observe(seconds)
        if isinstance(error, UnavailableError):
            self.database_errors.labels(operation_id).inc()

    def emit(self, name: str, fields: Mapping[str, str | int | float]) -> None:
        """Record a search's result and candidate counts, or a secret refusal's kinds, then pass the event on."""
        if name == events.SEARCHED:
            results = fields.get("result_count")
            if isinstance(results, int):
                self.search_results.observe(results)
            candidates = fields.get("candidate_count")
            if isinstance(candidates, int):
                self.search_candidates.observe(candidates)
        if name == events.SECRET_REFUSED:
            kinds = fields.get("kinds")
            for kind in str(kinds).split(",") if kinds else ():
                self.secrets_refused.labels(kind).inc()
        if self._forward is not None:
            self._forward.emit(name, fields)

    def render(self) -> tuple[bytes, str]:
        """The metrics in the Prometheus text format, summed over every worker in multiprocess mode."""
        if os.environ.get(MULTIPROCESS_DIR_ENV):
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # registers itself
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self._registry), CONTENT_TYPE_LATEST
