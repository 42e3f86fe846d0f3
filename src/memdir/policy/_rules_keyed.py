"""Credentials known by what stands around them: a key word (``API_KEY=...``, ``password: ...``), a URL
(``postgres://user:pass@host``), a header, a PEM block, an AWS word; and card numbers.

These have no prefix of their own, so each rule asks more of a match than a token rule does. A value after a key
word must look like a credential and not like what configuration and code put there instead: a reference
(``os.environ["API_KEY"]``, ``${TOKEN}``, ``settings.SECRET``), a placeholder (``<your-token>``, ``xxxx``,
``changeme``), a setting *about* the secret (``password_min_length = 12``, ``token_type: bearer``), a word. A random
key has varied characters; a password (people choose them) needs a digit, a symbol or mixed case unless quoted.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._cards import card_check, may_be_card
from ._rules import (
    END,
    START,
    Rule,
    at_hint,
    back_over,
    has_marker,
    looks_random,
    placeholder,
    word_or_next_start,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["BLOCK_RULES", "KEYED_RULES"]

_PEM = re.compile(
    r"-----BEGIN (?P<what>(?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END (?P=what)-----|[A-Za-z0-9+/=\s\\n]*)",
    re.DOTALL,
)


def _pem_body(match: re.Match[str]) -> bool:
    """A key block has a key in it: `-----BEGIN PRIVATE KEY-----\\n...\\n-----END...` in the docs has none."""
    body = match.group(0)[len(match.group("what")) + 16 :].split("-----END", 1)[0].replace("\\n", "")
    return "." not in body and len(re.findall(r"[A-Za-z0-9+/]", body)) >= 24


def _mixed(match: re.Match[str]) -> bool:
    """A random key mixes cases and digits; a hex hash (lower case and digits only) or a word does not."""
    value = match.group("secret")
    return bool(re.search(r"[a-z]", value) and re.search(r"[A-Z]", value) and re.search(r"\d", value)) and (
        looks_random(value)
    )


# -- URLs ---------------------------------------------------------------------------------------------------------

_URL_PLACEHOLDERS = frozenset({"password", "pass", "passwd", "pwd", "secret", "pw", "token", "yourpassword", "changeme",
                               "key", "apikey", "api_key", "user", "username", "login", "none", "null"})  # fmt: skip


def _url_password(match: re.Match[str]) -> bool:
    value = match.group("secret")
    if value.lower().strip("<>[]{}*$%") in _URL_PLACEHOLDERS or placeholder(value):
        return False
    # A reference (`${DB_PASS}`, `$PASSWORD`, `%(pw)s`, `{password}`), a mask (`****`, `xxx`) or a port
    # (`http://host:8080@...` is not how a password looks).
    return not re.fullmatch(r"[*x.•]+|\$\{?\w+\}?|%\(?\w+\)?s?|\{\{?\s*\w+\s*\}?\}|<[^>]*>|\d{1,5}", value)


def _url_token(match: re.Match[str]) -> bool:
    return looks_random(match.group("secret"), 3.0)


_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_back_over_scheme = back_over("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-", 21)


def _scheme_start(text: str, pos: int) -> int | None:
    """Where the URL whose ``://`` is at ``pos`` starts: its scheme, which starts with a letter (``.postgres://``
    and ``-https://`` are URLs glued after a dot or a dash)."""
    start = _back_over_scheme(text, pos)
    if start is None:
        return None
    while start < pos and text[start] not in _LETTERS:
        start += 1
    return start if start < pos else None


# -- key words ----------------------------------------------------------------------------------------------------

# What an identifier is split into: `DB_PASSWORD` -> db, password; `apiKey` -> api, key; `X-Auth-Token` -> x,
# auth, token.
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SECRET_WORDS = frozenset({"token", "secret", "secrets", "apikey", "auth", "credential", "credentials", "creds",
                           "passphrase", "bearer", "secretkey", "privatekey", "accesskey", "authtoken",
                           "accesstoken", "apitoken", "apisecret", "clientsecret", "refreshtoken"})  # fmt: skip
