"""The gate's limits on one write: the size of a file (an image has a limit of its own) and the namespace's limits
a door may narrow. The namespace's are checked by the backend in the write's transaction where it can."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from ..errors import FileTooLargeError

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..policy.limits import Limits
    from ..store._records import Quota

__all__ = ["as_text", "check_size", "effective_quota", "image_name", "is_image", "readable_runs"]

_IMAGES = {".png": b"\x89PNG\r\n\x1a\n", ".jpg": b"\xff\xd8\xff", ".jpeg": b"\xff\xd8\xff"}


def check_size(limits: Limits, target: MemoryPath, size: int, image: bool) -> None:
    """`FileTooLargeError` when one file (an image: ``max_image_bytes``) would be over its limit."""
    maximum = limits.max_image_bytes if image else limits.max_file_bytes
    if maximum is not None and size > maximum:
        kind = "image" if image else "file"
        raise FileTooLargeError(
            f"{target.virtual} would be {size:,} bytes, over the limit of {maximum:,} bytes per {kind}",
            size=size,
            maximum=maximum,
            image=image,
        )


def effective_quota(own: Quota | None, quota: Quota | None) -> Quota | None:
    """The rules' namespace limits (``own``), narrowed by a door's own ``quota``."""
    if quota is None or own is None:
        return quota or own
    return dataclasses.replace(
        own,
        max_files=_least(own.max_files, quota.max_files),
        max_bytes=_least(own.max_bytes, quota.max_bytes),
    )


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def image_name(target: MemoryPath) -> bool:
    """Whether ``target``'s name is an image's (``.png``, ``.jpg``, ``.jpeg``)."""
    return _suffix(target) in _IMAGES


def is_image(target: MemoryPath, content: bytes) -> bool:
    """PNG and JPEG images (by name and magic bytes), which have a limit of their own and are not read as text."""
    magic = _IMAGES.get(_suffix(target))
    return magic is not None and content.startswith(magic)


def _suffix(target: MemoryPath) -> str:
    return "." + target.name.rsplit(".", 1)[-1].lower() if "." in target.name else ""


# Eight or more printable ASCII characters in a row: what a secret in bytes that are not UTF-8 text looks like to
# anyone who reads them (``strings``), in an image's text chunks or comments as in text of another encoding.
_PRINTABLE_RUN = re.compile(rb"[\t\n\r\x20-\x7e]{8,}")


def readable_runs(content: bytes) -> list[str]:
    """The printable runs of ``content``, a text per byte lane: the bytes themselves, and where they hold a NUL
    every second and fourth byte from each end, which is how UTF-16 and UTF-32 write ASCII (``g\\0h\\0p\\0_``)."""
    lanes = [content]
    if b"\x00" in content:
        lanes += [content[0::2], content[1::2], content[0::4], content[3::4]]
    return ["\n".join(run.decode("ascii") for run in _PRINTABLE_RUN.findall(lane)) for lane in lanes]


def as_text(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None
