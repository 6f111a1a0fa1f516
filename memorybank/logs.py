"""How `memorybank serve` logs: plain text or JSON lines (`--log-format json`), with the request id on each.

One `logging.config.dictConfig` dictionary, handed to uvicorn, which applies it in every worker
process. Log records carry ids, counts and timings only (see `adapters_http.endpoint`).
"""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS

from adapters_http import current_request_id

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class RequestIdFilter(logging.Filter):
    """Puts the running request's id on every record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Add `request_id`; keep every record."""
        record.request_id = current_request_id()
        return True


#: The logger name uvicorn's own lines (start-up, shutdown, its errors) are shown under: the server's, not
#: `uvicorn.error`, which reads as an error on every start-up line.
SERVER_LOGGER = "memorybank.server"
_UVICORN_LOGGERS = frozenset({"uvicorn", "uvicorn.error"})


class ServerLoggerName(logging.Filter):
    """Shows uvicorn's lines under `SERVER_LOGGER`; its level (INFO, ERROR) still says what each one is."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rename uvicorn's records; keep every record."""
        if record.name in _UVICORN_LOGGERS:
            record.name = SERVER_LOGGER
        return True


def logging_config(log_format: str) -> dict[str, Any]:
    """The logging configuration for `log_format` (`text` or `json`): INFO and up to stderr.

    Raises:
        ValueError: an unknown format.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}")
    formatters: dict[str, dict[str, Any]] = {
        "text": {"format": TEXT_FORMAT},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            # `pid`: with `--workers N`, which worker wrote the line.
            "fmt": ["asctime", "levelname", "name", "message", "request_id", "process"],
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger", "process": "pid"},
            # uvicorn's colour copy of each message would only repeat it.
            "reserved_attrs": [*RESERVED_ATTRS, "color_message"],
        },
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}, "server_name": {"()": ServerLoggerName}},
        "formatters": {log_format: formatters[log_format]},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": log_format,
                "filters": ["request_id", "server_name"],
            }
        },
        "root": {"level": "INFO", "handlers": ["stderr"]},
        # uvicorn's loggers write through the root handler, so they share the format.
        "loggers": {
            name: {"level": "INFO", "handlers": [], "propagate": True} for name in ("uvicorn", "uvicorn.error")
        },
    }
