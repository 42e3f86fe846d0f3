"""The gate screens what a write changes, worked out from the content it replaces: whatever a door sends (a whole
new file, an edit in two places, a token completed or split across writes), a token is never stored raw."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir import open_store
from memdir.gate import Caller, GatedStore, Rules, changed_spans_of
from memdir.policy import WritePolicy

ALPHABET = string.ascii_letters + string.digits
WORDS = st.lists(st.sampled_from(["note", "the", "deploy", "key", "is", "\n", "- ", "## Keys\n", "token", "ok"]))


def _random_looking(tail: str) -> bool:
    """What a real token's tail looks like (``ghp_000...`` is a documented kind of placeholder, never redacted)."""
    kinds = (any(c.isupper() for c in tail), any(c.islower() for c in tail), any(c.isdigit() for c in tail))
    return all(kinds) and len(set(tail)) >= 16


def token_strategy() -> st.SearchStrategy[str]:
    """A fresh token of GitHub's shape, its tail drawn at random (shrinking a drawn string would walk it towards
    ``000...``, a placeholder; a seeded random stays a real-looking secret)."""
    tails = st.randoms(use_true_random=False).map(lambda rnd: "".join(rnd.choice(ALPHABET) for _ in range(36)))
    return tails.filter(_random_looking).map(lambda tail: "ghp_" + tail)


def text_strategy() -> st.SearchStrategy[str]:
    return WORDS.map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=text_strategy(),
    after=text_strategy(),
    token=token_strategy(),
    cut=st.integers(min_value=1, max_value=39),
    glue=st.sampled_from(["", " ", "/", "_", "-", "=", "\n", "https://", "vault/", "AWS_ID="]),
    tail=st.sampled_from(["", " ", "@github.com/acme/app.git", "/rotate", "_prod", "-zz", "\n"]),
)
def test_a_token_written_in_two_steps_is_never_stored_raw(
    before: str, after: str, token: str, cut: int, glue: str, tail: str
) -> None:
    """First a file holding part of the token, then a whole-file write (as PUT or the web page sends it) that
    completes it, wherever it sits (after a separator, in a URL, glued before `_prod`): the second write's changed
    span touches the token, so the gate redacts it. (A token glued after a letter is part of an identifier: the
    secret rules leave those alone, as they must to stay quiet on code.)"""
    store = open_store("memory:")
    gate = GatedStore(store, Caller("model"), Rules(WritePolicy()))
    first = f"{before} {glue}{token[:cut]}"
    gate.write("/memories/a.md", first.encode())
    second = f"{before} {glue}{token}{tail} {after}"
    gate.write("/memories/a.md", second.encode())
    stored = store.read("/memories/a.md").content.decode()
    assert token not in stored
    assert all(token not in store.read_blob(v.sha256).decode() for v in store.log() if v.sha256)


@settings(max_examples=100, deadline=None)
@given(
    head=text_strategy(),
    middle=st.lists(st.just("filler line"), min_size=10, max_size=30).map("\n".join),
    token=token_strategy(),
)
def test_an_edit_in_two_places_far_apart_screens_both(head: str, middle: str, token: str) -> None:
    """A frontmatter stamp at the top and a token far below are two changed spans, not one span between them; the
    token is found in the second."""
    store = open_store("memory:")
    gate = GatedStore(store, Caller("model"), Rules(WritePolicy()))
    old = f"---\nmodified: 1\n---\n{head}\n{middle}\nend\n"
    gate.write("/memories/n.md", old.encode())
    new = old.replace("modified: 1", "modified: 2").replace("\nend\n", f"\nend {token}\n")
    spans = changed_spans_of(old, new)
    assert len(spans) == 2
    gate.write("/memories/n.md", new.encode())
    assert token not in store.read("/memories/n.md").content.decode()


@settings(max_examples=100, deadline=None)
@given(old=st.text(max_size=200), new=st.text(max_size=200))
def test_the_changed_spans_cover_every_difference(old: str, new: str) -> None:
    """Outside the spans, the new text is the old text (in order): nothing a write changed goes unscreened."""
    spans = changed_spans_of(old, new)
    kept = []
    cursor = 0
    for start, end in spans:
        assert cursor <= start <= end <= len(new)
        kept.append(new[cursor:start])
        cursor = end
    kept.append(new[cursor:])
    # The unchanged parts appear in the old text in the same order.
    position = 0
    for part in kept:
        found = old.find(part, position)
        assert found >= 0
        position = found + len(part)
