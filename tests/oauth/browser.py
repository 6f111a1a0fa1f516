"""A minimal browser for the provider's own login and consent forms (dev interactions), in Python.

Follows redirects, keeps cookies, posts the forms; stops at `redirect_uri` and returns its query.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2


def sign_in_at_provider(authorization_url: str, *, login: str, redirect_uri: str) -> dict[str, str]:
    """Log in as `login` and consent; the query parameters the provider redirects back with."""
    with httpx2.Client(timeout=10, follow_redirects=False) as browser:
        response = browser.get(authorization_url)
        for _ in range(20):
            if response.is_redirect:
                target = urljoin(str(response.url), response.headers["location"])
                if target.startswith(redirect_uri):
                    return {name: values[0] for name, values in parse_qs(urlsplit(target).query).items()}
                response = browser.get(target)
                continue
            assert response.status_code == 200, response.text[:300]
            action = re.search(r'<form[^>]*action="([^"]+)"', response.text)
            prompt = re.search(r'name="prompt" value="([a-z]+)"', response.text)
            assert action is not None
            assert prompt is not None
            fields = {"prompt": prompt.group(1)}
            if prompt.group(1) == "login":
                fields |= {"login": login, "password": "any password"}
            response = browser.post(urljoin(str(response.url), action.group(1).replace("&amp;", "&")), data=fields)
    raise AssertionError("the sign-in never came back to the redirect URI")


def cancel_at_provider(authorization_url: str, *, redirect_uri: str) -> dict[str, str]:
    """Choose "Cancel" on the provider's login page; the query parameters it redirects back with."""
    with httpx2.Client(timeout=10, follow_redirects=False) as browser:
        response = browser.get(authorization_url)
        while response.is_redirect:
            response = browser.get(urljoin(str(response.url), response.headers["location"]))
        cancel = re.search(r'<a href="([^"]+)">\[ Cancel \]</a>', response.text)
        assert cancel is not None, response.text[:300]
        response = browser.get(urljoin(str(response.url), cancel.group(1).replace("&amp;", "&")))
        for _ in range(5):
            target = urljoin(str(response.url), response.headers["location"])
            if target.startswith(redirect_uri):
                return {name: values[0] for name, values in parse_qs(urlsplit(target).query).items()}
            response = browser.get(target)
    raise AssertionError("the cancelled sign-in never came back to the redirect URI")
