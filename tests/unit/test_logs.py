"""`memorybank serve`'s logs: uvicorn's start-up lines are the server's, not `uvicorn.error` (issue 28, finding 7)."""

from __future__ import annotations

import io
import json
import logging
import logging.config
from collections.abc import Iterator

import pytest

from memorybank.logs import logging_config


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize("log_format", ["text", "json"])
def test_uvicorns_start_up_line_is_logged_under_the_servers_name(
    log_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    logging.config.dictConfig(logging_config(log_format))

    logging.getLogger("uvicorn.error").info("Application startup complete.")

    line = stream.getvalue().strip()
    name = json.loads(line)["logger"] if log_format == "json" else line.split(" ")[3]
    assert name == "memorybank.server"
    assert "uvicorn.error" not in line
