"""Methodology v2's panel forecasts as an answer states them: one row per question of the
week's panel, written with the answer that carries them (arena.models.PanelForecast)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import QuerySet

from agents.types import MarketView, ParsedDecision
from agents.types import PanelForecast as StatedForecast
from arena import clock, money
from arena.models import Decision, PanelForecast
from arena.services.frozen import FrozenMarkets
from markets.models import Market
from scoring.panel import log_score

# Why a question has no stated forecast when no valid answer came at all.
NO_VALID_ANSWER = "no valid answer: the decision was held by default"


@dataclass(frozen=True)
class PanelQuestion:
    """A question of the panel as the agent was asked it: its market and the reference price
    b its forecast is scored against (the YES price when the agent's prompt froze)."""

    market_id: str
    reference_price: Decimal | None
    reference: str = PanelForecast.Reference.SNAPSHOT


def questions_asked(frozen: FrozenMarkets) -> tuple[PanelQuestion, ...]:
    """The panel's questions at the prices of the snapshot the prompt showed (a lineup
    agent's b). A question whose market had closed by then (a later round's) has no b: its
    outcome may be known, so its forecast is kept but never scored."""
    return tuple(
        PanelQuestion(
            view.market_id, None if frozen.rows[view.market_id].closed else view.yes_price
        )
        for view in frozen.panel
    )


def questions_live(panel: Sequence[MarketView], live: FrozenMarkets) -> tuple[PanelQuestion, ...]:
    """The panel's questions as an outside agent answers them, up to an hour after the
    snapshot froze: each with the live YES price read at its submission as b, so that the
    hour's news earns it nothing. A market that could not be read live, or closed since, has
    no b: its forecast is kept but not scored (docs/methodology.md)."""
    views = live.live.views if live.live is not None else {}
    return tuple(
        PanelQuestion(
            view.market_id,
            views[view.market_id].yes_price if view.market_id in views else None,
            PanelForecast.Reference.LIVE,
        )
        for view in panel
    )


def forecasts_keep_live(
    *, decision: Decision, claimed: QuerySet[Decision], parsed: ParsedDecision, live: FrozenMarkets
) -> int:
    """Keep an outside agent's stored answer's panel forecasts, with the live prices just
    read (`live`) as their b, while the caller still holds its claim (`claimed`: the
    decision's row under it), and only once (a resumed answer whose forecasts were kept
    before its web worker died keeps those). Return the rows written."""
    if not parsed.forecasts:
        return 0
    with transaction.atomic():
        if not claimed.select_for_update().exists():
            return 0  # taken over: the decision is someone else's now
        if PanelForecast.objects.filter(decision=decision, run_id=live.run.pk).exists():
            return 0  # this round's, kept before its web worker died
        return forecasts_write(
            decision=decision,
            run_id=live.run.pk,
            questions=questions_live(live.panel, live),
            stated=parsed.forecasts,
        )


def forecasts_write(
    *,
    decision: Decision,
    run_id: int,
    questions: Sequence[PanelQuestion],
    stated: Sequence[StatedForecast] | None,
    now: datetime | None = None,
) -> int:
    """Write the answer's forecast of each question (replacing an earlier round's): the
    stated probability, or none with why (`stated` None: no valid answer came). Runs in the
    caller's transaction, under its claim. Return the rows written."""
    if not questions:
        return 0
    now = now or clock.now()
    given = {f.market_id: f for f in stated or ()}
    markets = Market.objects.in_bulk([q.market_id for q in questions], field_name="polymarket_id")
    rows = []
    for position, question in enumerate(questions):
        market = markets.get(question.market_id)
        if market is None:  # never: a panel question is a frozen market, kept for good
            continue
        forecast = given.get(question.market_id)
        probability = forecast.probability if forecast is not None else None
        problem = (
            (forecast.problem or "" if forecast is not None else "missing")
            if stated is not None
            else NO_VALID_ANSWER
        )
        # A market settled before this answer (a later round's question) is never scored:
        # the answer may know its outcome. Marked scored now, so nothing waits for it.
        settled = market.resolution != Market.Resolution.OPEN
        rows.append(
            PanelForecast(
                decision=decision,
                agent_id=decision.agent_id,
                run_id=run_id,
                week_start=decision.week_start,
                market=market,
                position=position,
                probability=None if probability is None else money.probability(probability),
                problem=problem[:300] if probability is None else "",
                reference_price=None if settled else question.reference_price,
                reference=question.reference,
                scored_at=now if settled else None,
                created_at=now,
            )
        )
    with transaction.atomic():
        PanelForecast._base_manager.filter(decision=decision).delete()
        PanelForecast.objects.bulk_create(rows)
    return len(rows)


def forecasts_score(*, market: Market, yes: bool, now: datetime) -> int:
    """Score every unscored panel forecast of the resolved `market` (`yes`: its first
    outcome won), in the caller's settlement transaction: Brier and log score of the stated
    probability or, where none was stated, of b (imputed). A forecast without b (an outside
    agent's whose market could not be read live) records the outcome and no score. Return
    the rows scored."""
    outcome = 1 if yes else 0
    rows = list(PanelForecast.objects.filter(market=market, scored_at__isnull=True))
    for row in rows:
        row.outcome, row.scored_at = outcome, now
        if row.reference_price is None:
            continue
        stated = row.probability if row.probability is not None else row.reference_price
        forecast = float(money.probability(stated))
        row.brier_score = (forecast - outcome) ** 2
        row.log_score = log_score(forecast=forecast, outcome=outcome)
    PanelForecast.objects.bulk_update(rows, ["outcome", "brier_score", "log_score", "scored_at"])
    return len(rows)
