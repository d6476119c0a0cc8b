"""HTTP-family `config.assertions` against the real local HTTP peer: each comparison of each
source met and unmet, the error naming the first unmet one with the value found (masked),
a catastrophic pattern finishing fast, and bad assertions refused by the API by index."""

import time

import pytest

from monitoring.models import Endpoint
from monitoring.validation.assertions import SUPPORTED
from tests.helpers import assert_problem
from tests.monitoring.peers import BACKTRACK_LENGTH
from tests.monitoring.probing import leaked, run


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


def _assertion(source, prop, comparison, target=""):
    return {"source": source, "property": prop, "comparison": comparison, "target": target}


# (source, property, comparison, a target that holds, one that does not, the peer's path)
CASES = [
    ("status_code", "", "equals", "200", "204", "/json"),
    ("status_code", "", "not_equals", 500, 200, "/json"),
    ("status_code", "", "less_than", 300, 200, "/json"),
    ("status_code", "", "greater_than", 199, 200, "/json"),
    ("header", "X-Version", "equals", "1.2.3", "1.2.4", "/json"),
    ("header", "x-version", "not_equals", "2.0.0", "1.2.3", "/json"),
    ("header", "Content-Type", "contains", "json", "xml", "/json"),
    ("header", "Content-Type", "not_contains", "xml", "json", "/json"),
    ("header", "X-Version", "matches", r"^1\.\d+\.\d+$", r"^2\.", "/json"),
    ("header", "X-Version", "exists", None, None, "/json"),
    ("header", "X-Missing", "not_exists", None, None, "/json"),
    ("body", "", "equals", "ok healthy", "ok", "/health"),
    ("body", "", "not_equals", "down", "ok healthy", "/health"),
    ("body", "", "contains", "healthy", "unhealthy", "/health"),
    ("body", "", "not_contains", "unhealthy", "healthy", "/health"),
    ("body", "", "matches", r"ok\s+\w+", r"^down", "/health"),
    ("json", "status", "equals", "degraded", "ok", "/json"),
    ("json", "checks.db", "not_equals", "down", "ok", "/json"),
    ("json", "tags", "contains", "primary", "us", "/json"),
    ("json", "tags", "not_contains", "us", "eu", "/json"),
    ("json", "checks.cache", "matches", "^do", "^ok", "/json"),
    ("json", "queue.depth", "less_than", 100, 42, "/json"),
    ("json", "queue.depth", "greater_than", "41.5", 42, "/json"),
    ("json", "checks.db", "exists", None, None, "/json"),
    ("json", "checks.search", "not_exists", None, None, "/json"),
    ("response_time", "", "less_than", 5000, 0.001, "/health"),
    ("response_time", "", "greater_than", 0, 5000, "/health"),
]
# exists / not_exists have no target: the unmet case asks the opposite presence.
_OPPOSITE = {
    ("header", "X-Version"): "X-Missing",
    ("header", "X-Missing"): "X-Version",
    ("json", "checks.db"): "checks.search",
    ("json", "checks.search"): "checks.db",
}


def test_the_cases_cover_every_supported_comparison_of_every_source():
    covered = {(source, comparison) for source, _, comparison, *_ in CASES}

    assert covered == {(s, c) for s, comparisons in SUPPORTED.items() for c in comparisons}


@pytest.mark.parametrize(
    ("source", "prop", "comparison", "holds", "fails", "path"),
    CASES,
    ids=[f"{c[0]}-{c[2]}" for c in CASES],
)
def test_each_comparison_of_each_source_met_and_unmet(
    http_peer, source, prop, comparison, holds, fails, path
):
    url = http_peer.url(path)
    config = {"expected_status": [200], "assertions": [_assertion(source, prop, comparison, holds)]}
    met = run("http", url, config)
    assert met.ok, met

    other = _OPPOSITE.get((source, prop), prop) if holds is None else prop
    unmet_assertion = _assertion(source, other, comparison, fails)
    unmet = run("http", url, {"assertions": [unmet_assertion]})
    assert not unmet.ok
    assert unmet.error.startswith(f"assertion 1 failed: {source} "), unmet.error
    assert ", got " in unmet.error


def test_the_error_names_the_first_unmet_assertion_with_the_value_found(http_peer):
    config = {
        "assertions": [
            _assertion("status_code", "", "equals", 200),
            _assertion("json", "status", "equals", "ok"),
            _assertion("json", "queue.depth", "less_than", 10),  # unmet too, never reached
        ]
    }

    result = run("http", http_peer.url("/json"), config)

    assert not result.ok
    assert result.error == 'assertion 2 failed: json status equals "ok", got "degraded"'
    assert result.status_detail == "HTTP 200"


@pytest.mark.parametrize(
    ("assertion", "error"),
    [
        (
            _assertion("header", "X-Missing", "equals", "x"),
            'assertion 1 failed: header X-Missing equals "x", got nothing',
        ),
        (
            _assertion("json", "queue", "less_than", 10),
            'assertion 1 failed: json queue less_than 10, got {"depth": 42}',
        ),
        (
            _assertion("status_code", "", "greater_than", 200),
            "assertion 1 failed: status_code greater_than 200, got 200",
        ),
    ],
)
def test_missing_and_structured_values_read_plainly(http_peer, assertion, error):
    assert run("http", http_peer.url("/json"), {"assertions": [assertion]}).error == error


def test_json_on_a_body_that_is_not_json_fails(http_peer):
    config = {"assertions": [_assertion("json", "status", "not_exists")]}

    result = run("http", http_peer.url("/health"), config)

    assert result.error == "assertion 1 failed: json status not_exists, got a body that is not JSON"


