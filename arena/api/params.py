"""Parameter types the routers share, and the lookups that turn a filter into the record it
names (an unknown one is a 422)."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated

from ninja import Query
from ninja.errors import HttpError
from pydantic import BeforeValidator

from agents.models import BenchmarkModel
from arena.models import Agent, Cohort
from arena.selectors import markets
from markets.models import Market

MAX_PAGE_SIZE = 100
MAX_PAGE = 1_000_000  # far beyond any real list; keeps the offset an ordinary integer
MAX_ID = 2**31 - 1  # ids and numbers past a 32-bit integer name nothing (and overflow SQL)
ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # ASCII digits only, as the schema says


def _written_as_a_day(value: object) -> object:
    """A day is written YYYY-MM-DD, as the schema says. pydantic alone would also read a number
    as a Unix timestamp (`until=0` the first day of 1970), which no reader of the schema expects."""
    if isinstance(value, str) and not ISO_DAY.fullmatch(value):
        raise ValueError("must be a day written YYYY-MM-DD")
    return value


IsoDate = Annotated[date, BeforeValidator(_written_as_a_day)]
QueryId = Annotated[int, Query(ge=1, le=MAX_ID)]
Page = Annotated[int, Query(ge=1, le=MAX_PAGE)]
PageSize = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)]
ModelId = Annotated[str, Query(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]
MarketId = Annotated[str, Query(min_length=1, max_length=32, pattern=r"^[0-9A-Za-z_-]+$")]


def known_model(model: str | None) -> BenchmarkModel | None:
    """Return the model a filter names, or None with no filter; an unknown one is a 422."""
    if model is None:
        return None
    found = BenchmarkModel.objects.filter(internal_id=model).first()
    if found is None:
        raise HttpError(422, "model: no model has this id")
    return found


def known_cohort(number: int | None) -> Cohort | None:
    if number is None:
        return None
    found = Cohort.objects.filter(number=number).first()
    if found is None:
        raise HttpError(422, "cohort: no cohort has this number")
    return found


def known_agent(agent_id: int | None) -> Agent | None:
    if agent_id is None:
        return None
    found = Agent.objects.filter(pk=agent_id).first()
    if found is None:
        raise HttpError(422, "agent: no agent has this id")
    return found


def known_market(polymarket_id: str | None) -> Market | None:
    if polymarket_id is None:
        return None
    try:
        return markets.market_get(polymarket_id=polymarket_id)
    except Market.DoesNotExist as exc:
        raise HttpError(422, "market: no market has this Polymarket id") from exc
