"""Hooks: shell commands (from the settings) and Python callables (from the library) run at four points.

=============  =================================  ============================================================
event          when                               what its output does
=============  =================================  ============================================================
SessionStart   a session starts (``startup``),    stdout (or the text a callable returns) is added to the
               is resumed (``resume``), or was    context, marked as coming from the hook
               just compacted (``compact``)
PreCompact     before a compaction (``auto`` or   it may block the compaction (exit status 2, or
               ``manual``)                        ``{"decision": "block", "reason": ...}``); it may back up
                                                  the transcript (``transcript_path`` is in the payload)
PostCompact    after a compaction                 receives the summary (``compact_summary``); output ignored
Stop           the model gave its final answer    may block the stop: the reason goes back to the model,
                                                  which carries on (within ``max_turns``)
=============  =================================  ============================================================

A command gets the payload as JSON on stdin (and ``MEMDIR_SESSION_ID``, ``MEMDIR_TRANSCRIPT``,
``MEMDIR_HOOK_EVENT`` in its environment) and runs in its own process group, killed whole when it overruns
its ``timeout``. A matcher (a regular expression) is matched against the source (SessionStart) or the trigger
(PreCompact, PostCompact). A hook that fails, raises, or times out is reported and skipped: it never stops
the session.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .settings import AgentSettings

__all__ = ["HOOK_EVENTS", "HookCallable", "HookOutcome", "HookSpec", "Hooks", "hooks_from"]


log = logging.getLogger("memdir.agent")

HOOK_EVENTS = ("SessionStart", "PreCompact", "PostCompact", "Stop")
HookCallable = Callable[[dict[str, Any]], object]
"""Called with the payload; returns None, the text to add (a str), or a dict with ``decision``/``reason``/
``context``. Exceptions are reported, never raised into the loop."""
HookSpec = HookCallable | str | Mapping[str, Any]
"""A hook given to `Agent`: a callable, a shell command, or a settings-style ``{command, matcher?, timeout?}``."""

BLOCK_EXIT = 2


@dataclass(frozen=True)
class HookOutcome:
    event: str
    name: str
    ok: bool
    output: str = ""
    blocked: bool = False
    reason: str = ""
    detail: str = ""


_Runner = Callable[[dict[str, Any], dict[str, str], float], HookOutcome]
"""Runs one hook: (payload, extra environment, timeout in seconds) -> outcome."""


@dataclass(frozen=True)
class _Hook:
    run: _Runner
    name: str
    matcher: str | None
    timeout: float | None


class Hooks:
    """The hooks of one agent: ``config`` from the settings (``{event: [{command, matcher?, timeout?}]}``)
    plus callables added with `add`."""

    def __init__(self, config: Mapping[str, Sequence[Mapping[str, Any]]] | None = None, *, timeout: float = 30.0):
        self.timeout = timeout
        self._hooks: dict[str, list[_Hook]] = {event: [] for event in HOOK_EVENTS}
        for event, entries in (config or {}).items():
            for entry in entries:
                self.add(event, str(entry["command"]), matcher=entry.get("matcher"), timeout=entry.get("timeout"))

    def add(
        self, event: str, hook: str | HookCallable, *, matcher: str | None = None, timeout: float | None = None
    ) -> None:
        """Run ``hook`` (a shell command or a callable) at ``event``."""
        if event not in self._hooks:
            raise ValueError(f"unknown hook event {event!r}; use one of {', '.join(HOOK_EVENTS)}")
        if isinstance(hook, str):
            self._hooks[event].append(_Hook(_command(event, hook), _shown(hook), matcher, timeout))
        else:
            name = getattr(hook, "__qualname__", type(hook).__name__)
            self._hooks[event].append(_Hook(_callable(event, hook, name), name, matcher, timeout))

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    def run(self, event: str, payload: dict[str, Any], *, match: str = "") -> list[HookOutcome]:
        """Run ``event``'s hooks whose matcher accepts ``match``, in order; one outcome each."""
        outcomes = []
        env = {
            "MEMDIR_SESSION_ID": str(payload.get("session_id", "")),
            "MEMDIR_TRANSCRIPT": str(payload.get("transcript_path", "")),
            "MEMDIR_HOOK_EVENT": event,
        }
        for hook in self._hooks[event]:
            if hook.matcher and hook.matcher != "*" and not _matches(hook.matcher, match):
                continue
            outcomes.append(hook.run({"hook_event_name": event, **payload}, env, hook.timeout or self.timeout))
        return outcomes


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return pattern == value


