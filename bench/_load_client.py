"""The load benchmark's client (it is no benchmark): virtual users signing in as a browser
and as programs, the request mix, pacing, and what a phase measured (latency per request,
CPU of the server, of the database backends and of the client itself).

One asyncio event loop and one aiohttp session drive every virtual user. Cookies are kept
by hand: with `DEBUG` off the session and CSRF cookies are `Secure`, which a browser (and
aiohttp's jar) would not send over the plain HTTP of this benchmark.
"""

import asyncio
import itertools
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from _load_meter import Meter
from _support import percentile

API = "/api/v1"
SCOPES = ["endpoint:read", "endpoint:create", "incident:read", "analytics:read"]
GROUPS = {"dashboard": "dashboard", "analytics": "API", "crud": "API"}


@dataclass
class Org:
    name: str
    email: str
    password: str
    projects: list[str]
    endpoints: list[str]
    big: bool = False


@dataclass
class User:
    """A virtual user: one organization's owner, signed in to the pages (a session) and
    calling the API with a JWT or with an API key of its own."""

    number: int
    org: Org
    api_auth: str  # "jwt" or "key"
    session: str = ""
    token: str = ""
    made: int = 0


@dataclass
class Sample:
    big: bool
    group: str  # dashboard, analytics, crud
    route: str
    ok: bool
    seconds: float
    done: float  # seconds since the phase began
    size: int
    number: int  # sent as X-Bench-Request: the server's hooks log its figures under it
    cpu_ms: float = float("nan")  # CPU of the worker thread, from parsing to the last byte
    worker_ms: float = float("nan")  # wall time in the worker, over the same span


_numbers = itertools.count(1)


@dataclass
class Result:
    """What one phase measured."""

    name: str
    elapsed: float
    samples: list[Sample]
    cpu: dict[str, float]  # share of the machine's CPUs, 0..1
    cpu_s: dict[str, float]  # CPU seconds by process kind, and the wall time measured
    loop_lag_p99: float
    start_lag_p95: float
    start_lag_max: float
    reset: int  # pacing schedules restarted after falling more than 1 s behind
    failures: list[str]
    offered: float | None = None  # requests/s asked for (paced phases)
    users: int = 0
    attempts: int = 1  # runs of the phase (a disturbed one is run again)


class Client:
    """Sends requests for the virtual users and records each one."""

    def __init__(self, http: aiohttp.ClientSession, base: str) -> None:
        self.http = http
        self.base = base
        self.began = time.perf_counter()
        self.samples: list[Sample] = []
        self.failures: list[str] = []
        self.start_lags: list[float] = []
        self.reset = 0

    async def call(
        self,
        user: User,
        group: str,
        route: str,
        method: str,
        path: str,
        *,
        json: object = None,
        expect: int = 200,
    ) -> tuple[int, bytes]:
        number = next(_numbers)
        headers = {"X-Bench-Request": str(number)}
        if group == "dashboard":
            headers["Cookie"] = f"sessionid={user.session}"
        else:
            headers["Authorization"] = f"Bearer {user.token}"
        began = time.perf_counter()
        status, body = 0, b""
        try:
            async with self.http.request(
                method, self.base + path, headers=headers, json=json, allow_redirects=False
            ) as response:
                body = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            body = repr(exc).encode()
        ended = time.perf_counter()
        ok = status == expect
        sample = Sample(
            user.org.big, group, route, ok, ended - began, ended - self.began, len(body), number
        )
        self.samples.append(sample)
        if not ok and len(self.failures) < 8:
            self.failures.append(f"{status} {method} {path}: {body[:200]!r}")
        return status, body


# --- The mix ------------------------------------------------------------------------------


def _endpoint(user: User, rng: random.Random) -> str:
    return rng.choice(user.org.endpoints)


def _project(user: User, rng: random.Random) -> str:
    return rng.choice(user.org.projects)


def _compare(user: User, rng: random.Random) -> str:
    chosen = rng.sample(user.org.endpoints, 5)
    return "/compare?" + "&".join(f"endpoints={pk}" for pk in chosen)


