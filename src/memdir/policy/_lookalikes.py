"""The look-alikes of the secrets corpus (`memdir.policy._corpus`): what memory files hold that looks most like a
credential and is not one, in families, each value fresh from a seeded random generator."""

from __future__ import annotations

import base64
import string
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

__all__ = ["NEGATIVES", "negatives"]

_ALNUM = string.ascii_letters + string.digits
_B64URL = _ALNUM + "-_"
_HEX = "0123456789abcdef"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _sha(rng: random.Random, n: int = 40) -> str:
    return _s(rng, _HEX, n)


def _b64(rng: random.Random, n: int) -> str:
    return base64.b64encode(rng.randbytes(n)).decode()


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


_WORDS = ("deploy", "billing", "search", "export", "nightly", "staging", "review", "cache", "queue", "ledger")


def _w(rng: random.Random) -> str:
    return rng.choice(_WORDS)


# Each family: what memory files hold that looks most like a credential and is not one.
NEGATIVES: dict[str, Callable[[random.Random], str]] = {
    "git-sha": lambda r: r.choice(
        [
            f"fixed in commit {_sha(r)} (see #{r.randrange(9999)})",
            f"commit {_sha(r)}\nAuthor: Dana <dana@example.com>\n\n    {_w(r)}: retry on 503",
            f'"sha": "{_sha(r)}", "ref": "refs/heads/main"',
            f"revision: {_sha(r)}",
            f"Merge {_sha(r)[:12]} into {_sha(r)[:12]}",
        ]
    ),
    "sha256": lambda r: r.choice(
        [
            f"{_sha(r, 64)}  dist/{_w(r)}-1.4.2.tar.gz",
            f"checksum: sha256:{_sha(r, 64)}",
            f"image: ghcr.io/acme/{_w(r)}@sha256:{_sha(r, 64)}",
            f'"integrity": "sha512-{_b64(r, 64)}"',
            f'etag = "{_sha(r, 32)}"',
        ]
    ),
    "uuid": lambda r: r.choice(
        [
            f"request id {_uuid(r)} failed with 502",
            f'"id": "{_uuid(r)}", "status": "done"',
            f"trace-id: {_uuid(r)}",
            f"correlation_id={_uuid(r)}",
            f"tenant {_uuid(r)}",
        ]
    ),
    "base64-image": lambda r: f"![chart](data:image/png;base64,{_b64(r, r.choice([120, 600, 2400]))})",
    "hex-log-id": lambda r: (
        f"2026-11-28T10:{r.randrange(60):02d}:00Z INFO span={_sha(r, 16)} trace={_sha(r, 32)} "
        f"{_w(r)} done in {r.randrange(999)}ms"
    ),
    "version": lambda r: r.choice(
        [
            f"upgraded to {r.randrange(9)}.{r.randrange(30)}.{r.randrange(9)}-rc.{r.randrange(5)}",
            f'version = "{r.randrange(9)}.{r.randrange(99)}.{r.randrange(99)}"',
            f"node v{r.randrange(16, 24)}.{r.randrange(20)}.{r.randrange(9)}, python 3.12.7",
            f"build 2026{r.randrange(1, 12):02d}{r.randrange(1, 28):02d}.{r.randrange(9)}",
        ]
    ),
    "path": lambda r: r.choice(
        [
            f"/usr/local/lib/python3.12/site-packages/{_w(r)}/auth/token_store.py",
            f"src/{_w(r)}/secrets/_keyring_backend.py",
            "~/.ssh/id_ed25519 and ~/.config/gh/hosts.yml",
            f"C:\\Users\\dana\\AppData\\Roaming\\{_w(r)}\\credentials.json",
            f"/run/secrets/{_w(r)}_db_password",
        ]
    ),
    "url": lambda r: r.choice(
        [
            f"https://docs.example.com/api/v2/tokens?page={r.randrange(9)}&sort=desc",
            f"https://github.com/acme/{_w(r)}/blob/{_sha(r)}/src/auth/token.py#L{r.randrange(400)}",
            f"https://www.youtube.com/watch?v={_s(r, _B64URL, 11)}",
            f"https://{_w(r)}.example.com/reset-password?step=2",
            f"ssh://git@github.com/acme/{_w(r)}.git",
            f"https://dana@{_w(r)}.example.com/login",
        ]
    ),
    "setting-about-a-secret": lambda r: r.choice(
        [
            f"password_min_length = {r.randrange(8, 20)}",
            f"PASSWORD_MAX_AGE_DAYS={r.randrange(30, 365)}",
            f"password_reset_timeout: {r.randrange(600, 7200)}",
            f"token_ttl = {r.randrange(60, 86400)}",
            f"max_tokens: {r.choice([1024, 4096, 8192])}",
            "token_type: bearer",
            f'secret_name = "prod/{_w(r)}/password"',
            'api_key_header = "X-API-Key"',
            "auth_method: oauth2",
            f"SECRET_KEY_FILE=/run/secrets/{_w(r)}",
            f"min_password_length: {r.randrange(8, 16)}",
            "password_required: true",
            f"num_tokens = {r.randrange(9999)}",
        ]
    ),
    "keyed-non-secret": lambda r: r.choice(
        [
            f'next_page_token: "{_b64(r, 24)}"',
            f'cache_key = "{_sha(r, 64)}"',
            f"idempotency_key: {_uuid(r)}",
            f'"key": "{_sha(r)}"',
            f'<input type="hidden" name="csrf_token" value="{_sha(r, 40)}">',
            f"public_key = {_b64(r, 32)}",
            f"key_fingerprint: SHA256:{_b64(r, 32)[:43]}",
            'tokenizer: "cl100k_base"',
            f"primary_key = {r.randrange(10**6)}",
            f'"sessionId": "{_sha(r, 32)}"',
            f"request_token_url = https://api.{_w(r)}.com/oauth",
            f"nonce={_sha(r, 32)}",
            f'storage_key: "uploads/{_uuid(r)}.png"',
            f"token_hash = {_sha(r, 64)}",
        ]
    ),
    "reference": lambda r: r.choice(
        [
            'api_key = os.environ["API_KEY"]',
            'token = request.headers.get("Authorization")',
            "password: str",
            "password = getpass.getpass()",
            "secret = settings.SECRET_KEY",
            '"password": ""',
            "password: ${DB_PASSWORD}",
            "export GITHUB_TOKEN=$(gh auth token)",
            "API_KEY={{ secrets.API_KEY }}",
            "token: !vault prod/token",
            "const token = process.env.GITHUB_TOKEN;",
            "password = user.password_hash",
            "apiKey: config.apiKey,",
            "client_secret = load_secret('billing')",
            "DB_PASSWORD=${DB_PASSWORD:?set it}",
            "auth = HTTPBasicAuth(user, pw)",
        ]
    ),
    "placeholder": lambda r: r.choice(
        [
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "OPENAI_API_KEY=sk-...",
            "token: <your-token>",
            "SLACK_BOT_TOKEN=xoxb-your-token-here",
            "API_KEY=your-api-key-here",
            "password: changeme",
            "token: ${TOKEN}",
            "postgres://user:password@localhost/db",
            "STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
            "GITLAB_TOKEN=glpat-xxxxxxxxxxxxxxxxxxxx",
            "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
            "Authorization: Bearer <token>",
            "password = '********'",
            "secret: xxxx",
            "api_key: <API_KEY>",
            "ANTHROPIC_API_KEY=sk-ant-api03-...",
            "https://user:pass@example.com",
            "DB_PASSWORD=REPLACE_ME",
        ]
    ),
    "conversation": lambda r: r.choice(
        [
            "User: How do I rotate my API key?\nAssistant: Open Settings > API keys, create a new key, update the app, "
            "then revoke the old one.",
            "User: what's a good password policy?\nAssistant: At least 12 characters, checked against breached lists; "
            "no forced rotation.",
            "Assistant: I stored the token in the keychain, not in memory. User: thanks!",
            "User: my password: is it safe to keep it in a note?\nAssistant: No: use a password manager.",
            "User: where does the secret go?\nAssistant: In the CI settings, as a masked variable named DEPLOY_TOKEN.",
        ]
    ),
    "benign-prompt": lambda r: r.choice(
        [
            "Write a Python function that checks a password has 12 characters, a digit and a symbol.",
            "Explain how JWT signature verification works and when to use RS256 over HS256.",
            "Summarise the difference between an access token and a refresh token in OAuth 2.0.",
            "Draft a runbook step: if the API key leaks, revoke it, rotate it and audit the logs.",
            f"Refactor the {_w(r)} module so the secret key is loaded from the environment, not hard-coded.",
            "How many tokens does a 1,000-word essay use with the Claude tokenizer?",
        ]
    ),
    "near-miss": lambda r: r.choice(
        [
            f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_b64(r, 24)[:43]} dana@laptop",
            f"-----BEGIN CERTIFICATE-----\n{_b64(r, 96)}\n-----END CERTIFICATE-----",
            f"-----BEGIN PUBLIC KEY-----\n{_b64(r, 96)}\n-----END PUBLIC KEY-----",
            f"color: #{_sha(r, 6)}; background: #{_sha(r, 6)};",
            f"pod {_w(r)}-{_s(r, _HEX, 10)}-{_s(r, _ALNUM.lower(), 5)}",
            f"golang.org/x/crypto v0.31.0 h1:{_b64(r, 32)}",
            f"fe80::{_sha(r, 4)}:{_sha(r, 4)}:{_sha(r, 4)}:{_sha(r, 4)}",
            f"order {r.randrange(10**15, 10**16)}, tracking {r.randrange(10**21, 10**22)}",
            f"call +1 415 555 {r.randrange(1000, 9999)}",
            f"stripe publishable key pk_live_{_s(r, _ALNUM, 24)}",
            f"key: {_w(r)}-{r.randrange(99)}",
            f"The keyboard shortcut is Ctrl+Shift+{r.choice('PKT')}",
            f"monkey_patch = {_w(r)}_{r.randrange(9)}",
            "AbstractSingletonProxyFactoryBean",
            f"id: {_sha(r, 24)}",
        ]
    ),
}


def negatives(rng: random.Random, per_family: int) -> list[tuple[str, str]]:
    """(family, text) pairs: ``per_family`` of each family."""
    return [(family, make(rng)) for family, make in NEGATIVES.items() for _ in range(per_family)]
