"""Edits that complete or split a secret: whatever the edit, a secret never survives raw (issue 13), and redacted
text screened again stays as it is (redaction is idempotent).

An edit is screened with the region that changed, as the memory tool passes it (``str_replace``: where the new
text went; ``insert``: the inserted lines) and as the write gate passes it for every door (the span where old and
new text differ, after their common prefix and suffix). Both are tried.
"""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memdir import MemoryTool, WritePolicy, open_store
from memdir.policy.pipeline import CONTEXT_LINES
from memdir.policy.secrets import find_secrets
from support.planted import draw, found

_A = string.ascii_letters + string.digits


_SHAPES = ["github", "aws", "gitlab", "api-key", "password", "dsn", "aws-secret"]


# Text around a planted secret: words and the separators a secret is glued to in URLs and identifiers. It never
# puts a letter or digit right against the secret (that would make it another token, not this one).
_FILLER = st.lists(st.sampled_from(["note", "the", "vault", "id", "main", " ", "\n", "/", "_", "-", "=", ":", "@", ".",
                                    "https://", "z"]), max_size=8).map("".join)  # fmt: skip


def _planted(before: str, secret_text: str, after: str) -> str:
    left = " " if before and before[-1].isalnum() else ""
    right = " " if after and after[0].isalnum() else ""
    return f"{before}{left}{secret_text}{right}{after}"


def _diff_region(old: str, new: str) -> tuple[int, int]:
    """The span of ``new`` that differs from ``old`` (after their common prefix and suffix): the gate's region."""
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, len(new) - suffix


@given(
    shape=st.sampled_from(_SHAPES), seed=st.integers(0, 10**6), before=_FILLER, after=_FILLER,
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)), stand_in=st.sampled_from(["", "-zz", " ok", "\n", "X", "@", "//"]),
)  # fmt: skip
@settings(max_examples=600, deadline=None)
def test_an_edit_that_completes_a_secret_never_leaves_it_raw(
    shape: str, seed: int, before: str, after: str, cut: tuple[float, float], stand_in: str
) -> None:
    """The final text holds the secret; the text before the edit held ``stand_in`` in place of a random slice of
    it (the secret incomplete, or split). First screened whole (a create), then edited back into place."""
    secret_text, secret = found(seed, shape)
    final = _planted(before, secret_text, after)
    start = final.index(secret_text)
    lo, hi = sorted(start + int(c * len(secret_text)) for c in cut)
    earlier = final[:lo] + stand_in + final[hi:]
    saved = WritePolicy().screen(earlier).text
    assume(saved == earlier)  # the text before the edit held no secret (else it was redacted there: fine too)
    for region in ((lo, lo + hi - lo), _diff_region(earlier, final)):
        screened = WritePolicy().screen(final, region)
        assert secret not in screened.text, (earlier, final, region)


@given(text=st.text(alphabet=_A + " \n/_-=:@.\"'", max_size=60), shape=st.sampled_from(_SHAPES), seed=st.integers(0, 99),
       at=st.floats(0, 1))  # fmt: skip
@settings(max_examples=400, deadline=None)
def test_redaction_is_idempotent(text: str, shape: str, seed: int, at: float) -> None:
    """Screening redacted text again finds no secret and changes nothing."""
    cut = int(at * len(text))
    planted = _planted(text[:cut], draw(seed, shape)[0], text[cut:])
    once = WritePolicy().screen(planted)
    twice = WritePolicy().screen(once.text)
    assert twice.text == once.text
    assert [f for f in twice.findings if f.kind == "secret"] == []
    assert find_secrets(once.text) == []


# -- through the memory tool ---------------------------------------------------------------------------------------


@pytest.fixture
def tool() -> MemoryTool:
    return MemoryTool(open_store("memory:"), policy=WritePolicy())


def _run(tool: MemoryTool, **command: object) -> str:
    result = tool.execute(command)
    assert not result.is_error, result.text
    return tool.store.read("/memories/a.md").content.decode()


TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS_SECRET = "Xq3vZt7Lm9Pa2Wc8Rb5Ny1Kd6Hf4Gs0Ej/Tu+oIw"


@pytest.mark.parametrize(
    ("file_text", "old", "new", "secret"),
    [
        # issue 13's shapes: a token completed at its edge, a key word renamed, a DSN given its host
        (f"token {TOKEN}-zz\n", "-zz", " ok", TOKEN),
        (f"credential_value = {AWS_SECRET}\n", "credential_value", "aws_secret_access_key", AWS_SECRET),
        ("DATABASE_URL=postgres://app:Qw8eRt5yUi7o", "7o", "7o@db.internal/app", "Qw8eRt5yUi7o"),
        ("x AKIAQ3EGUSXR7ZPLM4NBzz\n", "zz", "", "AKIAQ3EGUSXR7ZPLM4NB"),
        (f"key: {TOKEN[:20]}\n", TOKEN[:20], TOKEN, TOKEN),
        ("API_KEY=Xk29fjQ0s8dL and m3nB7vC1zT5w\n", " and ", "", "Xk29fjQ0s8dLm3nB7vC1zT5w"),
    ],
)
def test_the_tool_never_saves_a_secret_an_edit_completes(
    tool: MemoryTool, file_text: str, old: str, new: str, secret: str
) -> None:
    _run(tool, command="create", path="/memories/a.md", file_text=file_text)  # not yet a secret: saved as is
    after = _run(tool, command="str_replace", path="/memories/a.md", old_str=old, new_str=new)
    assert secret not in after and "[REDACTED:" in after


