"""BLAKE2b without hashlib: hashlib loads OpenSSL first, a few ms of every cold query, for a
function the standard library builds in anyway."""
from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

__all__ = ["blake2b"]
