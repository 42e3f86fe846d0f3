"""Claude Code's own memory, kept safe: its auto-memory and sub-agent memory directories as memdir stores, in
place, with the history of every change Claude Code (or a person) makes.

- `locate_url` / ``claude-code:`` store URLs: a directory found exactly as Claude Code finds it (`_locate`);
- `discover`: every such directory on this machine;
- `snapshot`: record what changed since the last look (the hooks `install_hooks` adds run it);
- `status`: files, sizes, what of each ``MEMORY.md`` Claude Code loads, secrets, malformed frontmatter;
- `restore_all`: a directory back to how it was at a moment, as new versions;
- `watch`: record changes as they happen.

Nothing is written inside Claude Code's directories except by memory commands: history, indexes and manifests
live under ``<data dir>/claude-code/``. Details and sources: docs/claude-code.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._discover import discover
    from ._hooks import install_hooks, uninstall_hooks
    from ._locate import Claude, Location
    from ._restore import restore_all
    from ._snapshot import Snapshot, snapshot
    from ._status import status
    from ._stores import locate_url, open_location, open_url, store_id
    from ._watch import watch

__all__ = [
    "Claude",
    "Location",
    "Snapshot",
    "discover",
    "install_hooks",
    "locate_url",
    "open_location",
    "open_url",
    "restore_all",
    "snapshot",
    "status",
    "store_id",
    "uninstall_hooks",
    "watch",
]

# Loaded on first use: the hooks' quick check (`_quick`) imports this package and must stay light.
_LAZY = {
    "Claude": "._locate",
    "Location": "._locate",
    "Snapshot": "._snapshot",
    "discover": "._discover",
    "install_hooks": "._hooks",
    "locate_url": "._stores",
    "open_location": "._stores",
    "open_url": "._stores",
    "restore_all": "._restore",
    "snapshot": "._snapshot",
    "status": "._status",
    "store_id": "._stores",
    "uninstall_hooks": "._hooks",
    "watch": "._watch",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memdir.claudecode' has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
