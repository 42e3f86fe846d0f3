"""Ids of memory stores, memories and memory versions: a prefix and 24 random characters (about 124 bits).

Random rather than counted: an id says nothing about how many stores, memories or changes anyone has, and one
tenant cannot guess another's. Each id is checked by its shape before any database work, so a hostile value
costs nothing and never reaches a query as anything but a parameter.
"""

from __future__ import annotations

import re
import secrets

__all__ = ["MEMORY", "STORE", "VERSION", "is_id", "new_id"]

STORE = "memstore_"
MEMORY = "mem_"
VERSION = "memver_"

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_LENGTH = 24
_SHAPES = {prefix: re.compile(re.escape(prefix) + f"[0-9a-z]{{{_LENGTH}}}") for prefix in (STORE, MEMORY, VERSION)}


def new_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(_LENGTH))


def is_id(prefix: str, value: object) -> bool:
    return isinstance(value, str) and _SHAPES[prefix].fullmatch(value) is not None