A = f"{API}/analytics"
Path_ = Callable[[User, random.Random], str]
# (weight, group, route, path): one GET per pick.
GETS: list[tuple[int, str, str, Path_]] = [
    (8, "dashboard", "/ overview 24h", lambda u, r: "/?period=24h"),
    (2, "dashboard", "/ overview 7d", lambda u, r: "/?period=7d"),
    (8, "dashboard", "/endpoints/<id> 24h", lambda u, r: f"/endpoints/{_endpoint(u, r)}"),
    (2, "dashboard", "/endpoints/<id> 7d", lambda u, r: f"/endpoints/{_endpoint(u, r)}?period=7d"),
    (4, "dashboard", "/compare 5 endpoints", _compare),
    (5, "analytics", "summary 24h, org page of 50", lambda u, r: f"{A}/summary?period=24h"),
    (
        4,
        "analytics",
        "summary 7d, project",
        lambda u, r: f"{A}/summary?period=7d&project={_project(u, r)}",
    ),
    (
        6,
        "analytics",
        "response-time 24h, endpoint",
        lambda u, r: f"{A}/response-time?period=24h&endpoint={_endpoint(u, r)}",
    ),
    (4, "analytics", "uptime, project", lambda u, r: f"{A}/uptime?project={_project(u, r)}"),
    (
        3,
        "analytics",
        "sla 7d, endpoint",
        lambda u, r: f"{A}/sla?period=7d&endpoint={_endpoint(u, r)}",
    ),
    (
        3,
        "analytics",
        "sla 7d, project",
        lambda u, r: f"{A}/sla?period=7d&project={_project(u, r)}",
    ),
    (6, "crud", "GET endpoints page of 50", lambda u, r: f"{API}/endpoints"),
    (
        3,
        "crud",
        "GET endpoints ?project",
        lambda u, r: f"{API}/endpoints?project={_project(u, r)}",
    ),
    (8, "crud", "GET endpoints/<id>", lambda u, r: f"{API}/endpoints/{_endpoint(u, r)}"),
    (4, "crud", "GET incidents page of 50", lambda u, r: f"{API}/incidents"),
]
# Create, change and delete a throwaway endpoint: three requests per pick.
WRITE_WEIGHT = 2
WRITES = ["POST endpoints", "PATCH endpoints/<id>", "DELETE endpoints/<id>"]
ROUTES: list[tuple[str, str]] = [(g, name) for _, g, name, _ in GETS] + [
    ("crud", name) for name in WRITES
]
_WEIGHTS = [weight for weight, *_ in GETS] + [WRITE_WEIGHT]


async def _write_cycle(client: Client, user: User, rng: random.Random) -> int:
    user.made += 1
    name = f"load {user.number}-{user.made}"
    body = {
        "project": _project(user, rng),
        "name": name,
        "type": "http",
        "target": f"https://load-{user.number}-{user.made}.example.com/health",
        "interval_seconds": 60,
    }
    post, patch, delete = WRITES
    status, answer = await client.call(
        user, "crud", post, "POST", f"{API}/endpoints", json=body, expect=201
    )
    found = re.search(rb'"id":\s*"([0-9a-f-]{36})"', answer)
    if status != 201 or found is None:
        return 1
    path = f"{API}/endpoints/{found.group(1).decode()}"
    change = {"name": f"{name} (renamed)", "interval_seconds": 120}
    await client.call(user, "crud", patch, "PATCH", path, json=change)
    await client.call(user, "crud", delete, "DELETE", path, expect=204)
    return 3


async def _act(client: Client, user: User, rng: random.Random) -> int:
    """One pick from the mix; returns the requests it made."""
    pick = rng.choices(range(len(_WEIGHTS)), _WEIGHTS)[0]
    if pick == len(GETS):
        return await _write_cycle(client, user, rng)
    _, group, route, path = GETS[pick]
    await client.call(user, group, route, "GET", path(user, rng))
    return 1


# --- Signing in ------------------------------------------------------------------------------


async def sign_in(http: aiohttp.ClientSession, base: str, user: User) -> None:
    """Sign in on /login as a browser does (CSRF cookie and token from the form, then the
    POST); get a JWT from the API, and for a key user an API key made with it."""
    async with http.get(f"{base}/login") as response:
        page = await response.text()
        csrf = response.cookies["csrftoken"].value
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = {"csrfmiddlewaretoken": token, "email": user.org.email, "password": user.org.password}
    headers = {"Cookie": f"csrftoken={csrf}", "Origin": base, "Referer": f"{base}/login"}
    async with http.post(
        f"{base}/login", data=form, headers=headers, allow_redirects=False
    ) as response:
        if response.status != 302 or "sessionid" not in response.cookies:
            raise RuntimeError(f"signing in on /login answered {response.status}")
        user.session = response.cookies["sessionid"].value
    login = {"email": user.org.email, "password": user.org.password}
    async with http.post(f"{base}{API}/auth/login", json=login) as response:
        if response.status != 200:
            raise RuntimeError(f"POST /auth/login answered {response.status}")
        user.token = (await response.json())["token"]
    if user.api_auth == "key":
        ask = {"name": f"load user {user.number}", "scopes": SCOPES}
        headers = {"Authorization": f"Bearer {user.token}"}
        async with http.post(f"{base}{API}/api-keys", json=ask, headers=headers) as response:
            if response.status != 201:
                raise RuntimeError(f"POST /api-keys answered {response.status}")
            user.token = (await response.json())["key"]


async def sign_in_all(base: str, users: list[User]) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        await asyncio.gather(*(sign_in(http, base, user) for user in users))