_KEY_OWNERS = frozenset({"api", "access", "secret", "private", "signing", "encryption", "master", "license", "service",
                         "account", "client", "app", "admin", "deploy", "ingest", "write", "read", "session",
                         "webhook", "shared", "hmac", "sas", "storage", "subscription", "auth"})  # fmt: skip
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passw", "pword"})
# The last part of a name that holds something *about* a secret, not the secret: its length, file, type, expiry...
_ABOUT = frozenset({
    "length", "len", "min", "max", "size", "count", "file", "files", "path", "paths", "dir", "url", "uri", "endpoint",
    "host", "hostname", "name", "names", "id", "ids", "type", "types", "kind", "mode", "format", "policy", "rotation",
    "ttl", "expiry", "expires", "expiration", "expire", "expired", "timeout", "version", "header", "headers", "prefix",
    "suffix", "field", "fields", "param", "params", "required", "enabled", "enable", "disabled", "disable", "regex",
    "pattern", "hash", "hashed", "hashes", "hashers", "digest", "checksum", "env", "var", "variable", "ref", "label",
    "description", "desc", "hint", "placeholder", "example", "limit", "limits", "strength", "reset", "manager",
    "provider", "store", "vault", "location", "encoding", "algorithm", "algo", "scope", "scopes", "usage", "index",
    "budget", "used", "remaining", "rate", "method", "methods", "flow", "strategy", "backend", "scheme", "level",
    "days", "hours", "minutes", "seconds", "ms", "attempts", "retries", "rounds", "iterations", "chars",
    "characters", "digits", "complexity", "history", "age", "lifetime", "source", "class", "mask", "masked", "input",
    "widget", "form", "schema", "validator", "validators", "validation", "rule", "rules", "error", "errors",
    "message", "msg", "text", "title", "help", "tooltip", "button", "link", "page", "route", "view", "template",
    "handler", "callback", "fn", "func", "function", "mock", "number", "num", "total", "list",
    "bits", "bytes", "issuer", "audience", "alias", "lookup", "arn", "region", "user", "username", "login",
    "email", "owner", "created", "updated", "at", "date", "time", "counter", "status",
    "state", "flag", "on", "off", "set", "exists", "valid", "invalid", "changed", "sent", "check", "verify",
    "domain", "realm", "tenant", "server", "address", "addr", "port",
})  # fmt: skip
# Tokens that are not credentials: a page cursor, a form's CSRF token, a cache or idempotency key, a public key.
_NOT_SECRET = frozenset({"page", "cursor", "continuation", "pagination", "csrf", "xsrf", "public", "pub", "cache",
                         "idempotency", "request", "trace", "span", "correlation", "etag", "fingerprint", "sha",
                         "md5", "commit", "nonce", "tokenizer", "tokens", "primary", "foreign", "sort", "partition",
                         "object", "s3", "bucket", "upload"})  # fmt: skip
_VALUE_WORDS = frozenset({"none", "null", "nil", "true", "false", "yes", "no", "undefined", "string", "str", "text",
                          "required", "optional", "hidden", "masked", "empty", "secret", "password", "passwd", "token",
                          "changeme", "example", "sample", "test", "testing", "default", "value", "bearer", "basic",
                          "env", "environment", "unset", "disabled", "enabled", "redacted", "mypassword", "pass",
                          "letmein", "admin", "root", "guest", "user", "username"})  # fmt: skip
_NAME_BEFORE = re.compile(r"([A-Za-z]+)[ \t]+\Z")


def _parts(text: str, match: re.Match[str]) -> list[str]:
    """The parts of the key's name, with the word before it when the name is one part (``API key: ...``)."""
    parts = [p.lower() for p in _PARTS.findall(match.group("key"))]
    if len(parts) == 1:
        before = _NAME_BEFORE.search(text, max(0, match.start() - 16), match.start())
        if before is not None:
            parts.insert(0, before.group(1).lower())
    return parts


def _kind_of_name(parts: list[str]) -> str | None:
    """``"password"``, ``"secret"`` or None: what a value assigned to a name of these parts would be."""
    if not parts or parts[-1] in _ABOUT or not _NOT_SECRET.isdisjoint(parts):
        return None
    if any(p in _PASSWORD_WORDS or p.endswith(("password", "passwd")) for p in parts):
        return "password"
    if any(p in _SECRET_WORDS or p.endswith(("token", "secret", "apikey")) for p in parts):
        return "secret"
    if "key" in parts[1:] and any(p in _KEY_OWNERS for p in parts[: parts.index("key", 1)]):
        return "secret"
    return None


_REFERENCE = re.compile(
    # settings.API_KEY, process.env.TOKEN, config.apiKey, self.password, Request.Form: its last part a name (not
    # `maple.Quartz79`, a password)
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.(?:[a-z_][a-z0-9_]*|[A-Z_][A-Z0-9_]*|[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z][a-z]+)"
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+"  # API_KEY, api_key: a name, not a value
    r"|[A-Za-z]+"  # a word
    r"|[a-z][a-z0-9+.\-]*:.*"  # env:API_KEY, vault:secret/x, arn:..., https://...
    r"|[~.]{0,2}/.*|.*\.(?:json|pem|key|txt|ya?ml|env|crt|cer|p12|pfx|cfg|conf|ini|toml|md|py|sh|js|ts|png|jpe?g|gif"
    r"|pdf|csv|zip|gz|tar|html|xml|svg)"  # a path
)


