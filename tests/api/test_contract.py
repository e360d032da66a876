"""The API's contract run: the API keeps the promises its own OpenAPI schema makes.

Schemathesis reads `/api/v1/openapi.json` as served and, for every operation in it (so a new
endpoint is covered the day it is mounted), sends generated requests through the real WSGI
stack, middleware included, to a database holding a populated world: valid and invalid
parameters, boundary values, wrong methods. Every answer must be no 5xx, a status the
operation declares, in a content type and a shape it declares (the error envelope for a 4xx).
The run is bounded and derandomized, so CI sees the same requests every time.

Generated ids mostly name nothing; two tests written from the same schema make sure real rows
and hostile parameters are exercised too: each operation asked about the world's own model,
cohort, agent, decision and market answers 200 within its contract, and each parameter given
hostile values (non-numeric or negative ids, page sizes of 10^9, SQL-looking strings,
impossible dates, huge ranges) answers a clear 4xx in the envelope whenever the value breaks the
parameter's declared schema, and never a 500.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.test import Client
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.helpers import API, assert_envelope
from tests.page_world import World, build_world

SCHEMA_URL = f"{API}/openapi.json"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Bounded and derandomized: 20 generated requests per operation (plus schemathesis's boundary
# and negative "coverage" cases), the same ones on every run. No mining of the app's source for
# constants: it re-parses every module of the project, a third of the run for little gain.
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 10,
        "generation": {"deterministic": True, "max-examples": 20},
        "analysis": {"constants": {"enabled": False}},
    }
)

# A defect schemathesis finds in a file this test does not own, by operation label: the
# operation's contract run is expected to fail (strictly: once fixed, remove the line).
KNOWN_DEFECTS: dict[str, str] = {}


def readable_by_schemathesis(raw: dict[str, Any]) -> dict[str, Any]:
    """Return the schema with its tuples (`prefixItems`, OpenAPI 3.1) as arrays of the union of
    their items' schemas.

    Schemathesis 4.32 rewrites a nested `prefixItems` to the Draft 4 `items: [...]` and then
    validates responses with a Draft 2020-12 validator, which refuses that schema as invalid
    (InvalidSchema "properties -> points -> items -> items" for the value series). The tuples
    here are [timestamp, value] pairs of strings, so the union loses nothing a validator checks
    (`format` is an annotation in 2020-12); their length stays pinned.
    """

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            node = {key: rewrite(value) for key, value in node.items()}
            if "prefixItems" in node:
                items = node.pop("prefixItems")
                node["items"] = {"anyOf": items}
            return node
        if isinstance(node, list):
            return [rewrite(value) for value in node]
        return node

    rewritten: dict[str, Any] = rewrite(raw)  # a new tree: the input is left as it was
    return rewritten


def load_schema() -> Any:
    """The schema the API serves, bound to the WSGI application that serves it."""
    response = Client().get(SCHEMA_URL)
    assert response.status_code == 200, response.content
    schema = schemathesis.openapi.from_dict(
        readable_by_schemathesis(json.loads(response.content)), config=CONFIG
    )
    schema.app = WSGIHandler()
    return schema


schema = load_schema()
# An operation schemathesis cannot read fails in the contract run; these tests take the rest.
OPERATIONS = {r.ok().label: r.ok() for r in schema.get_all_operations() if isinstance(r, Ok)}
# The outside agents' operations answer only a token's holder: asked without one
# they answer 401 (in the contract run, too); tests/api/test_outside_api.py asks with one.
PUBLIC_OPERATIONS = {label: op for label, op in OPERATIONS.items() if "/outside/" not in label}


@pytest.fixture(scope="module")
def module_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """A populated world, built once for the module in a transaction rolled back at its end
    (each test's own transaction nests inside it)."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_world(scale=1)
        transaction.set_rollback(True)


@pytest.fixture
def world(module_world: World, db: None) -> Iterator[World]:
    """The world, served by the WSGI handler in the test's transaction.

    The handler closes the database connection at the start and end of each request; inside
    a transaction that would drop it, so (as Django's test client does around its requests)
    the closing is off for the test.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield module_world
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def _known_defect(request: pytest.FixtureRequest) -> None:
    test, _, label = request.node.name.partition("[")
    reason = KNOWN_DEFECTS.get(label.removesuffix("]"))
    if test == "test_every_operation_keeps_its_contract" and reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


@schema.parametrize()
@settings(suppress_health_check=list(HealthCheck), deadline=None)
def test_every_operation_keeps_its_contract(case: Any, world: World) -> None:
    response = case.call_and_validate(checks=CHECKS)
    # 429 is a declared answer, so a rate limit left on would pass unseen while testing
    # nothing; tests/conftest.py's autouse `_no_api_rate_limit` turns it off.
    assert response.status_code != 429, "the API's rate limit is on during the contract run"


def test_every_operation_declares_its_4xx_in_the_envelope() -> None:
    """The schema says what the contract run holds the API to: each operation may answer
    422 and 429, one with a path parameter 404, each 4xx in the one error envelope."""
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    for label, operation in OPERATIONS.items():
        responses = operation.definition.raw["responses"]
        expected = {"422", "429"} | ({"404"} if parameters(operation, "path") else set())
        assert expected <= set(responses), label
        for status in (s for s in responses if s.startswith("4")):
            assert responses[status]["content"] == envelope, (label, status)


# --- real rows ----------------------------------------------------------------------------


def real_values(world: World) -> tuple[dict[str, Any], dict[str, Any]]:
    """What names the world's own rows, by parameter name: in the path, and as a filter."""
    week = world.cohort.week_start
    path = {
        "agent_id": world.agent.pk,
        "number": world.cohort.number,
        "decision_id": world.decision.pk,
        "polymarket_id": world.market.polymarket_id,
        "internal_id": world.model.internal_id,
    }
    query = {
        "model": world.model.internal_id,
        "cohort": world.cohort.number,
        "agent": world.agent.pk,
        "market": world.market.polymarket_id,
        "week": week.isoformat(),
        "since": week.isoformat(),
        "until": (week + timedelta(days=6)).isoformat(),
    }
    return path, query


def parameters(operation: Any, location: str) -> list[dict[str, Any]]:
    raw = operation.definition.raw
    return [p for p in raw.get("parameters", []) if p["in"] == location]


def real_path(operation: Any, world: World) -> dict[str, Any]:
    known, _ = real_values(world)
    names = [p["name"] for p in parameters(operation, "path")]
    missing = [name for name in names if name not in known]
    if missing:
        pytest.fail(f"{operation.label}: no real value for {missing}; add one to real_values()")
    return {name: known[name] for name in names}


@pytest.mark.parametrize("label", PUBLIC_OPERATIONS)
def test_every_operation_answers_about_real_rows(world: World, label: str) -> None:
    """Asked about the world's own rows, unfiltered and then filtered by every filter it
    takes that names one of them, each operation answers 200 within its contract."""
    operation = OPERATIONS[label]
    path = real_path(operation, world)
    _, known = real_values(world)
    takes = {p["name"] for p in parameters(operation, "query")}
    filters = {name: value for name, value in known.items() if name in takes}
    for query in ({}, filters) if filters else ({},):
        case = operation.Case(path_parameters=path, query=query)
        response = case.call_and_validate(checks=CHECKS)
        assert response.status_code == 200, (query, response.text[:500])


def test_the_real_rows_are_found_not_only_answered(world: World) -> None:
    """The real-row requests above reach rows: the filtered lists hold the world's own."""
    path, query = real_values(world)
    decisions = OPERATIONS[f"GET {API}/decisions"].Case(
        query={"model": query["model"], "cohort": query["cohort"]}
    )
    found = decisions.call_and_validate(checks=CHECKS).json()
    assert [d["id"] for d in found["results"]] == [world.decision.pk]
    agent = OPERATIONS[f"GET {API}/agents/{{agent_id}}"].Case(
        path_parameters={"agent_id": path["agent_id"]}
    )
    assert agent.call_and_validate(checks=CHECKS).json()["standing"]["agent"] == world.agent.pk


# --- hostile parameters -------------------------------------------------------------------

SQL = "1' OR '1'='1'; DROP TABLE arena_agent; --"
HUGE = str(10**30)
HOSTILE_NUMBERS = ["abc", "-1", "0", "1e3", "1.5", str(10**9), str(2**31), HUGE, SQL, ""]
HOSTILE_DATES = ["2031-02-30", "2031-13-01", "0000-00-00", "99999-01-01", "yesterday", SQL]
HOSTILE_TEXT = [SQL, "%", "_", "x" * 5000, "\x00", "..", "😀", " "]


def json_schema(parameter: dict[str, Any]) -> dict[str, Any]:
    """The parameter's schema with an optional one's `null` branch dropped."""
    found: dict[str, Any] = parameter.get("schema", {})
    branches = [b for b in found.get("anyOf", []) if b.get("type") != "null"]
    return branches[0] if len(branches) == 1 else found


def breaks(schema_: dict[str, Any], value: str) -> bool:
    """Whether the value, as sent in a URL, breaks the schema a parameter declares."""
    kind = schema_.get("type")
    if "enum" in schema_:
        return value not in [str(v) for v in schema_["enum"]]
    if kind == "integer":
        try:
            number = int(value)
        except ValueError:
            return True
        return not (schema_.get("minimum", -(10**40)) <= number <= schema_.get("maximum", 10**40))
    if kind == "boolean":
        return value.lower() not in {"true", "false", "1", "0", "yes", "no", "on", "off"}
    if schema_.get("format") == "date":
        return True  # every hostile date is impossible or not a date
    if kind == "string":
        too_long = len(value) > schema_.get("maxLength", 10**9)
        too_short = len(value) < schema_.get("minLength", 0)
        return too_long or too_short or ("pattern" in schema_ and not _matches(schema_, value))
    return False


def _matches(schema_: dict[str, Any], value: str) -> bool:
    return re.search(schema_["pattern"], value) is not None


def hostile_values(schema_: dict[str, Any]) -> list[str]:
    if schema_.get("type") in ("integer", "number"):
        return HOSTILE_NUMBERS
    if schema_.get("format") == "date":
        return HOSTILE_DATES
    if schema_.get("type") == "boolean":
        return ["maybe", "2", SQL, ""]
    return HOSTILE_TEXT


def assert_clear_answer(response: Any, where: str, must_refuse: bool) -> None:
    assert response.status_code < 500, where
    if must_refuse:
        assert 400 <= response.status_code < 500, (where, response.status_code)
    if response.status_code >= 400:
        assert response.headers["content-type"][0].startswith("application/json"), where
        assert_envelope(json.loads(response.content), response.status_code)


@pytest.mark.parametrize("label", OPERATIONS)
def test_hostile_parameters_get_a_clear_4xx(world: World, label: str) -> None:
    """Each parameter in turn takes each hostile value (the others real): a value its schema
    refuses is a 4xx in the envelope; none is a 500, and every answer keeps the contract."""
    operation = OPERATIONS[label]
    path = real_path(operation, world)
    for parameter in parameters(operation, "path") + parameters(operation, "query"):
        schema_ = json_schema(parameter)
        for value in hostile_values(schema_):
            where = f"{label} {parameter['in']} {parameter['name']}={value[:40]!r}"
            if parameter["in"] == "path":
                case = operation.Case(path_parameters={**path, parameter["name"]: value})
            else:
                case = operation.Case(path_parameters=path, query={parameter["name"]: value})
            response = case.call()
            assert_clear_answer(response, where, must_refuse=breaks(schema_, value))
    for unknown in ({"nonsense": "1"}, {"cohorts_": "1"}, {"page_size ": "10"}, {SQL: SQL}):
        case = operation.Case(path_parameters=path, query=unknown)
        assert_clear_answer(case.call(), f"{label} unknown {unknown}", must_refuse=True)


RANGED = [
    label
    for label, operation in OPERATIONS.items()
    if {"since", "until"} <= {p["name"] for p in parameters(operation, "query")}
]


@pytest.mark.parametrize("label", RANGED)
def test_date_ranges_huge_or_backwards_are_answered_not_crashed(world: World, label: str) -> None:
    """Over every year a date holds, a range is an ordinary answer; backwards, a 4xx."""
    operation = OPERATIONS[label]
    path = real_path(operation, world)
    every_year = {"since": "0001-01-01", "until": "9999-12-31"}
    huge = operation.Case(path_parameters=path, query=every_year)
    assert huge.call_and_validate(checks=CHECKS).status_code == 200
    backwards = operation.Case(
        path_parameters=path, query={"since": "2031-02-01", "until": "2031-01-01"}
    )
    assert_clear_answer(backwards.call(), f"{label} backwards", must_refuse=True)


def test_no_two_schemas_of_the_api_share_a_name() -> None:
    # The OpenAPI document names each schema by its class: two of one name would describe
    # one operation's answers with the other's fields.
    from ninja import Schema

    from forecaster.api import api

    api.get_openapi_schema()  # every router's schemas imported

    def subclasses(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

    ours = [c for c in subclasses(Schema) if c.__module__.startswith(("arena.", "forecaster."))]
    names = Counter(c.__name__ for c in set(ours))
    assert [name for name, count in names.items() if count > 1] == []
