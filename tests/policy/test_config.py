"""The [policy] settings: actions, TTL rules and retention, with per-namespace overrides; mistakes named."""

from __future__ import annotations

from typing import Any

import pytest

from memdir import ConfigError, WritePolicy
from memdir.policy.config import TtlRule, parse_duration, policy_from_section

SECTION: dict[str, Any] = {
    "secrets": "block",
    "injection": "warn",
    "keep_versions": "90d",
    "ttl": {"scratch/**": "7d", "inbox/*": "2w"},
    "namespaces": {"lab": {"injection": "quarantine", "ttl": {"scratch/**": "1h"}, "keep_versions": 60}},
}


def test_nothing_configured_means_redact_secrets_and_warn_about_injections() -> None:
    config = policy_from_section({}, "default")
    assert config.write == WritePolicy(secrets="redact", injection="warn")
    assert (config.ttl, config.keep_versions) == ((), None)


def test_the_section_and_a_namespace_override() -> None:
    default = policy_from_section(SECTION, "default")
    assert default.write == WritePolicy(secrets="block", injection="warn")
    assert default.ttl == (TtlRule("scratch/**", 7 * 86_400), TtlRule("inbox/*", 14 * 86_400))
    assert default.keep_versions == 90 * 86_400
    lab = policy_from_section(SECTION, "lab")
    assert lab.write == WritePolicy(secrets="block", injection="quarantine")
    assert lab.ttl[0] == TtlRule("scratch/**", 3600)  # the namespace's rules are tried first
    assert lab.keep_versions == 60


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("12h", 43_200), ("7d", 604_800), ("2w", 1_209_600), (5, 5)]
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"secret": "redact"}, "settings: unknown key(s) in [policy]: secret; known: injection, keep_versions, "
         "namespaces, secrets, ttl, untrusted_injection"),
        ({"secrets": "delete"}, "settings: policy.secrets must be one of allow, warn, redact, quarantine, block, "
         "got 'delete'"),
        ({"keep_versions": "soon"}, 'settings: policy.keep_versions must be a duration such as "7d", "12h" or "30m", '
         "got 'soon'"),
        ({"ttl": {"a/**": "x"}}, 'settings: policy.ttl."a/**" must be a duration such as "7d", "12h" or "30m", '
         "got 'x'"),
        ({"namespaces": {"default": {"namespaces": {}}}}, "settings: unknown key(s) in [policy.namespaces.default]: "
         "namespaces; known: injection, keep_versions, secrets, ttl, untrusted_injection"),
    ],
)  # fmt: skip
def test_mistakes_are_named(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        policy_from_section(section, "default")
    assert str(caught.value) == message