@pytest.mark.parametrize(
    "text",
    [
        f"https://{TOKEN}@github.com/acme/app.git",
        f"vault/{TOKEN}",
        "AWS_ID=AKIAQ3EGUSXR7ZPLM4NB_prod",
        "https://example.com/keys/AKIAQ3EGUSXR7ZPLM4NB/rotate",
        f"key-{TOKEN}",
        f"id={TOKEN}&page=2",
    ],
)
def test_a_token_is_found_wherever_it_sits_in_a_url_or_identifier(tool: MemoryTool, text: str) -> None:
    saved = _run(tool, command="create", path="/memories/a.md", file_text=text + "\n")
    assert "[REDACTED:" in saved
    assert TOKEN not in saved and "AKIAQ3EGUSXR7ZPLM4NB" not in saved


def test_a_key_word_outside_the_edit_still_counts(tool: MemoryTool) -> None:
    """The value is the edit; its key word sits lines away from nothing else: read with the edit's context."""
    _run(tool, command="create", path="/memories/a.md", file_text="top\nAPI_KEY=\nbottom\n")
    after = _run(
        tool,
        command="str_replace",
        path="/memories/a.md",
        old_str="API_KEY=\n",
        new_str="API_KEY=Xk29fjQ0s8dLm3nB7vC1zT5w\n",
    )
    assert after == "top\nAPI_KEY=[REDACTED:generic-secret]\nbottom\n"
    assert CONTEXT_LINES >= 1


@given(
    shape=st.sampled_from(_SHAPES), seed=st.integers(0, 10**6), cut=st.floats(0, 1),
    lines=st.lists(st.sampled_from(["note", "id: 7", "see /vault", ""]), max_size=4),
)  # fmt: skip
@settings(max_examples=150, deadline=None)
def test_the_tool_never_saves_a_secret_split_across_an_insert_or_replace(
    shape: str, seed: int, cut: float, lines: list[str]
) -> None:
    secret_text, secret = found(seed, shape)
    at = max(1, int(cut * len(secret_text)))
    head, tail = secret_text[:at], secret_text[at:]
    tool = MemoryTool(open_store("memory:"), policy=WritePolicy())
    body = "\n".join([*lines, f"{head}<<cut>>", *lines]) + "\n"
    tool.execute({"command": "create", "path": "/memories/a.md", "file_text": body})
    tool.execute({"command": "str_replace", "path": "/memories/a.md", "old_str": "<<cut>>", "new_str": tail})
    assert secret not in tool.store.read("/memories/a.md").content.decode()


# -- a label planted by the writer ---------------------------------------------------------------------------------

_LABELS = st.sampled_from(["[REDACTED:x]", "[REDACTED:private-key]", "[REDACTED:aws-secret-key]", "[REDACTED:0]"])


def _pem_key(rng: random.Random) -> tuple[str, str]:
    body = "".join(rng.choice(_A + "+/") for _ in range(64 * 6))
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----", body[64 * 2 : 64 * 3]


@given(shape=st.sampled_from([*_SHAPES, "pem"]), seed=st.integers(0, 10**6), at=st.floats(0, 1), label=_LABELS)
@settings(max_examples=400, deadline=None)
def test_a_planted_label_reads_as_blank_and_hides_no_secret(shape: str, seed: int, at: float, label: str) -> None:
    """A redaction label in the text is never read as a secret (redaction is idempotent), but one the writer put
    there is no cover either: wherever it stands, what blanks of its length would not hide stays found."""
    secret_text, secret = _pem_key(random.Random(seed)) if shape == "pem" else draw(seed, shape)
    cut = int(at * len(secret_text))
    start = secret_text.index(secret)
    assume(not start < cut < start + len(secret))  # outside the secret's own characters (inside, it is split)
    blanked = secret_text[:cut] + " " * len(label) + secret_text[cut:]
    assume(secret not in WritePolicy().screen(blanked).text)  # blanks there leave it a secret
    planted = secret_text[:cut] + label + secret_text[cut:]
    assert secret not in WritePolicy().screen(planted).text, planted


def test_a_planted_label_does_not_let_a_private_key_or_an_aws_key_through() -> None:
    rng = random.Random(5)
    pem, body = _pem_key(rng)
    first, rest = pem.split("\n", 1)
    aws = "".join(rng.choice(_A) for _ in range(38)) + "+/"
    texts = {
        "/memories/key.md": f"{first}\n[REDACTED:x]\n{rest}\n",
        "/memories/aws.md": f"aws_secret_access_key = [REDACTED:x]{aws}\n",
    }
    store = open_store("memory:")
    with MemoryTool(store, policy=WritePolicy()) as tool:
        for path, text in texts.items():
            assert not tool.execute({"command": "create", "path": path, "file_text": text}).is_error
    assert body not in store.read("/memories/key.md").content.decode()
    assert aws not in store.read("/memories/aws.md").content.decode()
    with MemoryTool(open_store("memory:"), policy=WritePolicy(secrets="block")) as tool:
        for path, text in texts.items():
            assert tool.execute({"command": "create", "path": path, "file_text": text}).is_error
