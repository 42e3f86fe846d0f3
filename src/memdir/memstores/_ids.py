"""Ids of memory stores, memories and memory versions: a prefix and 24 random characters (120 bits).

Random rather than counted: an id says nothing about how many stores, memories or changes anyone has, and one
tenant cannot guess another's. Each id is checked by its shape before any database work, so a hostile value
costs nothing and never reaches a query as anything but a parameter.
"""

from __future__ import annotations

import base64
import re
import secrets

__all__ = ["MEMORY", "STORE", "VERSION", "is_id", "new_id"]

STORE = "memstore_"
MEMORY = "mem_"
VERSION = "memver_"

_SHAPES = {prefix: re.compile(re.escape(prefix) + "[a-z2-7]{24}") for prefix in (STORE, MEMORY, VERSION)}


def new_id(prefix: str) -> str:
    # 15 random bytes are 24 characters of base32 exactly (no padding); lower case reads better in a URL.
    return prefix + base64.b32encode(secrets.token_bytes(15)).decode("ascii").lower()


def is_id(prefix: str, value: object) -> bool:
    return isinstance(value, str) and _SHAPES[prefix].fullmatch(value) is not None
