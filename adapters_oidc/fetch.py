"""Reading an issuer's JSON documents over HTTP; every failure becomes `UnavailableError` (answered 503)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx2

from memorybank_core import UnavailableError

logger = logging.getLogger("memorybank.oauth")

MAX_DOCUMENT_BYTES = 1_000_000
"""Metadata, key sets and introspection answers are small; anything larger is refused unread."""


def get_json(http: httpx2.Client, url: str, *, what: str) -> Mapping[str, Any]:
    """GET `url` and return its JSON object.

    Raises:
        UnavailableError: the request failed, the status is not 200, or the body is not a JSON object.
    """
    try:
        response = http.get(url, headers={"Accept": "application/json"})
    except httpx2.HTTPError as error:
        logger.warning("oauth.fetch_failed what=%s error=%s", what, type(error).__name__)
        raise UnavailableError(f"the {what} could not be fetched") from error
    return json_object(response, what=what)


def json_object(response: httpx2.Response, *, what: str) -> Mapping[str, Any]:
    """The JSON object in a 200 response.

    Raises:
        UnavailableError: another status, an oversized body, or a body that is not a JSON object.
    """
    if response.status_code != 200:
        logger.warning("oauth.fetch_failed what=%s status=%s", what, response.status_code)
        raise UnavailableError(f"the {what} could not be fetched (HTTP {response.status_code})")
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise UnavailableError(f"the {what} is too large")
    try:
        document = response.json()
    except ValueError as error:
        raise UnavailableError(f"the {what} is not JSON") from error
    if not isinstance(document, dict):
        raise UnavailableError(f"the {what} is not a JSON object")
    return document
