"""Prometheus metrics for the memory bank (prometheus_client), one registry per app, multiprocess-aware.

`PrometheusMetrics` is both the HTTP facade's request observer and an `EventSink`: it counts
requests by operationId and status, times them, counts database errors and records how many
memories each search returned. Labels are operationIds and statuses only:
never a user id, memory content or query text.
"""

from adapters_metrics.prometheus import MULTIPROCESS_DIR_ENV, PrometheusMetrics

__all__ = ["MULTIPROCESS_DIR_ENV", "PrometheusMetrics"]
