"""Store URLs as they may be shown: with any password taken out."""

from __future__ import annotations

import urllib.parse

__all__ = ["redact_url"]


def redact_url(url: str) -> str:
    """The store URL as it may be shown (``memdir where``, logs, errors): a password, in the user part
    (``postgresql://me:secret@db/m``) or the query (``?password=secret``), replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme or len(parts.scheme) == 1:  # a directory path (or a Windows drive) has no password
        return url
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    shown_query = parts.query
    if any(key == "password" for key, _ in query):
        hidden = [(key, "***" if key == "password" else value) for key, value in query]
        shown_query = urllib.parse.urlencode(hidden, safe="*")
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{host}"
    if (netloc, shown_query) == (parts.netloc, parts.query):
        return url  # shown exactly as given
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=shown_query))