def _shown(command: str) -> str:
    one_line = " ".join(command.split())
    return f"`{one_line if len(one_line) <= 48 else one_line[:45] + '...'}`"


# -- shell commands ------------------------------------------------------------------------------------------


def _command(event: str, command: str) -> _Runner:
    name = _shown(command)

    def run(payload: dict[str, Any], env: dict[str, str], timeout: float) -> HookOutcome:
        try:
            # Its own process group, so a timeout kills what the shell started as well.
            process = subprocess.Popen(
                command,
                shell=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, **env},
                start_new_session=True,
            )
        except OSError as exc:
            return HookOutcome(event, name, ok=False, detail=f"could not start: {exc.strerror}")
        try:
            out, err = process.communicate(json.dumps(payload, ensure_ascii=False).encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            return HookOutcome(event, name, ok=False, detail=f"timed out after {timeout:g} s and was stopped")
        return _from_exit(event, name, process.returncode, _decode(out), _decode(err))

    return run


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a grandchild holding the pipes outside the group: stop waiting for it
        log.warning("hook process %s did not close its output after being killed", process.pid)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _from_exit(event: str, name: str, code: int, out: str, err: str) -> HookOutcome:
    if code == BLOCK_EXIT and event in ("PreCompact", "Stop"):
        reason = err.strip() or out.strip() or "blocked by a hook"
        return HookOutcome(event, name, ok=True, blocked=True, reason=reason, detail=f"blocked: {_line(reason)}")
    if code != 0:
        why = _line(err) or _line(out)
        return HookOutcome(event, name, ok=False, detail=f"exit status {code}" + (f": {why}" if why else ""))
    return _from_output(event, name, _parsed(out))


def _parsed(out: str) -> object:
    """JSON output (an object) means fields; anything else is plain text."""
    text = out.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            return out
        if isinstance(value, dict):
            return value
    return out


def _line(text: str) -> str:
    lines = text.strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= 160 else line[:157] + "..."


# -- Python callables ------------------------------------------------------------------------------------------


def _callable(
    event: str, fn: HookCallable, name: str
) -> Callable[[dict[str, Any], dict[str, str], float], HookOutcome]:
    def run(payload: dict[str, Any], _env: dict[str, str], timeout: float) -> HookOutcome:
        box: dict[str, object] = {}

        def call() -> None:
            try:
                box["value"] = fn(payload)
            except Exception as exc:
                box["error"] = exc

        # A thread, so a callable that hangs costs its timeout and no more (it cannot be killed: it is left).
        worker = threading.Thread(target=call, name=f"memdir-hook-{event}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            return HookOutcome(event, name, ok=False, detail=f"timed out after {timeout:g} s (left running)")
        if "error" in box:
            error = box["error"]
            log.error("hook %s raised", name, exc_info=error if isinstance(error, BaseException) else None)
            return HookOutcome(event, name, ok=False, detail=f"raised {type(error).__name__}: {_line(str(error))}")
        return _from_output(event, name, box.get("value"))

    return run


def _from_output(event: str, name: str, value: object) -> HookOutcome:
    if isinstance(value, dict):
        blocked = value.get("decision") == "block" and event in ("PreCompact", "Stop")
        reason = str(value.get("reason") or "")
        context = value.get("context", value.get("additionalContext", ""))
        detail = f"blocked: {_line(reason)}" if blocked else _added(event, str(context or ""))
        return HookOutcome(
            event, name, ok=True, output=str(context or ""), blocked=blocked, reason=reason, detail=detail
        )
    text = "" if value is None else str(value)
    return HookOutcome(event, name, ok=True, output=text, detail=_added(event, text))


def _added(event: str, text: str) -> str:
    if event != "SessionStart" or not text.strip():
        return ""
    lines = len(text.strip().splitlines())
    return f"added {lines} line{'s' if lines != 1 else ''} to the context"


def hooks_from(hooks: Hooks | Mapping[str, Sequence[HookSpec]] | None, settings: AgentSettings) -> Hooks:
    """The settings' hooks, then the ones given: callables, commands, or ``{command, matcher?, timeout?}``."""
    if isinstance(hooks, Hooks):
        return hooks
    made = Hooks(settings.hooks, timeout=settings.hook_timeout)
    for event, entries in (hooks or {}).items():
        for entry in entries:
            if isinstance(entry, Mapping):
                made.add(event, str(entry["command"]), matcher=entry.get("matcher"), timeout=entry.get("timeout"))
            else:
                made.add(event, entry)
    return made
