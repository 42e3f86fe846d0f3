"""Rate limits per token: a token bucket; past it, 429 with Retry-After, and other tokens are not affected."""

from __future__ import annotations

import httpx
import pytest

from backends import LiveServer
from memdir import RateLimitError, open_store
from memdir.server import ServerConfig
from memdir.server._ratelimit import RateLimiter

from .conftest import Client
from .helpers import error_of


@pytest.fixture
def config(store_url: str) -> ServerConfig:
    # One request per 1,000 s after a burst of 3: nothing refills while the test runs, however slow the machine.
    return ServerConfig(store_url=store_url, rate=0.001, burst=3)


def test_past_the_burst_a_token_gets_429_with_retry_after(client: Client) -> None:
    alice = client("alice")
    for _ in range(3):
        assert alice.get("/v1/usage").status_code == 200
    refused = alice.get("/v1/usage")
    assert error_of(refused) == (429, "rate_limited")
    assert 999 <= int(refused.headers["retry-after"]) <= 1000
    assert 998 < refused.json()["error"]["retry_after"] <= 1000
    assert error_of(alice.post("/v1/tool", json={"command": "view", "path": "/memories"})) == (429, "rate_limited")
    assert error_of(alice.post("/mcp", json={})) == (429, "rate_limited")


def test_each_token_has_its_own_bucket(client: Client, server: LiveServer) -> None:
    first, second = client("alice"), client("alice")
    for _ in range(3):
        first.get("/v1/usage")
    assert first.get("/v1/usage").status_code == 429
    assert second.get("/v1/usage").status_code == 200
    with httpx.Client(base_url=server.url) as anonymous:  # health is not charged to anyone
        assert all(anonymous.get("/healthz").status_code == 200 for _ in range(5))


def test_an_unauthenticated_request_is_refused_before_it_is_charged(client: Client, server: LiveServer) -> None:
    alice = client("alice")
    with httpx.Client(base_url=server.url, headers={"Authorization": "Bearer mdt_" + "x" * 43}) as stranger:
        assert all(stranger.get("/v1/usage").status_code == 401 for _ in range(5))
    assert alice.get("/v1/usage").status_code == 200


def test_remote_store_reports_the_limit_as_an_error_to_act_on(server: LiveServer) -> None:
    with open_store(server.url_for("alice")) as store:  # opening costs one request (whoami)
        store.usage()
        store.usage()
        with pytest.raises(RateLimitError) as caught:
            store.usage()  # Retry-After (1,000 s) is past what RemoteStore waits for: it reports it
    assert 999 <= caught.value.retry_after <= 1000


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_refills_at_the_rate_up_to_the_burst() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=4, clock=clock)
    assert [limiter.check("t") for _ in range(4)] == [0.0] * 4
    assert limiter.check("t") == pytest.approx(0.5)  # one request refills in 1/rate seconds
    clock.now += 0.25
    assert limiter.check("t") == pytest.approx(0.25)
    clock.now += 0.25
    assert limiter.check("t") == 0.0
    clock.now += 3600  # a long pause refills to the burst, not beyond
    assert [limiter.check("t") for _ in range(5)][-2:] == [0.0, pytest.approx(0.5)]
    assert limiter.check("other") == 0.0
    assert RateLimiter.retry_after_header(0.01) == "1" and RateLimiter.retry_after_header(2.2) == "3"


def test_a_rate_of_zero_turns_limiting_off() -> None:
    limiter = RateLimiter(rate=0, burst=1)
    assert not limiter.enabled
    assert all(limiter.check("t") == 0.0 for _ in range(1000))


def test_full_buckets_are_forgotten() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1000.0, burst=10, clock=clock)
    for i in range(5000):
        clock.now += 1.0  # each key's bucket is full again long before the sweep
        limiter.check(f"token-{i}")
    assert len(limiter._buckets) < 5000
