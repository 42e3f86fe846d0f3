"""Secret detection: each rule finds its kind in every context a memory file holds it, and leaves alone the
look-alikes closest to it (documented placeholders, a token glued inside a word, settings about a secret)."""

from __future__ import annotations

import base64
import itertools
import json
import random
import string
from typing import TYPE_CHECKING

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memdir import scan
from memdir.policy import _corpus, secrets
from memdir.policy._rules import _WORD, word_or_next_start, word_start
from memdir.policy.secrets import SECRET_RULES, find_secrets

if TYPE_CHECKING:
    from collections.abc import Callable

_A = string.ascii_letters + string.digits
_U = "-_"
_H = "0123456789abcdef"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if len(set(value)) > min(n // 3, len(alphabet) // 2):
            return value


# A fresh value for every rule whose matches are whole tokens (the corpus's kinds, plus the rest).
_KIND_OF_RULE = {"github-token": "github-token", "openai-api-key": "openai-api-key", "stripe-key": "stripe-key"}
TOKENS: dict[str, Callable[[random.Random], str]] = {
    "anthropic-api-key": lambda r: f"sk-ant-api03-{_s(r, _A + _U, 93)}AA",
    "openai-api-key": lambda r: f"sk-proj-{_s(r, _A, 74)}T3BlbkFJ{_s(r, _A, 74)}",
    "sk-api-key": lambda r: f"sk-{_s(r, _H, 32)}",
    "groq-api-key": lambda r: "gsk_" + _s(r, _A, 52),
    "perplexity-api-key": lambda r: "pplx-" + _s(r, _A, 48),
    "xai-api-key": lambda r: "xai-" + _s(r, _A, 80),
    "replicate-token": lambda r: "r8_" + _s(r, _A, 37),
    "huggingface-token": lambda r: "hf_" + _s(r, string.ascii_letters, 34),
    "langsmith-api-key": lambda r: f"lsv2_pt_{_s(r, _H, 32)}_{_s(r, _H, 10)}",
    "aws-access-key": lambda r: "AKIA" + _s(r, string.ascii_uppercase + "234567", 16),
    "google-api-key": lambda r: "AIza" + _s(r, _A + _U, 35),
    "google-oauth-secret": lambda r: "GOCSPX-" + _s(r, _A + _U, 28),
    "google-access-token": lambda r: "ya29." + _s(r, _A + _U, 120),
    "azure-ad-client-secret": lambda r: f"{_s(r, _A, 3)}8Q~{_s(r, _A, 34)}",
    "alibaba-access-key": lambda r: "LTAI" + _s(r, _A, 20),
    "digitalocean-token": lambda r: "dop_v1_" + _s(r, _H, 64),
    "heroku-api-key": lambda r: "HRKU-AA" + _s(r, _A + _U, 58),
    "databricks-token": lambda r: "dapi" + _s(r, _H, 32),
    "terraform-token": lambda r: f"{_s(r, _A, 14)}.atlasv1.{_s(r, _A + _U, 64)}",
    "vault-token": lambda r: "hvs." + _s(r, _A + _U, 95),
    "doppler-token": lambda r: "dp.pt." + _s(r, _A, 43),
    "pulumi-token": lambda r: "pul-" + _s(r, _H, 40),
    "planetscale-token": lambda r: "pscale_tkn_" + _s(r, _A, 43),
    "flyio-token": lambda r: "fo1_" + _s(r, _A + _U, 43),
    "dynatrace-token": lambda r: f"dt0c01.{_s(r, _A, 24)}.{_s(r, _A, 64)}",
    "grafana-token": lambda r: f"glsa_{_s(r, _A, 32)}_{_s(r, _H, 8)}",
    "newrelic-key": lambda r: "NRAK-" + _s(r, string.ascii_uppercase + string.digits, 27),
    "sentry-token": lambda r: "sntryu_" + _s(r, _H, 64),
    "onepassword-token": lambda r: "ops_eyJ" + _s(r, _A, 260),
    "age-secret-key": lambda r: "AGE-SECRET-KEY-1" + _s(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    "github-token": lambda r: "ghp_" + _s(r, _A, 36),
    "gitlab-token": lambda r: "glpat-" + _s(r, _A + _U, 20),
    "atlassian-token": lambda r: "ATATT3" + _s(r, _A + _U, 186),
    "sourcegraph-token": lambda r: "sgp_" + _s(r, _H, 40),
    "linear-api-key": lambda r: "lin_api_" + _s(r, _A, 40),
    "notion-token": lambda r: f"ntn_{r.randrange(10**10, 10**11)}{_s(r, _A, 35)}",
    "postman-api-key": lambda r: f"PMAK-{_s(r, _H, 24)}-{_s(r, _H, 34)}",
    "slack-token": lambda r: f"xoxb-{r.randrange(10**11)}-{r.randrange(10**12)}-{_s(r, _A, 24)}",
    "slack-webhook": lambda r: f"hooks.slack.com/services/T{_s(r, _A, 10)}/B{_s(r, _A, 10)}/{_s(r, _A, 24)}",
    "discord-webhook": lambda r: f"discord.com/api/webhooks/{r.randrange(10**17, 10**18)}/{_s(r, _A + _U, 68)}",
    "teams-webhook": lambda r: (
        f"webhook.office.com/webhookb2/{_s(r, _H, 8)}-{_s(r, _H, 4)}@{_s(r, _H, 36)}/IncomingWebhook/{_s(r, _H, 32)}"
    ),
    "twilio-api-key": lambda r: "SK" + _s(r, _H, 32),
    "sendgrid-api-key": lambda r: f"SG.{_s(r, _A + _U, 22)}.{_s(r, _A + _U, 43)}",
    "mailgun-api-key": lambda r: "key-" + _s(r, _H, 32),
    "mailchimp-api-key": lambda r: _s(r, _H, 32) + "-us14",
    "brevo-api-key": lambda r: f"xkeysib-{_s(r, _H, 64)}-{_s(r, _A, 16)}",
    "stripe-key": lambda r: "sk_live_" + _s(r, _A, 24),
    "square-token": lambda r: "sq0atp-" + _s(r, _A + _U, 22),
    "braintree-token": lambda r: f"access_token$production${_s(r, _H, 16)}${_s(r, _H, 32)}",
    "shopify-token": lambda r: "shpat_" + _s(r, _H, 32),
    "shippo-token": lambda r: "shippo_live_" + _s(r, _H, 40),
    "npm-token": lambda r: "npm_" + _s(r, _A, 36),
    "pypi-token": lambda r: "pypi-AgEIcHlwaS5vcmc" + _s(r, _A + _U, 70),
    "rubygems-token": lambda r: "rubygems_" + _s(r, _H, 48),
    "nuget-api-key": lambda r: "oy2" + _s(r, string.ascii_lowercase + string.digits, 43),
    "docker-token": lambda r: "dckr_pat_" + _s(r, _A + _U, 27),
    "artifactory-token": lambda r: "AKCp" + _s(r, _A, 69),
    "clojars-token": lambda r: "CLOJARS_" + _s(r, string.ascii_lowercase + string.digits, 60),
    "jwt": lambda r: "eyJhbGciOiJIUzI1NiJ9.eyJ" + _s(r, _A, 40) + "." + _s(r, _A + _U, 43),
    "discord-bot-token": lambda r: (
        base64.b64encode(str(r.randrange(10**17, 10**18)).encode()).decode().rstrip("=")
        + f".{_s(r, _A, 6)}.{_s(r, _A + _U, 38)}"
    ),
    "telegram-bot-token": lambda r: f"{r.randrange(10**8, 10**9)}:AA{_s(r, _A + _U, 33)}",
}
_TOKEN_KIND = _corpus.Kind("token", "API_TOKEN", lambda _r: ("", ""))


def test_every_rule_has_its_own_test() -> None:
    """Token rules are tested below from `TOKENS`; the rules that read what stands around a secret have their
    own positives and negatives further down."""
    keyed = {"google-service-account-key", "private-key", "aws-secret-key", "azure-storage-key", "azure-sas-token",
             "password-in-url", "token-in-url", "authorization-header", "netrc-password", "generic-secret",
             "password", "card-number"}  # fmt: skip
    assert {r.name for r in SECRET_RULES} == set(TOKENS) | keyed
    assert set(TOKENS).isdisjoint(keyed)
    assert set(POSITIVES) == keyed


@pytest.mark.parametrize("rule", sorted(TOKENS))
def test_a_token_rule_finds_its_token_in_every_context(rule: str) -> None:
    rng = random.Random(rule)
    for context, render in _corpus.CONTEXTS.items():
        token = TOKENS[rule](rng)
        text = render(rng, _TOKEN_KIND, token)
        start = text.index(token)
        found = [m for m in find_secrets(text) if m.start <= start and m.end >= start + len(token)]
        assert [m.rule for m in found] == [rule], (context, text)


@pytest.mark.parametrize("rule", sorted(TOKENS))
def test_a_token_rule_leaves_its_look_alikes_alone(rule: str) -> None:
    token = TOKENS[rule](random.Random(rule))
    cut = _prefix_length(token)
    look_alikes = {
        "inside a word": f"x{token}y" if token[-1].isalnum() and token[0].isalnum() else "",
        "a run of x": token[:cut] + "x" * (len(token) - cut),
        "a documented example": token[:cut] + ("EXAMPLEKEY" * 30)[: len(token) - cut],
        "your-token": token[:cut] + "your-token-here",
        "cut short": token[: cut + 4] + "...",
    }
    for what, text in look_alikes.items():
        assert [m.rule for m in find_secrets(text) if m.rule == rule] == [], what


def _prefix_length(token: str) -> int:
    """The issuer's fixed part of a sample token: up to its first `_`, `-` or `.` when one comes early, else 4."""
    for i, ch in enumerate(token[:20]):
        if ch in "_-.$:" and i >= 2:
            return i + 1
    return 4


# -- the rules that read what is around a secret --------------------------------------------------------------------

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(base64.b64encode(random.Random(1).randbytes(48)).decode() for _ in range(4))
    + "\n-----END RSA PRIVATE KEY-----"
)
SERVICE_ACCOUNT = json.dumps({"type": "service_account", "private_key": PEM.replace("RSA ", "") + "\n"})
B64_40 = "Xq3vZt7Lm9Pa2Wc8Rb5Ny1Kd6Hf4Gs0Ej/Tu+oIw"
POSITIVES: dict[str, list[tuple[str, str]]] = {
    "google-service-account-key": [(SERVICE_ACCOUNT, "-----BEGIN PRIVATE KEY-----")],
    "private-key": [(PEM, PEM), ("note\n" + PEM.replace("RSA", "OPENSSH") + "\nend", "OPENSSH PRIVATE KEY")],
    "aws-secret-key": [(f"aws_secret_access_key = {B64_40}", B64_40), (f"AWS secret: {B64_40}", B64_40),
                       (f'{{"SecretAccessKey": "{B64_40}"}}', B64_40)],
    "azure-storage-key": [("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
                           + base64.b64encode(random.Random(2).randbytes(64)).decode() + ";EndpointSuffix=x", "AccountKey=")],
    "azure-sas-token": [("https://acme.blob.core.windows.net/c?sv=2022-11-02&ss=b&sig=Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ%3D",
                         "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ")],
    "password-in-url": [("postgres://admin:s3cr3t-Pa55@db.internal:5432/app", "s3cr3t-Pa55"),
                        ("redis://:Xy7pQ2mN9z@cache:6379/0", "Xy7pQ2mN9z"),
                        ("https://ci:Tr0ub4dor&3@ci.example.com/api", "Tr0ub4dor&3"),
                        ("see vault/mongodb+srv://app:Qw8eRt5yUi@cluster0.example.net/db", "Qw8eRt5yUi")],
    "token-in-url": [("git clone https://a7Kp2Qw9Zx4Lm8Nv3Bc6Df1Gh5Jk0Rt@github.com/acme/app.git",
                      "a7Kp2Qw9Zx4Lm8Nv3Bc6Df1Gh5Jk0Rt")],
    "authorization-header": [("curl -H 'Authorization: Bearer a7Kp2Qw9Zx4Lm8Nv3Bc6Df1Gh5Jk0Rt' https://api",
                              "a7Kp2Qw9Zx4Lm8Nv3Bc6Df1Gh5Jk0Rt"),
                             ("Authorization: Basic ZGFuYTpUcjB1YjRkb3ImMw==", "ZGFuYTpUcjB1YjRkb3ImMw==")],
    "netrc-password": [("machine api.example.com login dana password Tr0ub4dor&3", "Tr0ub4dor&3")],
    "generic-secret": [("API_KEY=Xk29fjQ0s8dLm3nB7vC1zT5w", "Xk29fjQ0s8dLm3nB7vC1zT5w"),
                       ('"apiKey": "Xk29fjQ0s8dLm3nB7vC1zT5w"', "Xk29fjQ0s8dLm3nB7vC1zT5w"),
                       ("token: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
                       ('secret = "q8W3e5R7t9Y1u3I5o7P9a1S3"', "q8W3e5R7t9Y1u3I5o7P9a1S3"),
                       ("export CLOUDFLARE_API_TOKEN='Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl'",
                        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl"),
                       ("X-Api-Key: 7Gh2Jk9Lm4Np6Qr8St1Vw3Xy5Za0Bc", "7Gh2Jk9Lm4Np6Qr8St1Vw3Xy5Za0Bc"),
                       ("client_secret := \"d1E2f3G4h5I6j7K8l9M0n1O2\"", "d1E2f3G4h5I6j7K8l9M0n1O2")],
    "password": [("password = hunter2!", "hunter2!"), ("DB_PASSWORD=Tr0ub4dor&3", "Tr0ub4dor&3"),
                 ('"password": "correcthorse"', "correcthorse"), ("Password: Summer2024!", "Summer2024!"),
                 ("PGPASSWORD=s3cret99 psql -h db", "s3cret99"), ("--password=Qw3rty#77", "Qw3rty#77"),
                 ("mysql:\n  pass: 'x9!kLm2p'\n", "x9!kLm2p")],
    "card-number": [("card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111"),
                    ("amex 3782-822463-10005", "3782-822463-10005"), ("mc 5555555555554444", "5555555555554444")],
}  # fmt: skip
NEGATIVES: dict[str, list[str]] = {
    "google-service-account-key": ['"private_key_id": "1f2e3d4c5b6a79881f2e3d4c5b6a7988"'],
    "private-key": ["-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
                    "-----BEGIN CERTIFICATE-----\n" + "A" * 64 + "\n-----END CERTIFICATE-----",
                    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"],
    "aws-secret-key": ["aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                       "AWS commit 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345",
                       "secret_key_hash = 9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c"],
    "azure-storage-key": ["AccountKey=<your-account-key>", "AccountKey=" + "A" * 86 + "=="],
    "azure-sas-token": ["https://example.com/?sig=short", "?sig=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    "password-in-url": ["postgres://user:password@localhost/db", "https://u:${DB_PASS}@host/x",
                        "https://user@example.com/path", "http://localhost:8080@x", "redis://:<password>@cache",
                        "https://user:****@host", "scheme://a:%(pw)s@h"],
    "token-in-url": ["ssh://git@github.com/acme/app.git", "https://x-access-token@github.com",
                     "https://aaaaaaaaaaaaaaaaaaaaaaaa@github.com"],
    "authorization-header": ["Authorization: Bearer <token>", "Authorization: Bearer $TOKEN",
                             "Authorization: Bearer xxxxxxxxxxxxxxxxxxxxxxxx"],
    "netrc-password": ["machine example.com login dana password ${NETRC_PASSWORD}"],
    "generic-secret": ['api_key = os.environ["API_KEY"]', "token_type: bearer", "max_tokens = 4096",
                       'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")', "API_KEY=your-api-key-here",
                       "token: ${TOKEN}", "SECRET_KEY_FILE=/run/secrets/django", 'cache_key = "' + "a1" * 32 + '"',
                       "next_page_token: CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA2", "apiKey: config.apiKey,",
                       "API_KEY={{ secrets.API_KEY }}", "auth: true", "secret_name = prod/db/password",
                       "token = get_token()", "idempotency_key: 4f9c2d1e-8b7a-4c3d-9e2f-1a0b9c8d7e6f"],
    "password": ["password_min_length = 12", "password: str", "password = getpass.getpass()", '"password": ""',
                 "password: ${DB_PASSWORD}", "password = user.password_hash", "password: changeme",
                 "password = '********'", "if password == 'x1y2z3w4':", "the password: see the vault",
                 "password_reset_timeout: 3600", "PASSWORD=DB_PASSWORD", '"password": "Password must have a digit"',
                 "password: forgotten", "DB_PASSWORD=REPLACE_ME", "password = settings.DB_PASSWORD2"],
    "card-number": ["4111 1111 1111 1112", "order 1234567890123456", "4111-1111 1111 1111", "created 1700000000000"],
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(POSITIVES))
def test_a_rule_finds_what_is_around_its_secret(rule: str) -> None:
    for text, secret in POSITIVES[rule]:
        start = text.index(secret)
        found = [m.rule for m in find_secrets(text) if m.start <= start + len(secret) and m.end >= start]
        assert found == [rule], text


@pytest.mark.parametrize("rule", sorted(NEGATIVES))
def test_a_rule_leaves_the_closest_look_alikes_alone(rule: str) -> None:
    for text in NEGATIVES[rule]:
        assert find_secrets(text) == [], text


def test_a_keyed_secret_is_found_in_every_context() -> None:
    rng = random.Random(7)
    for kind in (k for k in _corpus.KINDS if k.keyed):
        for context, render in _corpus.CONTEXTS.items():
            phrase, secret = kind.make(rng)
            text = render(rng, kind, phrase)
            start = text.index(secret)
            assert any(m.start <= start and m.end >= start + len(secret) for m in find_secrets(text)), (context, text)


def test_a_redaction_covers_the_value_and_keeps_its_key_and_quotes() -> None:
    (found,) = scan('export API_KEY="Xk29fjQ0s8dLm3nB7vC1zT5w"')
    assert 'export API_KEY="Xk29fjQ0s8dLm3nB7vC1zT5w"'[slice(*found.span)] == "Xk29fjQ0s8dLm3nB7vC1zT5w"
    assert found.reach == (7, 41)


def test_findings_never_carry_the_secret() -> None:
    (found,) = scan("aws_access_key_id = AKIAQ3EGUSXR7ZPLM4NB")
    assert "AKIA" not in json.dumps(found.to_json())


def test_line_numbers() -> None:
    (found,) = scan("one\ntwo\nkey AKIAQ3EGUSXR7ZPLM4NB\n")
    assert found.line == 3


def test_several_secrets_in_one_text_do_not_overlap() -> None:
    jwt = TOKENS["jwt"](random.Random(3))
    text = f"a AKIAQ3EGUSXR7ZPLM4NB b {jwt} c 4111111111111111 d API_KEY=ghp_{'a1B2c3D4e5' * 3}Z9y8X7"
    found = find_secrets(text)
    assert [m.rule for m in found] == ["aws-access-key", "jwt", "card-number", "github-token"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))


def test_a_label_never_looks_like_a_secret() -> None:
    for rule in {r.name for r in SECRET_RULES}:
        label = f"[REDACTED:{rule}]"
        for text in (
            label,
            f"API_KEY={label}",
            f"password: {label}",
            f'token = "{label}"',
            f"https://u:{label}@h",
            f"https://{label}@github.com",
            f"{label}: Xk29fjQ0s8dLm3nB7vC1zT5w",
            f"Authorization: Bearer {label}",
        ):
            assert find_secrets(text) == [], text


# -- the gates: skipping a rule never loses a match ---------------------------------------------------------------

_HINTS = sorted({h for rule in SECRET_RULES for h in rule.hints})
_PIECES = (
    st.sampled_from(_HINTS)
    | st.sampled_from(["=", ": ", '"', "/", "_", "-", " ", "\n", "://", "@", ".", "="])
    | (st.text(alphabet=_A + "+/", min_size=1, max_size=40))
)


def _may_start(rule: secrets.Rule, text: str, pos: int) -> bool:
    """Whether a match of ``rule`` may start at ``pos``: a rule that reads a name (`word_start`,
    `word_or_next_start`) reads all of it, not its tail (``KEY=`` of ``MONKEY=``); a URL starts with its scheme's
    first letter."""
    if pos == 0:
        return True
    if rule.anchor in (word_start, word_or_next_start):
        return text[pos - 1] not in _WORD
    if rule.name in ("password-in-url", "token-in-url"):
        return not text[pos - 1].isascii() or not text[pos - 1].isalpha()
    return True


def _everywhere(text: str) -> list[tuple[str, int, int]]:
    """What the rules find when every rule is tried at every position: no gate, no anchor."""
    matches = []
    for order, rule in enumerate(SECRET_RULES):
        for pos in range(len(text)):
            if not _may_start(rule, text, pos):
                continue
            match = rule.pattern.match(text, pos)
            if match is not None and (rule.accept is None or rule.accept(match)):
                matches.append((order, *rule.secret_span(match), match.span()))
    kept: list[tuple[str, int, int]] = []
    for order, start, end, _reach in sorted(
        matches, key=lambda m: (m[1], SECRET_RULES[m[0]].fallback, m[1] - m[2], m[0])
    ):
        if kept and start < kept[-1][2]:
            continue
        kept.append((SECRET_RULES[order].name, start, end))
    return kept


@given(st.lists(_PIECES, max_size=10).map("".join).map(lambda t: t.swapcase() if len(t) % 5 == 0 else t))
@example("pwd -us=AGE-SECRET-KEY-1")  # a name of one part takes the word before it: tried after that word too
@example("sharedaccesskey=sharedaccesskey=0")
@settings(max_examples=400, deadline=None)
def test_the_gates_and_anchors_lose_nothing(text: str) -> None:
    assert [(m.rule, m.start, m.end) for m in find_secrets(text)] == _everywhere(text)


def test_the_gates_and_anchors_lose_nothing_on_the_corpus() -> None:
    planted, negatives = _corpus.build(seed=5, per_cell=1, per_family=2)
    for text in [p.text for p in planted[::7]] + [t for _, t in negatives]:
        assert [(m.rule, m.start, m.end) for m in find_secrets(text)] == _everywhere(text), text


def test_a_text_whose_lower_case_is_longer_is_still_screened() -> None:
    token = TOKENS["github-token"](random.Random(4))
    text = f"İİİ note API_KEY=Xk29fjQ0s8dLm3nB7vC1zT5w and {token}"  # 'İ'.lower() is two characters
    assert len(text.lower()) != len(text)
    assert [m.rule for m in find_secrets(text)] == ["generic-secret", "github-token"]


def test_the_card_gate_skips_digits_that_form_no_run() -> None:
    notes = "".join(f"- note {i}: call back on the {i + 1}th\n" for i in range(16))
    assert secrets.find_secrets(notes) == []
    assert [m.rule for m in secrets.find_secrets(notes + "paid with 4111 1111 1111 1111\n")] == ["card-number"]


# -- the corpus: recall and false positives on fresh values --------------------------------------------------------


def test_recall_and_false_positives_on_a_fresh_corpus() -> None:
    """The floors of issue 18 on a small corpus (benchmarks/bench_secrets.py runs the full one)."""
    planted, negatives = _corpus.build(seed=random.Random(18).randrange(10**6), per_cell=1, per_family=25)
    found = [any(m.start <= p.span[0] and m.end >= p.span[1] for m in find_secrets(p.text)) for p in planted]
    flagged = [t for _, t in negatives if find_secrets(t)]
    assert sum(found) / len(found) >= 0.95
    assert len(flagged) / len(negatives) <= 0.01, flagged
    for kind in _corpus.KINDS:
        rows = [ok for ok, p in zip(found, planted, strict=True) if p.kind == kind.name]
        assert sum(rows) / len(rows) >= 0.75, kind.name
