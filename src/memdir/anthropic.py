"""memdir for the Anthropic Python SDK: memory tool classes its tool runner drives unchanged.

    import anthropic
    import memdir
    from memdir.anthropic import MemoryTool

    client = anthropic.Anthropic()
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-5-5",
        max_tokens=2048,
        messages=[{"role": "user", "content": "Remember that I like coffee."}],
        tools=[MemoryTool(memdir.open_store("sqlite:///home/me/memory.db"))],
        betas=["context-management-2025-06-27"],
    )
    final = runner.until_done()

An application using the SDK's own local-filesystem tool switches by changing one import:
``from memdir.anthropic import LocalFilesystemMemoryTool`` instead of ``BetaLocalFilesystemMemoryTool``
(the async one likewise). The files stay where they were, ``<base_path>/memories/...``.
"""

from __future__ import annotations

from .integrations.anthropic import (
    AsyncLocalFilesystemMemoryTool,
    AsyncMemoryTool,
    LocalFilesystemMemoryTool,
    MemoryTool,
    history_path,
)

__all__ = [
    "AsyncLocalFilesystemMemoryTool",
    "AsyncMemoryTool",
    "LocalFilesystemMemoryTool",
    "MemoryTool",
    "history_path",
]