def test_the_value_found_is_masked(http_peer):
    secret = "Bearer s3cr3t-t0ken-value"
    config = {
        "headers": {"Authorization": secret},
        "assertions": [_assertion("json", "authorization", "equals", "nope")],
    }

    result = run("http", http_peer.url("/echo-headers"), config)

    assert result.error.startswith("assertion 1 failed: json authorization equals")
    assert leaked(result.error, "", "s3cr3t-t0ken-value") == []
    assert "****" in result.error


@pytest.mark.timing
def test_a_catastrophic_pattern_on_a_long_body_finishes_fast(http_peer):
    config = {"assertions": [_assertion("body", "", "matches", "(a+)+$")]}

    started = time.perf_counter()
    result = run("http", http_peer.url("/backtrack"), config, timeout=10)
    elapsed = time.perf_counter() - started

    assert not result.ok
    assert result.error.startswith('assertion 1 failed: body matches "(a+)+$", got "aaaa')
    assert elapsed < 2.0, elapsed
    assert BACKTRACK_LENGTH == 100_000


def test_expected_status_and_body_contains_still_apply_before_the_assertions(http_peer):
    holds = [_assertion("body", "", "contains", "status")]

    wrong_status = run("http", http_peer.url("/status/503"), {"assertions": holds})
    assert wrong_status.error == "HTTP 503"

    wrong_body = run(
        "http", http_peer.url("/status/200"), {"body_contains": "x", "assertions": holds}
    )
    assert wrong_body.error == "unexpected body"

    both = run(
        "http",
        http_peer.url("/status/503"),
        {"expected_status": [503], "body_contains": "503", "assertions": holds},
    )
    assert both.ok, both


def test_graphql_and_elasticsearch_check_their_assertions(graphql_peer, elasticsearch_peer):
    graphql = graphql_peer.url("/graphql")
    met = [_assertion("json", "data.__typename", "equals", "Query")]
    assert run("graphql", graphql, {"assertions": met}).ok
    unmet = run("graphql", graphql, {"assertions": [_assertion("json", "data", "not_exists")]})
    assert unmet.error == 'assertion 1 failed: json data not_exists, got {"__typename": "Query"}'

    cluster = elasticsearch_peer.url()
    nodes = [_assertion("json", "number_of_nodes", "greater_than", 0)]
    assert run("elasticsearch", cluster, {"assertions": nodes}).ok
    many = [_assertion("json", "number_of_nodes", "greater_than", 1000)]
    assert run("elasticsearch", cluster, {"assertions": many}).error.startswith(
        "assertion 1 failed: json number_of_nodes greater_than 1000, got "
    )


# --- Refused by the API, by index, nothing stored -------------------------------------------

URL = "/api/v1/endpoints"


TARGETS = {
    "http": "https://checkout.example.com/health",
    "websocket": "wss://checkout.example.com/ws",
    "postgresql": "postgresql://db.example.com/orders",
}


def _create(api, cast, kind, assertions):
    return api.post(
        URL,
        {
            "project": str(cast.project.id),
            "name": "Checkout",
            "type": kind,
            "target": TARGETS[kind],
            "config": {"assertions": assertions},
        },
    )


def test_bad_assertions_are_named_by_index_and_part(api, cast):
    api.as_user(cast.owner)
    assertions = [
        _assertion("status_code", "", "equals", 200),
        _assertion("json", "a[", "exists"),
        _assertion("body", "", "less_than", 5),
        _assertion("body", "", "matches", "(unclosed"),
        _assertion("header", "", "exists"),
        _assertion("cookie", "x", "equals", "y"),
        _assertion("status_code", "", "equals", "ok"),
        _assertion("json", "status", "exists", "something"),
        {**_assertion("body", "", "contains", "x"), "extra": 1},
    ]

    problem = assert_problem(_create(api, cast, "http", assertions), 400, "validation_error")

    assert set(problem["errors"]) == {
        "config.assertions[1].property",
        "config.assertions[2].comparison",
        "config.assertions[3].target",
        "config.assertions[4].property",
        "config.assertions[5].source",
        "config.assertions[6].target",
        "config.assertions[7].target",
        "config.assertions[8].extra",
    }
    assert problem["errors"]["config.assertions[2].comparison"] == [
        "body supports only: equals, not_equals, contains, not_contains, matches."
    ]
    assert Endpoint.objects.count() == 0


@pytest.mark.parametrize(
    ("kind", "assertions", "field"),
    [
        ("http", [_assertion("body", "", "contains", "x")] * 21, "config.assertions"),
        ("http", {"source": "body"}, "config.assertions"),
        ("http", ["body"], "config.assertions[0]"),
        ("websocket", [], "config.assertions"),  # a handshake: nothing to assert on
        ("postgresql", [], "config.assertions"),
    ],
)
def test_more_than_twenty_or_no_list_or_another_kind_is_refused(api, cast, kind, assertions, field):
    api.as_user(cast.owner)

    response = _create(api, cast, kind, assertions)

    problem = assert_problem(response, 400, "validation_error")

    assert field in problem["errors"]
    assert Endpoint.objects.count() == 0


def test_assertions_are_stored_with_all_four_parts_and_numbers_as_numbers(api, cast):
    api.as_user(cast.owner)
    assertions = [
        {"source": "status_code", "comparison": "equals", "target": "200"},
        {"source": "json", "property": " status ", "comparison": "exists"},
        {"source": "body", "comparison": "contains", "target": " ok "},
    ]

    created = _create(api, cast, "http", assertions)

    assert created.status_code == 201, created.json()
    assert created.json()["config"]["assertions"] == [
        _assertion("status_code", "", "equals", 200),
        _assertion("json", "status", "exists", ""),
        _assertion("body", "", "contains", " ok "),
    ]