async def _json(http: aiohttp.ClientSession, base: str, user: User, path: str) -> Any:
    headers = {"Authorization": f"Bearer {user.token}"}
    async with http.get(base + path, headers=headers) as response:
        if response.status != 200:
            raise RuntimeError(f"GET {path} answered {response.status}")
        return await response.json()


async def data_check(base: str, user: User) -> str:
    """What the API says of one organization's data: a line for the output."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        endpoint = user.org.endpoints[1]
        week = await _json(http, base, user, f"{A}/summary?period=7d&endpoint={endpoint}")
        row = week["results"][0]
        pages = await _json(http, base, user, f"{API}/endpoints?page_size=1")
        incidents = await _json(http, base, user, f"{API}/incidents?state=open&page_size=1")
        everything = await _json(http, base, user, f"{API}/incidents?page_size=1")
    return (
        f"{user.org.name}: {pages['count']:,} endpoints, {everything['count']:,} incidents "
        f"({incidents['count']} open); {row['name']} over 7 d: {row['checks']:,} checks, "
        f"{row['failures']} failed, uptime {row['uptime_7d']}%, p95 {row['p95_ms']} ms"
    )


# --- A phase -----------------------------------------------------------------------------


async def _virtual_user(
    client: Client, user: User, until: float, rate: float | None, rng: random.Random
) -> None:
    """Pick actions from the mix until the phase ends: back to back (rate None) or with
    Poisson arrivals at `rate` requests/s (the next one is due whether or not the last one
    was slow; a schedule more than 1 s behind starts again from now)."""
    loop = asyncio.get_running_loop()
    due = loop.time() + (rng.expovariate(rate) if rate else 0.0)
    while True:
        now = loop.time()
        if rate:
            if due >= until:
                break
            if due > now:
                await asyncio.sleep(due - now)
                now = loop.time()
            client.start_lags.append(max(0.0, now - due))
            if now - due > 1.0:
                client.reset += 1
                due = now
        elif now >= until:
            break
        made = await _act(client, user, rng)
        if rate:
            due += sum(rng.expovariate(rate) for _ in range(made))


async def _lag_ticker(until: float, lags: list[float]) -> None:
    """How late the event loop wakes a 10 ms sleep: the client's own delay."""
    loop = asyncio.get_running_loop()
    while loop.time() < until:
        asked = loop.time() + 0.01
        await asyncio.sleep(0.01)
        lags.append(max(0.0, loop.time() - asked))


async def run_phase(
    name: str,
    base: str,
    users: list[User],
    seconds: float,
    rate: float | None,
    meter: Meter,
    seed: int,
) -> Result:
    """Run the users for `seconds` (`rate`: requests/s per user; None: back to back)."""
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()
    ) as http:
        client = Client(http, base)
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        lags: list[float] = []
        meter.start()
        client.began = time.perf_counter()
        background = [
            asyncio.create_task(_lag_ticker(until, lags)),
            asyncio.create_task(meter.run(until)),
        ]
        await asyncio.gather(
            *(
                _virtual_user(client, user, until, rate, random.Random(seed * 7919 + user.number))
                for user in users
            )
        )
        elapsed = time.perf_counter() - client.began
        await asyncio.gather(*background)
        shares, seconds = meter.stop()
    return Result(
        name=name,
        elapsed=elapsed,
        samples=client.samples,
        cpu=shares,
        cpu_s=seconds,
        loop_lag_p99=percentile(lags, 99),
        start_lag_p95=percentile(client.start_lags, 95) if client.start_lags else 0.0,
        start_lag_max=max(client.start_lags, default=0.0),
        reset=client.reset,
        failures=client.failures,
        offered=rate * len(users) if rate else None,
        users=len(users),
    )


# --- Figures -------------------------------------------------------------------------------


@dataclass
class Figures:
    requests: int = 0
    errors: int = 0
    rate: float = 0.0
    p50: float = float("nan")
    p95: float = float("nan")
    p99: float = float("nan")
    worst: float = float("nan")
    kb: float = 0.0
    cpu: float = float("nan")  # mean CPU ms of the worker per request
    worker_p95: float = float("nan")  # p95 of the time spent in the worker
    times: list[float] = field(default_factory=list, repr=False)


def figures(samples: list[Sample], elapsed: float) -> Figures:
    """Requests, req/s, latency percentiles in ms, errors and mean size of some samples."""
    times = [s.seconds * 1000 for s in samples]
    if not samples:
        return Figures()
    served = [s for s in samples if s.cpu_ms == s.cpu_ms]
    return Figures(
        requests=len(samples),
        errors=sum(not s.ok for s in samples),
        rate=len(samples) / elapsed,
        p50=percentile(times, 50),
        p95=percentile(times, 95),
        p99=percentile(times, 99),
        worst=max(times),
        kb=sum(s.size for s in samples) / len(samples) / 1024,
        cpu=sum(s.cpu_ms for s in served) / len(served) if served else float("nan"),
        worker_p95=percentile([s.worker_ms for s in served], 95),
        times=times,
    )
