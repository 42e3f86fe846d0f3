"""The ``memdir`` command's entry point.

``memdir claude-code snapshot`` runs in every Claude Code session's hooks, and nearly always finds nothing new:
that case is answered from a manifest with the standard library (`memdir.claudecode._quick`) before the CLI and
the stores are imported (~40 ms for the whole command instead of ~400). Everything else goes to `memdir.cli`.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    if sys.argv[1:] == ["claude-code", "snapshot"]:
        from .claudecode import _quick

        if _quick.unchanged():
            return
    from .cli import main as cli

    cli()
