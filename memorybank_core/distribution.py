"""How this copy of memorybank was installed, so a hint to add an extra names a command that works.

memorybank is not on a package index: `pip install 'memorybank[server]'` fails for everyone who
installed it from a checkout or a wheel. The installer records where a distribution came from
(PEP 610's `direct_url.json`); the hint installs the extra from that same place.
"""

from __future__ import annotations

import json
from urllib.parse import unquote, urlparse

DISTRIBUTION = "memorybank"


def install_command(extra: str) -> str:
    """The pip command that adds `extra` (e.g. `server`, `mysql`) to this installation of memorybank."""
    import importlib.metadata  # here, not at import time: only a failing command needs it

    # Every record of memorybank on the path: an editable install also leaves setuptools'
    # `memorybank.egg-info` in the checkout, which comes first when the checkout is the working
    # directory and knows nothing of where the install came from; the installer's record does.
    records = [d.read_text("direct_url.json") for d in importlib.metadata.distributions(name=DISTRIBUTION)]
    if not records:
        # Run from a checkout that was never installed (PYTHONPATH): install it, with the extra.
        return f"pip install -e '.[{extra}]' (in the memorybank checkout)"
    return _command_for(next((r for r in records if r is not None), None), extra)


def _command_for(direct_url: str | None, extra: str) -> str:
    """The install command for `extra`, given the distribution's `direct_url.json` (None: from an index)."""
    if direct_url is None:
        return f"pip install 'memorybank[{extra}]'"
    try:
        origin = json.loads(direct_url)
        url = str(origin["url"])
    except (ValueError, KeyError, TypeError):
        return f"pip install 'memorybank[{extra}]' from where you installed memorybank"
    parsed = urlparse(url)
    if parsed.scheme == "file":
        path = unquote(parsed.path)
        editable = bool(origin.get("dir_info", {}).get("editable"))
        return f"pip install {'-e ' if editable else ''}'{path}[{extra}]'"
    vcs = origin.get("vcs_info", {}).get("vcs")
    source = f"{vcs}+{url}" if vcs and not url.startswith(f"{vcs}+") else url
    return f"pip install 'memorybank[{extra}] @ {source}'"
