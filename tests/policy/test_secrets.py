"""Secret detection: each kind found and named, and the look-alikes memory files are full of left alone."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir import scan
from memdir.policy import secrets
from memdir.policy.secrets import find_secrets

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
    "aFDrBz9vFqU4yQyJAfb4UtL9cWQSzSVYQ1Ls2xXoyvs0ZQ3Fnp7YT0BzKxDd0eYm\n"
    "-----END RSA PRIVATE KEY-----"
)
SERVICE_ACCOUNT = json.dumps(
    {
        "type": "service_account",
        "project_id": "demo",
        "private_key_id": "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c",
        "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n",
        "client_email": "bot@demo.iam.gserviceaccount.com",
    }
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

POSITIVE = [
    ("anthropic-api-key", "ANTHROPIC_API_KEY=sk-ant-api03-" + "Ab3_x-Q9" * 12 + "AA", "sk-ant-api03-"),
    ("openai-api-key", "key: sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9rS1uV3xZ5", "sk-proj-"),
    ("openai-api-key", "sk-" + "A1b2C3d4E5f6G7h8I9j0" + "T3BlbkFJ" + "K1l2M3n4O5p6Q7r8S9t0", "T3BlbkFJ"),
    ("aws-access-key", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws-secret-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("github-token", "token ghp_" + "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R", "ghp_"),
    ("github-token", "github_pat_11ABCDEFG0" + "abcdefghij1234567890" * 4, "github_pat_"),
    ("slack-token", "SLACK=xoxb-2345678901-2345678901234-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-"),
    ("slack-webhook", "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghijklmnopqrstuvwx", "hooks.slack"),
    ("google-api-key", "?key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIza"),
    ("google-service-account-key", SERVICE_ACCOUNT, "MIIEvQIBADAN"),
    ("private-key", PEM, "MIIEowIBAAKCAQEA"),
    (
        "private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3Blbn",
    ),
    ("jwt", f"Authorization: Bearer {JWT}", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV"),
    ("password-in-url", "DATABASE_URL=postgres://admin:s3cr3t-Pa55@db.internal:5432/app", "s3cr3t-Pa55"),
    ("stripe-key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "sk_live_"),
    ("card-number", "card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111"),
    ("card-number", "amex 3782-822463-10005", "3782-822463-10005"),
    ("card-number", "mc 5555555555554444", "5555555555554444"),
]


@pytest.mark.parametrize(("rule", "text", "secret"), POSITIVE, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(POSITIVE)])
def test_each_kind_is_found_and_named(rule: str, text: str, secret: str) -> None:
    (found,) = scan(text)
    assert (found.kind, found.rule, found.action) == ("secret", rule, "redact")
    assert secret in text[found.span[0] : found.span[1]]


def test_a_password_in_a_url_is_redacted_alone() -> None:
    text = "postgres://admin:hunter2-xyz@db:5432/app"
    (found,) = scan(text)
    assert text[found.span[0] : found.span[1]] == "hunter2-xyz"


def test_findings_never_carry_the_secret() -> None:
    (found,) = scan("aws_access_key_id = AKIAIOSFODNN7EXAMPLE")
    assert "AKIA" not in json.dumps(found.to_json())


def test_line_numbers() -> None:
    (found,) = scan("one\ntwo\nkey AKIAIOSFODNN7EXAMPLE\n")
    assert found.line == 3


NEGATIVE = {
    "sha256 hex": hashlib.sha256(b"x").hexdigest(),
    "sha1 next to the word secret": "secret_key_hash = " + hashlib.sha1(b"x").hexdigest(),
    "git commit": "fixed in 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345",
    "uuid": str(uuid.UUID(int=0x1234567890ABCDEF1234567890ABCDEF)),
    "version strings": "upgraded to 2.14.0-rc.1, then v10.2.3+build.45, python 3.11.7",
    "base64 image": "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 40).decode(),
    "AKIA inside base64": "data:application/octet-stream;base64,xyzAKIAIOSFODNN7EXAMPLEabc" + "Q" * 40,
    "phone numbers": "call +1 415 555 0132 or 020 7946 0958",
    "order and tracking numbers": "order 1234567890123456, tracking 9400111899223344556677",
    "luhn-failing card": "4111 1111 1111 1112",
    "timestamp in ms": "created 1700000000000",
    "placeholder password": "postgres://user:password@localhost/db and https://u:${DB_PASS}@host/x",
    "url without password": "https://user@example.com/path and http://example.com:8080/x",
    "short sk- words": "see sk-learn docs and the sk-ant- prefix",
    "AWS words without a key": "the AWS secret access key lives in the vault, rotate it every 90 days",
    "prose about keys": "An API key looks like sk-... and a GitHub token starts with ghp_.",
    "decimal numbers": "pi is 3.141592653589793238 and e is 2.718281828459045",
}


@pytest.mark.parametrize("text", NEGATIVE.values(), ids=NEGATIVE.keys())
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_several_secrets_in_one_text_do_not_overlap() -> None:
    text = f"a AKIAIOSFODNN7EXAMPLE b {JWT} c 4111111111111111"
    rules = [f.rule for f in scan(text)]
    assert rules == ["aws-access-key", "jwt", "card-number"]
    spans = [f.span for f in scan(text)]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


_SECRET_HINTS = sorted({h for hints in (*secrets._HINTS.values(), *secrets._LOWER_HINTS.values()) for h in hints})


_CARD_RULE = next(rule for rule in secrets.SECRET_RULES if rule.name == "card-number")


@given(
    st.lists(st.sampled_from(["4111", "5500", "3", "0", "12", " ", "-", ".", "_", "x", "\n", "\u0663", "\u00a0"])).map(
        "".join
    )
)
@settings(max_examples=3000, deadline=None)
def test_the_card_gate_never_skips_text_the_card_expression_matches(text: str) -> None:
    if _CARD_RULE.pattern.search(text):
        assert secrets._may_be_card(text)


def test_the_card_gate_skips_digits_that_form_no_run() -> None:
    notes = "".join(f"- note {i}: call back on the {i + 1}th\n" for i in range(16))  # 40-odd digits, short runs
    assert not secrets._may_be_card(notes)
    assert secrets._may_be_card(notes + "paid with 4111 1111 1111 1111\n")
    assert [m.rule for m in secrets.find_secrets(notes + "paid with 4111 1111 1111 1111\n")] == ["card-number"]


@given(st.lists(st.sampled_from(_SECRET_HINTS) | st.text(max_size=6), max_size=8).map("".join).map(
    lambda t: t.swapcase() if len(t) % 3 == 0 else t  # the hints in the wrong case, too
))  # fmt: skip
@settings(max_examples=2000, deadline=None)
def test_the_one_pass_gates_agree_with_looking_for_each_hint(text: str) -> None:
    found = secrets._GATES.found(text.lower())
    for rule in secrets.SECRET_RULES:
        if rule.name == "card-number":
            continue  # gated on its digits, not on hints
        if rule.name in secrets._LOWER_HINTS:
            expected = any(h in text.lower() for h in secrets._LOWER_HINTS[rule.name])
        else:
            expected = rule.name not in secrets._HINTS or any(h in text for h in secrets._HINTS[rule.name])
        assert secrets._may_match(rule, text, found) == expected, rule.name
    passing = {o for o, rule in enumerate(secrets.SECRET_RULES) if secrets._may_match(rule, text, found)}
    assert passing <= set(secrets._candidates(found))  # a rule left out could not have matched
