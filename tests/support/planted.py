"""Secrets to plant in text for the write policy's property tests, fresh from a seed (random in the issuers'
shapes: never real keys)."""

from __future__ import annotations

import random
import string

from hypothesis import assume

from memdir import scan

__all__ = ["SHAPES", "draw", "found"]

_A = string.ascii_letters + string.digits
SHAPES = ["github", "aws", "gitlab", "api-key", "password", "dsn", "aws-secret", "slack"]


def draw(seed: int, shape: str) -> tuple[str, str]:
    """(text to plant, the secret part of it)."""
    rng = random.Random(seed)
    rand = "".join(rng.choice(_A) for _ in range(40))
    return {
        "github": ("ghp_" + rand[:36], "ghp_" + rand[:36]),
        "aws": ("AKIA" + rand[:16].upper(), "AKIA" + rand[:16].upper()),
        "gitlab": ("glpat-" + rand[:20], "glpat-" + rand[:20]),
        "api-key": ("API_KEY=" + rand[:32], rand[:32]),
        "password": (f"password = Tr0ub{rand[:6]}!", f"Tr0ub{rand[:6]}!"),
        "dsn": (f"postgres://app:{rand[:16]}@db.internal:5432/app", rand[:16]),
        "aws-secret": (f"aws_secret_access_key = {rand[:20]}+/{rand[20:38]}", f"{rand[:20]}+/{rand[20:38]}"),
        "slack": ("xoxb-" + "1234567890-" + rand[:24], "xoxb-" + "1234567890-" + rand[:24]),
    }[shape]


def found(seed: int, shape: str) -> tuple[str, str]:
    """`draw`, in a test that needs the rules to find the secret written plainly (``hypothesis.assume``): a random
    value can look like a placeholder (``...your...``) or a word (a key of letters alone), which they leave alone by
    design."""
    secret_text, secret = draw(seed, shape)
    assume(any(f.kind == "secret" for f in scan(secret_text)))
    return secret_text, secret
