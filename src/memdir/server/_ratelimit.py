"""Per-token rate limits: a token bucket per token id, in this process.

Each token may send ``burst`` requests at once and ``rate`` per second after that; a request that finds the
bucket empty is refused with 429 and told how long to wait. Buckets live in the worker process: with
``--workers N`` a token's effective limit is up to N times the configured one (a shared bucket would cost a
database write per request).
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["RateLimiter"]

_PRUNE_EVERY = 4096  # checks between sweeps of buckets that have refilled (and so carry no information)


class RateLimiter:
    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when counted)
        self._lock = threading.Lock()
        self._checks = 0

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def check(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0.0 if allowed, else the seconds to wait before retrying."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        with self._lock:
            tokens, then = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                self._maybe_prune(now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    @staticmethod
    def retry_after_header(wait: float) -> str:
        """Retry-After takes whole seconds: round up, so a client that waits that long is let through."""
        return str(max(1, math.ceil(wait)))

    def _maybe_prune(self, now: float) -> None:
        self._checks += 1
        if self._checks % _PRUNE_EVERY:
            return
        full = [k for k, (tokens, then) in self._buckets.items() if tokens + (now - then) * self.rate >= self.burst]
        for key in full:
            del self._buckets[key]
