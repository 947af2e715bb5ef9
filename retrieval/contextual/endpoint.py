"""Where the contextualizer's requests go, as it is safe to print."""
from __future__ import annotations

import os
from urllib.parse import urlsplit

ENV_BASE_URL = "ANTHROPIC_BASE_URL"
DEFAULT_HOST = "api.anthropic.com"


def shown_url(url: str) -> str:
    """A URL with its user and password left out: an endpoint's credentials are written into
    ANTHROPIC_BASE_URL (`https://user:token@proxy`), and errors and notes print it."""
    head, sep, rest = url.partition("//")
    if not sep:
        head, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    if "?" in path:  # a key passed as a parameter (`?api_key=...`)
        path = path.partition("?")[0] + "?***"
    return f"{head}{sep}{authority}{slash}{path}"


def destination() -> str:
    """The host the requests go to: ANTHROPIC_BASE_URL's, else Anthropic's API."""
    base = os.environ.get(ENV_BASE_URL, "").strip()
    if not base:
        return DEFAULT_HOST
    try:
        parts = urlsplit(base)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host  # an IPv6 address, as a URL writes it
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return shown_url(base)
    return f"{host}{port}" if host else shown_url(base)
