"""A labelled corpus for measuring the secret rules: planted credentials of every common kind in the places memory
files hold them, and the look-alikes memory files are full of. Every value is drawn fresh from a seeded random
generator in the issuer's documented shape: never a real key.

The planted credentials are here, the look-alikes in `memdir.policy._lookalikes`; and `disguise`, which writes a
character one of the ways `memdir.policy._disguise` reads through. Used by the tests (a small corpus, asserting
floors on recall and false positives) and by ``benchmarks/bench_secrets.py`` (the full one, side by side with
detect-secrets). Not imported by memdir itself.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._chartable import CHARS
from ._lookalikes import NEGATIVES, negatives

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "CONTEXTS",
    "DISGUISES",
    "KINDS",
    "LOOKALIKES",
    "NEGATIVES",
    "Kind",
    "Planted",
    "build",
    "disguise",
    "negatives",
    "planted",
]

_ALNUM = string.ascii_letters + string.digits
_B64URL = _ALNUM + "-_"
_HEX = "0123456789abcdef"
_UPPER_DIGITS = string.ascii_uppercase + "234567"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of credential: ``make`` draws (the text a person pastes, the part of it that is secret)."""

    name: str
    var: str  # the name it is usually kept under: GITHUB_TOKEN
    make: Callable[[random.Random], tuple[str, str]]
    keyed: bool = False  # a credential only next to its name (passwords, generic keys): free text says NAME=VALUE
    multiline: bool = False


