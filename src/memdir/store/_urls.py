"""Store URLs as they may be shown: with any password or token taken out."""

from __future__ import annotations

import urllib.parse

__all__ = ["redact_url", "split_query"]

# A memdir server's URL carries its token as the whole user part (``http://TOKEN@host:8765``).
_TOKEN_SCHEMES = ("http", "https")


def redact_url(url: str) -> str:
    """The store URL as it may be shown (``memdir where``, logs, errors): a password, in the user part
    (``postgresql://me:secret@db/m``) or the query (``?password=secret``), and a server's token
    (``http://TOKEN@host``) replaced by ``***``.

    The user part is not found as `urllib.parse.urlsplit` finds it: that ends it at a ``#`` or ``?``, so a
    password holding one (which libpq takes as written) was shown whole. Everything before the last ``@`` ahead
    of the first ``/`` is hidden as the user part (libpq ends it at the first: hiding more is the safe side)."""
    scheme, sep, rest = url.partition("://")
    if not sep or len(scheme) < 2:  # a directory path (or a Windows drive) has no password
        return url
    at = _user_end(rest)
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        if scheme.lower() in _TOKEN_SCHEMES and not colon:
            rest = "***" + rest[at:]
        elif colon:
            rest = f"{user}:***{rest[at:]}"
    head, question, query = rest.partition("?")
    return f"{scheme}://{head}{question}{_without_password(query)}"


def split_query(url: str) -> tuple[str, str]:
    """(the URL up to its query, the query): the ``?`` that starts it is the first after the user part, which
    may hold one. The user part ends where libpq ends it, at the first ``@`` ahead of any ``/`` (`redact_url`
    hides up to the last, the safe side for what is shown)."""
    scheme, sep, rest = url.partition("://")
    at = rest.find("@", 0, _index(rest, "/")) if sep else -1
    head, _, query = rest[at + 1 :].partition("?")
    return f"{scheme}{sep}{rest[: at + 1]}{head}", query


def _user_end(rest: str) -> int:
    """The index of the ``@`` that ends the user part of ``rest`` (the URL after ``://``), or -1."""
    first = rest.find("@")
    if first < 0:
        return -1
    slash = rest.find("/")
    # The authority ends at the first "/", or without one at the first "?" after the user part: an "@" in the
    # query (application_name=me@work) is the query's.
    end = slash if slash >= 0 else _index(rest[first:], "?") + first
    at = rest.rfind("@", 0, end)
    if at < 0:  # libpq sees no user part and refuses a URL whose password holds a "/": hide what looks like one
        at = rest.rfind("@", 0, _index(rest, "?"))
    return at


def _index(text: str, char: str) -> int:
    found = text.find(char)
    return len(text) if found < 0 else found


def _without_password(query: str) -> str:
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    if not any(key == "password" for key, _ in pairs):
        return query  # shown exactly as given
    return urllib.parse.urlencode([(key, "***" if key == "password" else value) for key, value in pairs], safe="*")