def _reference(value: str) -> bool:
    """Whether ``value`` reads as a name, a path or a URL rather than a value: unless a part of it is a key
    itself (``<key>.note``, a key glued to a word by a dot)."""
    if not _REFERENCE.fullmatch(value):
        return False
    if value.isalpha():  # a word or a CamelCaseName, unless its cases are mixed as at random
        upper = sum(c.isupper() for c in value) / len(value)
        return not (len(value) >= 10 and 0.3 <= upper <= 0.7 and looks_random(value, 3.0))
    return "/" in value or ":" in value or not any(_random_part(p) for p in _PARTS_OF_NAME.split(value))


_PARTS_OF_NAME = re.compile(r"[._]")


def _random_part(part: str) -> bool:
    return len(part) >= 16 and looks_random(part, 3.0) and any(c.isdigit() for c in part) and not part.isdigit()


def _value(match: re.Match[str]) -> tuple[str, bool]:
    for group in _VALUE[:3]:
        if match.group(group) is not None:
            return match.group(group), True
    return match.group("bare"), False


_MASK = re.compile(r"[*x.•]+")


def _looks_assigned(value: str, quoted: bool) -> bool:
    """What every assigned secret is not: a reference, a template, a number, a sentence (a placeholder: checked by
    the kind's own test)."""
    if not value or value[0] in "$%{<[(" or any(c in value for c in " \t<>{}()") or _MASK.fullmatch(value):
        return False
    if value.lower() in _VALUE_WORDS or value.isdigit():
        return False
    return quoted or not _reference(value)


def _generated_key(value: str) -> bool:
    """A generated key: long enough, letters and digits (or long and varied), no runs of one character."""
    if len(value) < 12 or _reference(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return looks_random(value, 3.0) and has_alpha and (has_digit or (len(value) >= 24 and looks_random(value, 4.0)))


def _password_value(value: str, quoted: bool) -> bool:
    """A password people chose: six characters or more, and (unquoted) a digit, a symbol or mixed case."""
    if not 6 <= len(value) <= 128 or has_marker(value):
        return False
    if quoted:
        return not re.fullmatch(r"[a-z]+", value) or len(value) >= 8
    return bool(re.search(r"[\d\W_]", value) or (re.search(r"[a-z]", value) and re.search(r"[A-Z]", value)))


def _assigned(kind: str) -> Callable[[re.Match[str]], bool]:
    def check(match: re.Match[str]) -> bool:
        parts = _parts(match.string, match)
        if _kind_of_name(parts) != kind:
            return False
        value, quoted = _value(match)
        if not _looks_assigned(value, quoted) or (kind == "secret" and _cut_short(match, value, quoted)):
            return False
        return _password_value(value, quoted) if kind == "password" else _generated_key(value)

    return check


def _cut_short(match: re.Match[str], value: str, quoted: bool) -> bool:
    """A value shown cut short (``sk-ant-api03-...``) is a stand-in, unless what is shown is a key itself."""
    return not quoted and match.string.startswith("..", match.end("bare")) and placeholder(value + "...")


def _netrc_value(value: str) -> bool:
    return _looks_assigned(value, False) and _password_value(value, False)


# A name, a closing quote or bracket, an assignment (`=`, `:`, `:=`, `=>`; not `==`), a value quoted or bare.
_ASSIGNMENT = re.compile(
    r"(?P<key>[A-Za-z0-9_.\-]{1,64})[\"'`\]]{0,2}[ \t]{0,3}(?::=|=>|=(?!=)|:(?![:/]))[ \t]{0,5}"
    r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|`(?P<bq>[^`\n]{1,256})`"
    # Bare: up to the next parameter (`&page=2`) or an ellipsis, leaving out the dots that end a sentence.
    r"|(?P<bare>(?:[^\s\"'`,;()\[\]{}<>&.]|\.(?!\.)|&(?!\w+=)){1,256}?)"
    r"(?=\.*(?:[\s\"'`,;()\[\]{}<>]|&\w+=|$)|\.\.)(?![(\[{]))"
)
_VALUE = ("dq", "sq", "bq", "bare")
_SECRET_HINTS = ("key", "token", "secret", "auth", "cred", "bearer", "passphrase")
_PASSWORD_HINTS = ("pass", "pwd", "pword")