def _plain(make: Callable[[random.Random], str]) -> Callable[[random.Random], tuple[str, str]]:
    def draw(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return value, value

    return draw


def _pem(rng: random.Random) -> tuple[str, str]:
    body = base64.b64encode(rng.randbytes(rng.choice([300, 600, 1190]))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    what = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY"])
    block = f"-----BEGIN {what}-----\n{lines}\n-----END {what}-----"
    return block, block


def _password(rng: random.Random) -> str:
    words = ["Summer", "Blue", "Tiger", "Orchid", "Falcon", "Maple", "Quartz", "River"]
    shape = rng.randrange(3)
    if shape == 0:
        return rng.choice(words) + str(rng.randrange(10, 9999)) + rng.choice("!@#$%&*?")
    if shape == 1:
        return _s(rng, _ALNUM + "!@#%^&*-_+", rng.randrange(10, 20))
    return rng.choice(words).lower() + rng.choice(".-_") + rng.choice(words) + str(rng.randrange(100))


def _dsn(rng: random.Random) -> tuple[str, str]:
    pw = _s(rng, _ALNUM, rng.randrange(12, 24))
    scheme, port = rng.choice([("postgres", 5432), ("postgresql", 5432), ("mysql", 3306), ("mongodb+srv", 27017),
                               ("redis", 6379), ("amqp", 5672)])  # fmt: skip
    user = rng.choice(["app", "admin", "svc_billing", ""]) if scheme == "redis" else rng.choice(["app", "admin"])
    return f"{scheme}://{user}:{pw}@db-{rng.randrange(9)}.internal:{port}/app", pw


def _basic_url(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng).replace("@", "").replace("#", "").replace("?", "")
    return f"https://deploy:{pw}@ci.example.com/api/v1/jobs", pw


def _slack_hook(rng: random.Random) -> tuple[str, str]:
    path = f"T{_s(rng, _UPPER_DIGITS, 10)}/B{_s(rng, _UPPER_DIGITS, 10)}/{_s(rng, _ALNUM, 24)}"
    return f"https://hooks.slack.com/services/{path}", path


def _discord_hook(rng: random.Random) -> tuple[str, str]:
    path = f"{rng.randrange(10**17, 10**19)}/{_s(rng, _B64URL, 68)}"
    return f"https://discord.com/api/webhooks/{path}", path


def _discord_bot(rng: random.Random) -> str:
    ident = base64.b64encode(str(rng.randrange(10**17, 10**19)).encode()).decode().rstrip("=")
    return f"{ident}.{_s(rng, _B64URL, 6)}.{_s(rng, _B64URL, 38)}"


def _azure_conn(rng: random.Random) -> tuple[str, str]:
    key = base64.b64encode(rng.randbytes(64)).decode()
    return f"DefaultEndpointsProtocol=https;AccountName=acme{rng.randrange(99)};AccountKey={key};" \
           "EndpointSuffix=core.windows.net", key  # fmt: skip


def _jwt(rng: random.Random) -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    header = part(b'{"alg":"HS256","typ":"JWT"}')
    claims = {"sub": str(rng.randrange(10**9)), "name": _s(rng, string.ascii_letters, 8), "iat": rng.randrange(10**9)}
    claims_part = part(json.dumps(claims, separators=(",", ":")).encode())
    return f"{header}.{claims_part}.{part(rng.randbytes(32))}"


def _openai(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"sk-proj-{_s(rng, _B64URL, 74)}T3BlbkFJ{_s(rng, _B64URL, 74)}"
    return f"sk-{_s(rng, _ALNUM, 20)}T3BlbkFJ{_s(rng, _ALNUM, 20)}"


def _mixed(n: int, alphabet: str = _ALNUM) -> Callable[[random.Random], str]:
    """A random key of ``n`` characters with letters and digits (what an API key is)."""

    def make(rng: random.Random) -> str:
        while True:
            value = _s(rng, alphabet, n)
            if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                return value

    return make


KINDS: tuple[Kind, ...] = (
    Kind("anthropic-api-key", "ANTHROPIC_API_KEY", _plain(lambda r: f"sk-ant-api03-{_s(r, _B64URL, 93)}AA")),
    Kind("openai-api-key", "OPENAI_API_KEY", _plain(_openai)),
    Kind("aws-access-key", "AWS_ACCESS_KEY_ID", _plain(lambda r: "AKIA" + _s(r, _UPPER_DIGITS, 16))),
    Kind("aws-secret-key", "aws_secret_access_key", _plain(_mixed(40, _ALNUM + "+/")), keyed=True),
    Kind("google-api-key", "GOOGLE_API_KEY", _plain(lambda r: "AIza" + _s(r, _B64URL, 35))),
    Kind("azure-storage-key", "AZURE_STORAGE_CONNECTION_STRING", _azure_conn),
    Kind(
        "azure-ad-client-secret",
        "AZURE_CLIENT_SECRET",
        _plain(lambda r: f"{_s(r, _ALNUM, 3)}{r.randrange(10)}Q~{_s(r, _ALNUM + '_~.-', 34)}"),
    ),
    Kind("github-token", "GITHUB_TOKEN", _plain(lambda r: r.choice(["ghp_", "gho_", "ghs_"]) + _s(r, _ALNUM, 36))),
    Kind(
        "github-fine-grained-token",
        "GH_TOKEN",
        _plain(lambda r: f"github_pat_11{_s(r, _UPPER_DIGITS, 20)}_{_s(r, _ALNUM, 59)}"),
    ),
    Kind("gitlab-token", "GITLAB_TOKEN", _plain(lambda r: r.choice(["glpat-", "gldt-", "glrt-"]) + _s(r, _B64URL, 20))),
    Kind(
        "slack-token",
        "SLACK_BOT_TOKEN",
        _plain(
            lambda r: (
                f"xox{r.choice('bp')}-{r.randrange(10**10, 10**12)}-{r.randrange(10**12, 10**13)}-{_s(r, _ALNUM, 24)}"
            )
        ),
    ),
    Kind("slack-webhook", "SLACK_WEBHOOK_URL", _slack_hook),
    Kind("discord-bot-token", "DISCORD_TOKEN", _plain(_discord_bot)),
    Kind("discord-webhook", "DISCORD_WEBHOOK", _discord_hook),
    Kind(
        "telegram-bot-token",
        "TELEGRAM_BOT_TOKEN",
        _plain(lambda r: f"{r.randrange(10**8, 10**10)}:AA{_s(r, _B64URL, 33)}"),
    ),
    Kind("twilio-api-key", "TWILIO_API_KEY", _plain(lambda r: "SK" + _s(r, _HEX, 32))),
    Kind("sendgrid-api-key", "SENDGRID_API_KEY", _plain(lambda r: f"SG.{_s(r, _B64URL, 22)}.{_s(r, _B64URL, 43)}")),
    Kind("mailgun-api-key", "MAILGUN_API_KEY", _plain(lambda r: "key-" + _s(r, _HEX, 32))),
    Kind("mailchimp-api-key", "MAILCHIMP_KEY", _plain(lambda r: f"{_s(r, _HEX, 32)}-us{r.randrange(1, 21)}")),
    Kind(
        "stripe-key",
        "STRIPE_SECRET_KEY",
        _plain(lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + _s(r, _ALNUM, r.choice([24, 99]))),
    ),
    Kind("square-token", "SQUARE_ACCESS_TOKEN", _plain(lambda r: "EAAA" + _s(r, _B64URL, 60))),
    Kind("shopify-token", "SHOPIFY_TOKEN", _plain(lambda r: r.choice(["shpat_", "shpss_"]) + _s(r, _HEX, 32))),
    Kind("npm-token", "NPM_TOKEN", _plain(lambda r: "npm_" + _s(r, _ALNUM, 36))),
    Kind("pypi-token", "PYPI_TOKEN", _plain(lambda r: "pypi-AgEIcHlwaS5vcmc" + _s(r, _B64URL, 70))),
    Kind("docker-token", "DOCKERHUB_TOKEN", _plain(lambda r: "dckr_pat_" + _s(r, _B64URL, 27))),
    Kind("huggingface-token", "HF_TOKEN", _plain(lambda r: "hf_" + _s(r, string.ascii_letters, 34))),
    Kind("digitalocean-token", "DIGITALOCEAN_TOKEN", _plain(lambda r: "dop_v1_" + _s(r, _HEX, 64))),
    Kind("private-key", "PRIVATE_KEY", _pem, multiline=True),
    Kind("jwt", "SESSION_JWT", _plain(_jwt)),
    Kind("database-url", "DATABASE_URL", _dsn),
    Kind("basic-auth-url", "CI_URL", _basic_url),
    Kind("generic-api-key", "API_KEY", _plain(_mixed(32)), keyed=True),
    Kind("generic-token", "auth_token", _plain(_mixed(40, _ALNUM + "-_")), keyed=True),
    Kind("generic-secret", "client_secret", _plain(_mixed(24, _ALNUM + "_-")), keyed=True),
    Kind("password", "DB_PASSWORD", _plain(_password), keyed=True),
    Kind("password-prose", "password", _plain(_password), keyed=True),
)


# -- contexts -----------------------------------------------------------------------------------------------------


def _camel(var: str) -> str:
    first, *rest = var.lower().split("_")
    return first + "".join(p.title() for p in rest)


def _free(kind: Kind, value: str) -> str:
    """What free text holds: the value, or for a keyed kind its name and the value."""
    return f"{kind.var}={value}" if kind.keyed else value


def _ctx_prose(rng: random.Random, kind: Kind, value: str) -> str:
    lead = rng.choice(["Here is what the staging box uses:", "Dana sent this for the deploy job:",
                       "Note to self, the credential for the nightly export is"])  # fmt: skip
    if kind.keyed:
        return f"{lead} {kind.var.lower().replace('_', ' ')}: {value} (rotate it after the audit)."
    return f"{lead} {value} (rotate it after the audit)."


def _ctx_remote(kind: Kind, value: str) -> str:
    if kind.multiline or (kind.keyed and any(c in value for c in "/+@#?:")):
        return f"git remote add mirror https://github.com/acme/app.git  # {_free(kind, value)}\n"
    if kind.keyed:
        return f"git remote add mirror https://ci:{value}@github.com/acme/app.git\n"
    if "://" in value:
        return f"git remote add mirror {value}\n"
    return f"git remote set-url origin https://{value}@github.com/acme/app.git\n"


def _ctx_yaml(rng: random.Random, kind: Kind, value: str) -> str:
    if kind.multiline:
        shown = "|\n    " + value.replace("\n", "\n    ")
    else:
        shown = f"'{value}'" if rng.random() < 0.5 else value
    return f"service: billing\ncredentials:\n  {kind.var.lower()}: {shown}\n  region: eu-west-1\n"


def _ctx_code(language: str) -> Callable[[random.Random, Kind, str], str]:
    def render(_rng: random.Random, kind: Kind, value: str) -> str:
        name = kind.var.lower() if language == "python" else _camel(kind.var)
        if language == "python":
            return f'KEY = """{value}"""\n' if kind.multiline else f'{name} = "{value}"\nclient = Client({name})\n'
        return (
            f"const key = `{value}`;\n"
            if kind.multiline
            else f"const {name} = '{value}';\nexport default {{ {name} }};\n"
        )

    return render


def _ctx_glued(glue: str, after: str) -> Callable[[random.Random, Kind, str], str]:
    """A credential glued after ``glue`` (``ID_ghp_...``), or for a token, sometimes ``after`` glued after it."""

    def render(rng: random.Random, kind: Kind, value: str) -> str:
        if not kind.keyed and rng.random() < 0.5:
            return f"token {value}{after} (staging)"
        return f"token{glue}{_free(kind, value)} (staging)"

    return render


CONTEXTS: dict[str, Callable[[random.Random, Kind, str], str]] = {
    "prose": _ctx_prose,
    "markdown": lambda _r, k, v: (
        f"## Deploy notes\n\n- owner: ops\n- credential: `{_free(k, v)}`\n- rotated: 2026-11-02\n"
    ),
    "markdown-table": lambda _r, k, v: (
        f"| setting | value |\n|---|---|\n| region | eu |\n| {k.var} | {_free(k, v)} |\n"
    ),
    "shell-export": lambda r, k, v: (
        f"# staging\nexport {k.var.upper()}=" + (f'"{v}"' if r.random() < 0.5 else v) + "\n"
    ),
    "dotenv": lambda _r, k, v: f"APP_ENV=production\nLOG_LEVEL=info\n{k.var.upper()}={v}\nPORT=8080\n",
    "json": lambda _r, k, v: json.dumps({"service": "billing", _camel(k.var): v, "retries": 3}),
    "yaml": _ctx_yaml,
    "python": _ctx_code("python"),
    "javascript": _ctx_code("javascript"),
    "git-remote-url": lambda _r, k, v: _ctx_remote(k, v),
    "glued-slash": lambda _r, k, v: f"stored under vault/{_free(k, v)}/current since Monday",
    "glued-underscore": _ctx_glued("_", "_prod"),
    "glued-dash": _ctx_glued("-", "-zz"),
    "glued-equals": lambda _r, k, v: (
        f"KEY={v}" if k.multiline else f"https://api.example.com/v1?page=2&{k.var.lower()}={v}&x=1"
    ),
    "start-of-text": lambda _r, k, v: f"{_free(k, v)} is the one for staging, not prod.",
    "end-of-text": lambda _r, k, v: f"The one for staging, not prod: {_free(k, v)}",
    "line-3": lambda _r, k, v: f"# Ops\n- deploys run from main\n- credential {_free(k, v)}\n- owner: dana\n",
}


@dataclass(frozen=True, slots=True)
class Planted:
    kind: str
    context: str
    text: str
    secret: str  # the part that must not survive a redaction

    @property
    def span(self) -> tuple[int, int]:
        start = self.text.index(self.secret)
        return start, start + len(self.secret)


def planted(rng: random.Random, per_cell: int = 1) -> list[Planted]:
    """``per_cell`` credentials of every kind in every context."""
    out = []
    for kind in KINDS:
        for name, render in CONTEXTS.items():
            for _ in range(per_cell):
                phrase, secret = kind.make(rng)
                text = render(rng, kind, phrase)
                # A key block spans lines: JSON escapes them, YAML indents them.
                shown = next(
                    s for s in (secret, secret.replace("\n", "\\n"), secret.replace("\n", "\n    ")) if s in text
                )
                out.append(Planted(kind.name, name, text, shown))
    return out


def build(seed: int = 18, per_cell: int = 2, per_family: int = 80) -> tuple[list[Planted], list[tuple[str, str]]]:
    """The corpus: ``per_cell`` credentials per kind and context, ``per_family`` negatives per family."""
    rng = random.Random(seed)
    return planted(rng, per_cell), negatives(rng, per_family)


# -- disguises ------------------------------------------------------------------------------------------------------

DISGUISES = ("plain", "percent", "decimal", "hex", "escape", "look-alike", "invisible", "tag")
_INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff", "\u202c")


# The characters a reader takes for each ASCII character (tag characters aside: they are a disguise of their own).
def _lookalikes() -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for code, plain in CHARS.items():
        if plain is not None and len(plain) == 1 and not 0xE0000 <= code <= 0xE007F:
            found[plain] = (*found.get(plain, ()), chr(code))
    return found


LOOKALIKES = _lookalikes()


def disguise(char: str, how: str, rng: random.Random) -> str:
    """``char`` written ``how`` (one of `DISGUISES`), as a reader still reads it: ``%5F``, ``&#95;``, ``&#x5f;``,
    ``\\u005f``, a look-alike (the full-width low line), followed by an invisible character, or as a tag character."""
    code = ord(char)
    written = {
        "percent": f"%{code:02X}",
        "decimal": f"&#{code};",
        "hex": f"&#x{code:x};",
        "escape": f"\\u{code:04x}",
        "tag": chr(0xE0000 + code),
    }.get(how)
    if written is not None:
        return written
    if how == "look-alike" and char in LOOKALIKES:
        return rng.choice(LOOKALIKES[char])
    if how == "invisible":
        return char + rng.choice(_INVISIBLE)
    return char
