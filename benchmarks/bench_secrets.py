"""Secret detection on a labelled corpus: recall per kind, false positives per family, texts per second.

    python benchmarks/bench_secrets.py [--seed N] [--per-cell 2] [--per-family 80] [--no-peer] [--show-misses N]
    python benchmarks/bench_secrets.py --disguised   # credentials in disguise: the rules alone vs the policy

The corpus (`memdir.policy._corpus`) is built fresh from ``--seed``: every credential kind (cloud providers, source
hosts, chat and mail, payment, package registries, AI providers, private keys, JWTs, DSNs and basic-auth URLs,
key-word assignments, passwords) in 17 contexts (prose, Markdown, a Markdown table, shell ``export``, ``.env``, JSON,
YAML, Python, JavaScript, a git remote URL, glued after ``/ _ - =``, start and end of text, line 3 of a note),
``--per-cell`` of each, and ``--per-family`` texts of each family of look-alikes (git SHAs, SHA-256 hashes, UUIDs,
base64 images, hex log ids, versions, paths, URLs, settings about secrets, references, documented placeholders,
conversation turns, benign prompts). Values are random in the issuers' shapes: never real keys.

A planted credential counts as found when one finding covers all of its secret part (what a redaction must
remove); a look-alike counts as a false positive when anything is found in it. detect-secrets 1.5 (optional:
``pip install detect-secrets`` or ``pip install -e '.[bench]'``; a benchmark peer, not a dependency) runs on the
same texts in file mode (each text a file named for its context, all plugins and filters) and in line mode
(``scan_line`` on each line); one of its findings counts when its secret overlaps the planted one.

``--disguised`` writes a third of each credential's letters and digits one way a reader still sees through
(percent-encoded, an HTML character reference, a ``\\u`` escape, a look-alike character, an invisible character after
it), or each credential whole as base64 or hex; one way per row, seeded; and the look-alikes' letters as
look-alike characters, and compares the rules alone
(`find_secrets`) with the write policy (`memdir.scan`), which reads text through its disguises: a credential
counts as caught when, its spans redacted, it can no longer be read with the disguises undone.
"""

from __future__ import annotations

import argparse
import base64
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from memdir import WritePolicy, scan
from memdir.policy._corpus import Planted, build, disguise
from memdir.policy._disguise import undisguised
from memdir.policy.secrets import find_secrets

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator


_SUFFIX = {"dotenv": ".env", "json": ".json", "yaml": ".yaml", "python": ".py", "javascript": ".js",
           "shell-export": ".sh", "markdown": ".md", "markdown-table": ".md"}  # fmt: skip


# The ways a row is written: a third of its characters one way (`memdir.policy._corpus.disguise`), by the name the
# table gives them; or the whole credential encoded.
_DISGUISES = {"percent": "percent", "html": "decimal", "escape": "escape", "look-alike": "look-alike",
              "invisible": "invisible", "base64": "", "hex": ""}  # fmt: skip
_ENCODINGS = {"base64": lambda data: base64.b64encode(data).decode(), "hex": bytes.hex}


def _disguise(text: str, how: str, rng: random.Random, share: float = 1 / 3) -> str:
    if how in _ENCODINGS:
        return _ENCODINGS[how](text.encode())
    return "".join(disguise(c, _DISGUISES[how], rng) if c.isalnum() and rng.random() < share else c for c in text)


def _readable(saved: str, secret: str) -> bool:
    """Whether ``secret`` can still be read in ``saved`` once its disguises are undone."""
    view = undisguised(saved)
    return secret in (saved if view is None else view.text)


