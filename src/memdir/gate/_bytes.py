"""What the gate does with content that is not UTF-8 text: an image (PNG, JPEG: a limit of its own, never read as
text) or text of another encoding (UTF-16, Latin-1). Bytes cannot be redacted, or held for review as text,
without corrupting them; so what the policy would redact or hold in them refuses the write instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MemdirError
from ._limits import check_size, image_name, is_image, readable_runs
from ._screen import blocked

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..policy.limits import Limits
    from ..policy.pipeline import WritePolicy
    from ..store._base import Store
    from ._caller import Caller
    from ._receipt import Receipt

__all__ = ["check_image_move", "screen_bytes"]

_REFUSED = frozenset({"quarantine", "block"})  # and a secret's "redact": bytes cannot be redacted or held


def screen_bytes(
    policy: WritePolicy, caller: Caller, target: MemoryPath, content: bytes, receipt: Receipt, *, image: bool = False
) -> bytes:
    """``content`` as it may be stored, or `BlockedError`. Secrets are looked for in its lossy text (an image's
    bytes are no text: not there) and in its printable runs (`readable_runs`: an image's text chunks, UTF-16 and
    UTF-32 text), which is how anyone who has the bytes reads a secret out of them.

    The lossy text is also what the memory stores API shows a model (with U+FFFD for what is not UTF-8), so an
    instruction in it is screened as in text: warned of, or refused where the policy would hold it."""
    lossy = () if image else (content.decode("utf-8", "replace"),)
    found = [f for text in lossy for f in policy.findings(text, untrusted=caller.untrusted)]
    found += [f for text in readable_runs(content) if text for f in policy.secrets_in(text)]
    acted = [f for f in found if f.action in _REFUSED or (f.kind == "secret" and f.action == "redact")]
    if acted:
        receipt.findings, receipt.outcome = acted, "block"
        raise blocked(target, acted, binary=True)
    warned = [f for f in found if f.action == "warn"]
    if warned:
        receipt.findings, receipt.outcome = warned, "warn"
    return content


def check_image_move(store: Store, limits: Limits, source: MemoryPath, dest: MemoryPath) -> None:
    """An image moved to a name that is not an image's becomes a file like any other, whose limit is the per-file
    one (`FileTooLargeError`): its bytes were let in under the image limit, and were never read as text."""
    if not image_name(source) or image_name(dest):
        return
    try:
        content = store.read(source).content
    except MemdirError:
        return  # not a file (a directory: its files keep their names), or not there: the move will say so
    if is_image(source, content):
        check_size(limits, dest, len(content), image=False)
