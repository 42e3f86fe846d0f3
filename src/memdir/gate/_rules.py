"""What a gate enforces for one namespace: the write policy, the size limits, and whether it audits."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..policy.limits import Limits, limits_from_section
from ..policy.pipeline import WritePolicy
from ..store._records import Quota

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["Rules"]


@dataclass(frozen=True, slots=True)
class Rules:
    """The rules a `GatedStore` applies: ``policy`` screens every write, ``limits`` bound one file
    (``max_file_bytes``, ``max_image_bytes`` for images) and the namespace (``max_files``, ``max_total_bytes``),
    ``audit`` records every read and write in the audit log."""

    policy: WritePolicy = field(default_factory=WritePolicy)
    limits: Limits = field(default_factory=Limits)
    audit: bool = True

    @classmethod
    def for_namespace(
        cls, namespace: str, *, limits: Limits | None = None, settings: Settings | None = None, audit: bool = True
    ) -> Rules:
        """The rules the settings give ``namespace`` (``[policy]`` and ``[limits]``; the defaults when they say
        nothing; ``limits`` given: those), read in the process that owns the store: a client cannot bring its own."""
        from ..policy.config import load_policy  # reads the settings files: only when asked
        from ..settings import load_settings

        settings = settings or load_settings()
        if limits is None:
            limits = limits_from_section(settings.section("limits"), namespace)
        return cls(load_policy(namespace, settings).write, limits, audit)

    @property
    def quota(self) -> Quota | None:
        """The namespace limits (None: there are none)."""
        files, size = self.limits.max_files, self.limits.max_total_bytes
        return None if files is None and size is None else Quota(files, size)

    def approving(self) -> Rules:
        """The rules for applying a write a person approved: injected instructions are the reviewer's call now,
        secrets are still redacted (or refused) as the policy says."""
        policy = dataclasses.replace(self.policy, injection="allow", untrusted_injection=None)
        return dataclasses.replace(self, policy=policy)