def _redacted(text: str, spans: Iterable[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + "[REDACTED]" + text[end:]
    return text


def report_disguised(planted: list[Planted], negatives: list[tuple[str, str]], seed: int) -> None:
    rng = random.Random(seed)
    rows: dict[str, list[tuple[Planted, str]]] = {how: [] for how in _DISGUISES}
    for item in planted:
        how = rng.choice(list(_DISGUISES))
        start, end = item.span
        text = item.text[:start] + _disguise(item.secret, how, rng) + item.text[end:]
        rows[how].append((Planted(item.kind, item.context, text, item.secret), item.secret))
    print("| disguise | credentials | the rules alone (find_secrets) | the policy (memdir.scan) |\n|---|---|---|---|")
    for how, items in rows.items():
        alone = sum(
            not _readable(_redacted(p.text, ((m.start, m.end) for m in find_secrets(p.text))), secret)
            for p, secret in items
        )
        policy = sum(not _readable(WritePolicy().screen(p.text).text, secret) for p, secret in items)
        print(f"| {how} | {len(items)} | {_pct(alone, len(items))} | {_pct(policy, len(items))} |")
    shown = [_disguise(text, "look-alike", rng) for _, text in negatives]
    alone_fp = sum(bool(find_secrets(t)) for t in shown)
    policy_fp = sum(any(f.kind == "secret" for f in scan(t)) for t in shown)
    print(f"\nlook-alikes in look-alike letters: false positives {_pct(alone_fp, len(shown))} (rules alone), "
          f"{_pct(policy_fp, len(shown))} (policy)")  # fmt: skip


def memdir_found(item: Planted) -> tuple[bool, str]:
    """Whether memdir's rules cover the secret, and the rule that did."""
    start, end = item.span
    for match in find_secrets(item.text):
        if match.start <= start and match.end >= end:
            return True, match.rule
    return False, "-"


def _overlaps(found: Iterator[str], secret: str) -> bool:
    return any(value and (value in secret or secret in value) for value in found)


class Peer:
    """detect-secrets 1.5, if installed."""

    def __init__(self, folder: Path) -> None:
        from detect_secrets.core.scan import scan_file, scan_line
        from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
        from detect_secrets.settings import default_settings

        self._file, self._line, self._settings, self._folder = scan_file, scan_line, default_settings, folder
        # `scan_line` (what `detect-secrets scan --string` runs) reports every string with its entropy; a string
        # counts as found when its entropy passes the plugin's default limit, as it does in a file scan.
        self._entropy = {p.secret_type: p for p in (Base64HighEntropyString(), HexHighEntropyString())}

    def _counts(self, secret: object) -> bool:
        plugin = self._entropy.get(secret.type)  # type: ignore[attr-defined]
        value = secret.secret_value or ""  # type: ignore[attr-defined]
        return plugin is None or plugin.calculate_shannon_entropy(value) > plugin.entropy_limit

    def file_mode(self, texts: list[tuple[str, str]]) -> tuple[list[list[str]], float]:
        """Each text written to a file named for its context, then scanned: the values found, and the seconds."""
        paths = []
        for n, (context, text) in enumerate(texts):
            path = self._folder / f"{n}{_SUFFIX.get(context, '.txt')}"
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        with self._settings():
            began = time.perf_counter()
            found = [[s.secret_value or "" for s in self._file(p)] for p in paths]
            return found, time.perf_counter() - began

    def line_mode(self, texts: list[tuple[str, str]]) -> tuple[list[list[str]], float]:
        with self._settings():
            began = time.perf_counter()
            found = [[s.secret_value or "" for line in t.splitlines() for s in self._line(line) if self._counts(s)]
                     for _, t in texts]  # fmt: skip
            return found, time.perf_counter() - began


def _timed(fn: Callable[[str], object], texts: list[str], rounds: int = 3) -> float:
    """Texts per second, the best of ``rounds``."""
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - began)
    return len(texts) / best


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / max(1, whole):5.1f}% ({part}/{whole})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--per-cell", type=int, default=2)
    parser.add_argument("--per-family", type=int, default=80)
    parser.add_argument("--no-peer", action="store_true", help="Do not run detect-secrets even if installed.")
    parser.add_argument("--show-misses", type=int, default=0, metavar="N", help="Print N misses and false positives.")
    parser.add_argument("--disguised", action="store_true", help="Credentials in disguise: rules alone vs the policy.")
    args = parser.parse_args()

    planted, negatives = build(args.seed, args.per_cell, args.per_family)
    if args.disguised:
        report_disguised(planted, negatives, args.seed)
        return
    texts = [p.text for p in planted] + [t for _, t in negatives]
    kinds, contexts, families = ({p.kind for p in planted}, {p.context for p in planted}, {f for f, _ in negatives})
    print(f"corpus: {len(planted)} planted credentials ({len(kinds)} kinds x {len(contexts)} contexts), "
          f"{len(negatives)} look-alikes ({len(families)} families), seed {args.seed}\n")  # fmt: skip

    ours = [memdir_found(p) for p in planted]
    fps = [(family, text) for family, text in negatives if find_secrets(text)]
    peer = _peer(args.no_peer)
    columns = {"memdir": ([ok for ok, _ in ours], [bool(find_secrets(t)) for _, t in negatives])}
    speeds = {"memdir (find_secrets)": _timed(find_secrets, texts), "memdir (memdir.scan)": _timed(scan, texts)}
    if peer is not None:
        labelled = [(p.context, p.text) for p in planted] + [("txt", t) for _, t in negatives]
        for mode in ("file", "line"):
            found, seconds = (peer.file_mode if mode == "file" else peer.line_mode)(labelled)
            hits = [_overlaps(iter(values), p.secret) for values, p in zip(found, planted, strict=False)]
            columns[f"detect-secrets ({mode})"] = (hits, [bool(v) for v in found[len(planted) :]])
            speeds[f"detect-secrets ({mode})"] = len(labelled) / seconds

    print("| detector | recall | false positives | texts/s |\n|---|---|---|---|")
    for name, (hits, flagged) in columns.items():
        speed = speeds.get(name) or speeds["memdir (memdir.scan)"]
        print(f"| {name} | {_pct(sum(hits), len(hits))} | {_pct(sum(flagged), len(flagged))} | {speed:,.0f} |")
    print("\nspeed: " + ", ".join(f"{k} {v:,.0f} texts/s" for k, v in speeds.items()))
    _per_kind(planted, ours, columns)
    _per_family(negatives, columns)
    if args.show_misses:
        _show(planted, ours, fps, args.show_misses)


