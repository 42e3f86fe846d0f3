"""Credentials an issuer marks with a prefix (``ghp_``, ``glpat-``, ``AKIA``, ``sk-ant-``...): one rule each.

The shapes follow the issuers' documentation, cross-checked with the public rule sets of gitleaks
(``config/gitleaks.toml``) and detect-secrets (its plugins); the expressions are memdir's own. A prefix and a length
make a match very likely the real thing, so these rules need no key word around them; each still asks that the
token look generated (`memdir.policy._rules.looks_random`): ``ghp_xxxx...`` and ``AKIAIOSFODNN7EXAMPLE`` are
documented stand-ins, not secrets.

Each rule: kind, what people read, the expression (between `START` and `END`: no letter or digit on either side),
its hints (``anchor``: the match starts at a hint unless said otherwise) and the least entropy its token has.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._rules import END, START, Rule, at_hint, before, looks_random, random_group

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["TOKEN_RULES"]


def _token(
    name: str,
    detail: str,
    expression: str,
    hints: tuple[str, ...],
    *,
    anchor: Callable[[str, int], int | None] | None = at_hint,
    bits: float = 0.0,
) -> Rule:
    return Rule(name, detail, re.compile(f"{START}(?:{expression}){END}"), hints, anchor=anchor,
                accept=_generated(re.compile(f"(?:{expression})"), bits))  # fmt: skip


def _generated(token: re.Pattern[str], bits: float) -> Callable[[re.Match[str]], bool]:
    """A token rule's check: the token looks generated. A token's alphabet often holds `_`, `-` or `.`, so a
    match can run on into what is glued after it (`glpat-..._prod`, `..._xxxx`): where the whole does not look
    generated, a shorter token cut at one of those that the expression still matches may."""

    def check(match: re.Match[str]) -> bool:
        value = match.group(0)
        while not looks_random(value, bits):
            cut = max(value.rfind("_"), value.rfind("-"), value.rfind("."))
            if cut <= 0 or not token.fullmatch(value := value[:cut]):
                return False
        return True

    return check


_B64URL = "A-Za-z0-9_\\-"
_GITLAB = ("glpat", "gldt", "glft", "glsoat", "glrt", "glcbt", "glimt", "glptt", "glagent", "gloas", "glffct")
_STRIPE = tuple(f"{k}_{m}_" for k in ("sk", "rk") for m in ("live", "test", "prod"))

TOKEN_RULES: tuple[Rule, ...] = (
    # -- AI providers ------------------------------------------------------------------------------------------
    _token("anthropic-api-key", "an Anthropic API key",
           rf"sk-ant-[a-z]{{2,8}}\d{{0,3}}-[{_B64URL}]{{20,}}", ("sk-ant-",)),
    _token("openai-api-key", "an OpenAI API key",
           rf"sk-(?:proj|svcacct|admin|None)-[{_B64URL}]{{40,}}"
           r"|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|sk-[A-Za-z0-9]{48}", ("sk-",)),
    # DeepSeek, Moonshot, OpenRouter and the other services that copied OpenAI's `sk-` keys.
    _token("sk-api-key", "an API key of an OpenAI-style service",
           r"sk-or-v1-[a-f0-9]{64}|sk-[A-Za-z0-9]{32,}", ("sk-",), bits=3.0),
    _token("groq-api-key", "a Groq API key", r"gsk_[A-Za-z0-9]{52}", ("gsk_",)),
    _token("perplexity-api-key", "a Perplexity API key", r"pplx-[A-Za-z0-9]{48}", ("pplx-",)),
    _token("xai-api-key", "an xAI API key", r"xai-[A-Za-z0-9]{80}", ("xai-",)),
    _token("replicate-token", "a Replicate API token", r"r8_[A-Za-z0-9]{37}", ("r8_",)),
    _token("huggingface-token", "a Hugging Face token", r"(?:hf|api_org)_[A-Za-z]{34}", ("hf_", "api_org_")),
    _token("langsmith-api-key", "a LangSmith API key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", ("lsv2_",)),
    # -- cloud providers -----------------------------------------------------------------------------------------
    _token("aws-access-key", "an AWS access key id",
           r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}", ("A3T", "AKIA", "ASIA", "ABIA", "ACCA")),
    _token("google-api-key", "a Google API key", rf"AIza[{_B64URL}]{{35}}", ("AIza",)),
    _token("google-oauth-secret", "a Google OAuth client secret", rf"GOCSPX-[{_B64URL}]{{28}}", ("GOCSPX-",)),
    _token("google-access-token", "a Google OAuth access token", rf"ya29\.[{_B64URL}]{{30,}}", ("ya29.",)),
    # `xyz8Q~...`: three characters, a digit and `Q~` start every Azure AD (Entra) client secret.
    _token("azure-ad-client-secret", "an Azure AD client secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}",
           ("Q~",), anchor=before(4)),
    _token("alibaba-access-key", "an Alibaba Cloud AccessKey id", r"LTAI[A-Za-z0-9]{20}", ("LTAI",)),
    _token("digitalocean-token", "a DigitalOcean token", r"do[opr]_v1_[a-f0-9]{64}", ("doo_v1_", "dop_v1_", "dor_v1_")),
    _token("heroku-api-key", "a Heroku API key", rf"HRKU-AA[{_B64URL}]{{58}}", ("HRKU-",)),
    _token("databricks-token", "a Databricks token", r"dapi[a-f0-9]{32}(?:-\d)?", ("dapi",)),
    _token("terraform-token", "a Terraform Cloud token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}",
           ("atlasv1",), anchor=before(15)),
    _token("vault-token", "a HashiCorp Vault token", rf"hvs\.[{_B64URL}]{{90,}}|hvb\.[{_B64URL}]{{138,}}",
           ("hvs.", "hvb.")),
    _token("doppler-token", "a Doppler token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}", ("dp.",)),
    _token("pulumi-token", "a Pulumi access token", r"pul-[a-f0-9]{40}", ("pul-",)),
    _token("planetscale-token", "a PlanetScale token", r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.\-]{32,64}",
           ("pscale_",)),
    _token("flyio-token", "a Fly.io token", rf"fo1_[{_B64URL}]{{43}}|fm[12][ar]?_[A-Za-z0-9+/]{{100,}}={{0,3}}",
           ("fo1_", "fm1", "fm2_")),
    _token("dynatrace-token", "a Dynatrace API token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", ("dt0c01.",)),
    _token("grafana-token", "a Grafana token", r"glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
           ("glc_", "glsa_")),
    _token("newrelic-key", "a New Relic key", r"NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9\-]{32}|NRJS-[a-f0-9]{19}",
           ("NRAK-", "NRII-", "NRJS-")),
    _token("sentry-token", "a Sentry token", r"sntrys_eyJ[A-Za-z0-9+/=_]{60,}|sntryu_[a-f0-9]{64}",
           ("sntrys_", "sntryu_")),
    _token("onepassword-token", "a 1Password service account token", r"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}", ("ops_eyJ",)),
    _token("age-secret-key", "an age secret key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
           ("AGE-SECRET-KEY-1",)),
    # -- source hosts --------------------------------------------------------------------------------------------
    _token("github-token", "a GitHub token", r"gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,255}",
           ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    # Personal, deploy, feed, runner, CI job, mail, trigger, agent, OAuth app and SCIM tokens; a routable one
    # (GitLab 17) ends with `.` and nine base-36 characters.
    _token("gitlab-token", "a GitLab token",
           rf"(?:{'|'.join(_GITLAB)})-[{_B64URL}]{{20,300}}(?:\.[0-9a-z]{{9}})?|GR1348941[{_B64URL}]{{20,}}",
           (*(f"{p}-" for p in _GITLAB), "GR1348941")),
    _token("atlassian-token", "an Atlassian or Bitbucket token",
           r"AT(?:ATT|CTT)3[A-Za-z0-9_\-=]{150,}|ATBB[A-Za-z0-9_=.\-]{28,}", ("ATATT3", "ATCTT3", "ATBB")),
    _token("sourcegraph-token", "a Sourcegraph access token", r"sgp_(?:[a-fA-F0-9]{16}_)?[a-fA-F0-9]{40}", ("sgp_",)),
    _token("linear-api-key", "a Linear API key", r"lin_api_[A-Za-z0-9]{40}", ("lin_api_",)),
    _token("notion-token", "a Notion integration token", r"ntn_\d{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43}",
           ("ntn_", "secret_")),
    _token("postman-api-key", "a Postman API key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", ("PMAK-",)),
    # -- chat and mail -------------------------------------------------------------------------------------------
    _token("slack-token", "a Slack token",
           r"xox[abposre]-(?:[A-Za-z0-9]+-){1,5}[A-Za-z0-9]+|xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}"
           r"|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", ("xox", "xapp-")),
    _token("slack-webhook", "a Slack incoming-webhook URL",
           r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+]{20,}", ("hooks.slack.com",)),
    _token("discord-webhook", "a Discord webhook URL",
           rf"discord(?:app)?\.com/api/webhooks/\d{{17,20}}/[{_B64URL}]{{60,70}}",
           ("discord.com/api/webhooks", "discordapp.com/api/webhooks")),
    _token("teams-webhook", "a Microsoft Teams webhook URL", r"webhook\.office\.com/webhookb2/[A-Za-z0-9@/\-]{60,}",
           ("webhook.office.com",)),
    _token("twilio-api-key", "a Twilio API key", r"SK[0-9a-fA-F]{32}", ("SK",), bits=3.0),
    _token("sendgrid-api-key", "a SendGrid API key", rf"SG\.[{_B64URL}]{{22}}\.[{_B64URL}]{{43}}", ("SG.",)),
    _token("mailgun-api-key", "a Mailgun API key", r"key-[0-9a-f]{32}", ("key-",), bits=3.0),
    _token("mailchimp-api-key", "a Mailchimp API key", r"[0-9a-f]{32}-us\d{1,2}", ("-us",), anchor=before(32),
           bits=3.0),
    _token("brevo-api-key", "a Brevo (Sendinblue) key", r"x(?:keysib|smtpsib)-[0-9a-f]{64}-[A-Za-z0-9]{16}",
           ("xkeysib-", "xsmtpsib-")),
    # -- payment -------------------------------------------------------------------------------------------------
    _token("stripe-key", "a Stripe secret key",
           r"(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{20,}|whsec_[A-Za-z0-9+/=]{32,}", (*_STRIPE, "whsec_")),
    _token("square-token", "a Square access token or secret",
           rf"sq0atp-[{_B64URL}]{{22,}}|sq0csp-[{_B64URL}]{{43}}|EAAA[{_B64URL}+=]{{60,}}",
           ("sq0atp-", "sq0csp-", "EAAA")),
    _token("braintree-token", "a Braintree (PayPal) access token",
           r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}", ("access_token$",)),
    _token("shopify-token", "a Shopify access token or secret", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
           ("shpat_", "shpca_", "shppa_", "shpss_")),
    _token("shippo-token", "a Shippo API token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", ("shippo_",)),
    # -- package registries --------------------------------------------------------------------------------------
    _token("npm-token", "an npm access token", r"npm_[A-Za-z0-9]{36}", ("npm_",)),
    _token("pypi-token", "a PyPI upload token",
           rf"pypi-AgEIcHlwaS5vcmc[{_B64URL}]{{50,}}|pypi-AgENdGVzdC5weXBpLm9yZw[{_B64URL}]{{50,}}", ("pypi-Ag",)),
    _token("rubygems-token", "a RubyGems API key", r"rubygems_[a-f0-9]{48}", ("rubygems_",)),
    _token("nuget-api-key", "a NuGet API key", r"oy2[a-z0-9]{43}", ("oy2",), bits=3.0),
    _token("docker-token", "a Docker Hub access token", rf"dckr_(?:pat|oat)_[{_B64URL}]{{27,}}",
           ("dckr_pat_", "dckr_oat_")),
    _token("artifactory-token", "a JFrog Artifactory token", r"AKCp[A-Za-z0-9]{69}|cmVmdGtu[A-Za-z0-9]{56}",
           ("AKCp", "cmVmdGtu")),
    _token("clojars-token", "a Clojars deploy token", r"CLOJARS_[a-z0-9]{60}", ("CLOJARS_",)),
    # -- tokens of a known shape -----------------------------------------------------------------------------------
    _token("jwt", "a JSON Web Token", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", ("eyJ",)),
    # A bot's id (base64 of its decimal digits: `MT`, `Nj`... start it), a time stamp, an HMAC. Its only literal
    # parts are two letters, found in every other word of a text lower-cased: it is tried where its dots are.
    Rule("discord-bot-token", "a Discord bot token",
         re.compile(rf"{START}(?:M[Tjz]|N[DTjz]|O[DT])[{_B64URL}]{{22,24}}\.[{_B64URL}]{{6}}\.[{_B64URL}]{{27,38}}{END}"),
         (), places=lambda text: _discord_places(text), accept=random_group()),
)  # fmt: skip

_DISCORD_MIDDLE = re.compile(rf"\.[{_B64URL}]{{6}}\.[{_B64URL}]{{27}}")  # starts with a literal: a fast scan


def _discord_places(text: str) -> list[int]:
    """Where a Discord bot token can start: 24 to 26 characters before its middle part."""
    return [m.start() - n for m in _DISCORD_MIDDLE.finditer(text) for n in (24, 25, 26) if m.start() >= n]
