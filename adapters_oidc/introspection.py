"""RFC 7662 token introspection, for opaque access tokens: the issuer says whether the token is active."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx2

from adapters_oidc.fetch import json_object
from adapters_oidc.settings import IntrospectionSettings
from memorybank_core import CredentialsRefusedError, UnavailableError

logger = logging.getLogger("memorybank.oauth")


def introspect(http: httpx2.Client, endpoint: str, token: str, settings: IntrospectionSettings) -> Mapping[str, Any]:
    """The issuer's introspection answer for an active token.

    Raises:
        CredentialsRefusedError: the issuer says the token is not active.
        UnavailableError: the introspection endpoint could not be asked.
    """
    try:
        response = http.post(
            endpoint,
            data={"token": token, "token_type_hint": "access_token"},
            auth=httpx2.BasicAuth(settings.client_id, settings.client_secret),
            headers={"Accept": "application/json"},
        )
    except httpx2.HTTPError as error:
        logger.warning("oauth.introspection_failed error=%s", type(error).__name__)
        raise UnavailableError("the token introspection endpoint could not be reached") from error
    answer = json_object(response, what="token introspection answer")
    if answer.get("active") is not True:
        raise CredentialsRefusedError("the issuer says the token is not active")
    return answer