def _peer(disabled: bool) -> Peer | None:
    if disabled:
        return None
    try:
        return Peer(Path(tempfile.mkdtemp(prefix="bench-secrets-")))
    except ImportError:
        print("(detect-secrets is not installed: `pip install detect-secrets` to compare)\n")
        return None


def _per_kind(
    planted: list[Planted], ours: list[tuple[bool, str]], columns: dict[str, tuple[list[bool], list[bool]]]
) -> None:
    kinds = sorted({p.kind for p in planted})
    print("\n| kind | " + " | ".join(columns) + " | named by memdir as |\n|---|" + "---|" * (len(columns) + 1))
    for kind in kinds:
        rows = [i for i, p in enumerate(planted) if p.kind == kind]
        cells = [_pct(sum(columns[c][0][i] for i in rows), len(rows)) for c in columns]
        names = Counter(ours[i][1] for i in rows if ours[i][0])
        print(f"| {kind} | " + " | ".join(cells) + " | " + ", ".join(n for n, _ in names.most_common(3)) + " |")


def _per_family(negatives: list[tuple[str, str]], columns: dict[str, tuple[list[bool], list[bool]]]) -> None:
    families = sorted({f for f, _ in negatives})
    print("\n| look-alikes | " + " | ".join(f"{c} FP" for c in columns) + " |\n|---|" + "---|" * len(columns))
    for family in families:
        rows = [i for i, (f, _) in enumerate(negatives) if f == family]
        print(
            f"| {family} | " + " | ".join(_pct(sum(columns[c][1][i] for i in rows), len(rows)) for c in columns) + " |"
        )


def _show(planted: list[Planted], ours: list[tuple[bool, str]], fps: list[tuple[str, str]], count: int) -> None:
    print("\nmisses:")
    for p, (ok, _) in zip(planted, ours, strict=True):
        if not ok and count:
            count -= 1
            print(f"  {p.kind} in {p.context}: {p.text[:140]!r}")
    print("false positives:")
    for family, text in fps[:count]:
        print(f"  {family}: {text[:140]!r} -> {[m.rule for m in find_secrets(text)]}")


if __name__ == "__main__":
    main()
