"""Ids of memory stores, memories and memory versions: a prefix and 24 base32 characters (120 bits).

A store's id is random. A memory's and a version's are *keyed*: the HMAC-SHA256, under a random key of the
database (`IdKey`), of the namespace and the number of the version in the namespace's change log (for a memory, of
the version that made it). Either way an id says nothing about how many stores, memories or changes anyone has,
and without the key no one can compute or guess one; but a keyed id is known the moment its version is written,
so a write can answer with its ids before they are recorded, and any process that takes the version in later
records the same ones. Each id is checked by its shape before any database work, so a hostile value costs nothing
and never reaches a query as anything but a parameter.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

__all__ = ["MEMORY", "STORE", "VERSION", "IdKey", "is_id", "new_id"]

STORE = "memstore_"
MEMORY = "mem_"
VERSION = "memver_"

_SHAPES = {prefix: re.compile(re.escape(prefix) + "[a-z2-7]{24}") for prefix in (STORE, MEMORY, VERSION)}


def new_id(prefix: str) -> str:
    # 15 random bytes are 24 characters of base32 exactly (no padding); lower case reads better in a URL.
    return prefix + base64.b32encode(secrets.token_bytes(15)).decode("ascii").lower()


def is_id(prefix: str, value: object) -> bool:
    return isinstance(value, str) and _SHAPES[prefix].fullmatch(value) is not None


class IdKey:
    """The key a namespace's memory and version ids are made with (one per database, random, kept there)."""

    def __init__(self, key: bytes, namespace: str) -> None:
        self._key, self._namespace = key, namespace

    def version(self, number: int) -> str:
        """The id of the version numbered ``number`` in the namespace's log."""
        return self._make(VERSION, f"v/{number}")

    def memory(self, first: int) -> str:
        """The id of the memory whose first version is numbered ``first``."""
        return self._make(MEMORY, f"m/{first}")

    def _make(self, prefix: str, what: str) -> str:
        digest = hmac.new(self._key, f"{self._namespace}/{what}".encode(), hashlib.sha256).digest()
        return prefix + base64.b32encode(digest[:15]).decode("ascii").lower()