# Listed before every other rule: where one of these matches, it names the match (a service account's key is
# named as such, not as a PEM key, and neither as a secret assigned to `private_key`).
BLOCK_RULES: tuple[Rule, ...] = (
    Rule("google-service-account-key", "the private key of a Google service account",
         re.compile(r'"private_key"\s*:\s*"(?P<secret>-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----'
                    r'(?:\\n)?)"'), ("private_key",), fold=True, anchor=None, group="secret"),
    Rule("private-key", "a PEM private key", _PEM, ("PRIVATE KEY",), accept=_pem_body, multiline=True),
)  # fmt: skip

KEYED_RULES: tuple[Rule, ...] = (
    # 40 base64 characters are common (a SHA-1 in hex is 40 too): only next to an AWS or secret-key word.
    Rule("aws-secret-key", "an AWS secret access key",
         re.compile(rf"(?i:aws|secret[ _-]?(?:access[ _-]?)?key)[^\n]{{0,40}}?{START}(?<![/+])"
                    rf"(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+])"),
         ("aws", "secret"), fold=True, anchor=at_hint, accept=_mixed, group="secret"),
    # Storage accounts, Service Bus, Event Hubs: connection strings hold the key after `AccountKey=`.
    Rule("azure-storage-key", "an Azure storage account or shared access key",
         re.compile(r"(?i:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{40,86}={0,2})(?![A-Za-z0-9+/=])"),
         ("accountkey=", "sharedaccesskey="), fold=True, anchor=at_hint,
         accept=lambda m: looks_random(m.group("secret"), 3.5), group="secret"),
    Rule("azure-sas-token", "the signature of an Azure shared access signature",
         re.compile(r"[?&]sig=(?P<secret>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})"), ("sig=",), anchor=lambda _t, p: p - 1,
         accept=lambda m: looks_random(m.group("secret"), 3.5), group="secret"),
    # `123456789:AA...`, also in the bot API's URLs (`api.telegram.org/bot123456789:AA.../getMe`).
    Rule("telegram-bot-token", "a Telegram bot token",
         re.compile(rf"(?:(?<=bot)|{START})\d{{8,10}}:AA[A-Za-z0-9_\-]{{33}}{END}"), (":AA",),
         anchor=back_over("0123456789", 10), accept=lambda m: looks_random(m.group(0))),
    Rule("password-in-url", "a password in a URL",
         re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]{0,20}://(?P<user>[^\s:/?#@\"'<>\[\]]*):"
                    r"(?P<secret>[^\s/?#@\"'<>]+)@(?=[\w\-\[])"),
         ("://",), anchor=_scheme_start, accept=_url_password, group="secret", fallback=True),
    # `https://TOKEN@github.com/acme/app.git`: a token as the whole user part.
    Rule("token-in-url", "a token in a URL",
         re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]{0,20}://(?P<secret>[A-Za-z0-9_\-.~%]{20,})@(?=[\w\-\[])"),
         ("://",), anchor=_scheme_start, accept=_url_token, group="secret", fallback=True),
    Rule("authorization-header", "a credential in an Authorization header",
         re.compile(r"(?i:(?:proxy-)?authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:bearer|basic|token|apikey)[ \t]+"
                    r"(?P<secret>[A-Za-z0-9+/=._~\-]{16,})"),
         ("authorization",), fold=True, anchor=at_hint, accept=lambda m: looks_random(m.group("secret"), 3.0),
         group="secret"),
    # ~/.netrc: `machine HOST login USER password SECRET`.
    Rule("netrc-password", "a password in a .netrc entry",
         re.compile(r"(?i:login)[ \t]+\S+[ \t]+(?i:password)[ \t]+(?P<secret>\S+)"), ("login",), fold=True,
         anchor=at_hint, accept=lambda m: _netrc_value(m.group("secret")), group="secret"),
    Rule("generic-secret", "a secret value assigned to a key, token or secret name", _ASSIGNMENT, _SECRET_HINTS,
         fold=True, anchor=word_or_next_start, accept=_assigned("secret"), group=_VALUE, fallback=True),
    Rule("password", "a password assigned in configuration or code", _ASSIGNMENT, _PASSWORD_HINTS, fold=True,
         anchor=word_or_next_start, accept=_assigned("password"), group=_VALUE, fallback=True),
    Rule("card-number", "a payment card number",
         # The look-behind after the first digit, not before it: a pattern that starts with a digit lets the
         # engine skip ahead to the next digit instead of trying every position (twice as fast on prose).
         re.compile(r"\d(?<![\w.\-]\d)(?:[ \-]?\d){12,18}(?![\w\-]|\.\d)"), (), gate=may_be_card, accept=card_check),
)  # fmt: skip
