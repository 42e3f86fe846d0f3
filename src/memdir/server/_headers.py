"""Security headers on every response (added by `memdir.server._guard.Guard` where a handler set none).

The API answers JSON and bytes, never a document to render: its responses forbid everything a browser could do
with them (``default-src 'none'``), being framed, and MIME sniffing — memory content is untrusted, and a file
served as ``application/octet-stream`` must never be guessed into HTML. Nothing is cached (``no-store``): memory
is private, and a shared browser's cache would keep it after sign-out. The web page sets its own policy
(`memdir.server.routers.web`).
"""

from __future__ import annotations

__all__ = ["API_CSP", "PAGE_CSP", "secure"]

API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

# The page: its own scripts, styles and images only (blob: for image files fetched with the token), no inline
# script or style, no plugins, no framing, no form posts anywhere (the sign-in form is handled by the script,
# so the token can never end up in a URL or a request body). Trusted Types with no policy make every HTML sink
# (innerHTML, outerHTML, insertAdjacentHTML, document.write) throw: memory text can only enter as text.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; "
    "manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'; "
    "require-trusted-types-for 'script'; trusted-types 'none'"
)

_DEFAULTS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", API_CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


def secure(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` with each security header the response did not set itself."""
    present = {name.lower() for name, _ in headers}
    return [*headers, *(item for item in _DEFAULTS if item[0] not in present)]
