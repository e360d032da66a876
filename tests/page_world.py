"""A world of rows for page tests, written directly (no engine run), so a test can choose its
size and put any text it likes where upstream or a model would.

`build_world(scale=n, text=...)` adds one cohort with an agent per lineup model, and for each
agent a decision with `n + 1` attempts (each committed to), `2n` positions (half settled), a
BUY per position, a rejected order and a SELL, `6n` portfolio snapshots; `2n` markets with a
frozen price per run; system events. Every stored free-text field (market question and title,
reasoning, raw response, reject reason, event message) is `text`; so is the display name of a
new model added to the lineup. The pages should issue the same queries whatever `n`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import count

from agents.models import BenchmarkModel
from arena.evidence import commitment_sha256
from arena.models import (
    Agent,
    AnswerCommitment,
    Cohort,
    DataRelease,
    Decision,
    DecisionAttempt,
    DecisionRun,
    PanelForecast,
    PortfolioSnapshot,
    Position,
    SnapshotMarket,
    SystemEvent,
    Trade,
)
from markets.models import Market

FIRST_WEEK = datetime(2031, 1, 5, tzinfo=UTC)  # a Sunday, far from other tests' weeks
_serial = count(1)


@dataclass(frozen=True)
class World:
    cohort: Cohort
    agent: Agent  # an LLM agent of the hostile-named model, with trades of every kind
    decision: Decision  # that agent's decision: attempts, BUYs, a rejection, a SELL
    market: Market  # a market it bet on, with a frozen price history
    model: BenchmarkModel

    def refetched(self) -> World:
        """The same rows read again, for a test of a module that shares the world
        (tests/worlds.py): instances kept from the build hold no test's writes, and would keep
        what one test cached on them for the next."""
        return World(
            cohort=Cohort.objects.get(pk=self.cohort.pk),
            agent=Agent.objects.get(pk=self.agent.pk),
            decision=Decision.objects.get(pk=self.decision.pk),
            market=Market.objects.get(pk=self.market.pk),
            model=BenchmarkModel.objects.get(pk=self.model.pk),
        )


def build_world(*, scale: int = 1, text: str = "plain text") -> World:
    n = next(_serial)
    week = FIRST_WEEK + timedelta(weeks=n)
    cohort = Cohort.objects.create(
        number=5000 + n, week_start=week.date(), started_at=week, methodology_version="v2"
    )
    model = BenchmarkModel.objects.create(
        internal_id=f"page-world-{n}",
        display_name=text[:100],
        provider=text[:100],
        openrouter_id=f"test/page-world-{n}",
        kind=BenchmarkModel.Kind.LLM,
        display_order=900 + n,
    )
    markets = Market.objects.bulk_create(
        Market(
            polymarket_id=f"pw{n}-{i}",
            question=f"{text} #{i}",
            event_title=text,
            description=text,
            outcomes=["Yes", "No"],
            outcome_prices=["0.4", "0.6"],
            last_open_prices=["0.4", "0.6"],
            price=Decimal("0.4"),
            volume=Decimal(1000 + i),
            close_date=week + timedelta(days=30),
        )
        for i in range(2 * scale)
    )
    runs = DecisionRun.objects.bulk_create(
        DecisionRun(
            week_start=week.date(),
            started_at=week + timedelta(minutes=5 + k),
            finished_at=week + timedelta(minutes=6 + k),
            source="demo",
            universe_size=len(markets),
            panel=[m.polymarket_id for m in markets],
            panel_seed=f"page-world-{n}",
        )
        for k in range(scale)
    )
    SnapshotMarket.objects.bulk_create(
        SnapshotMarket(
            run=run,
            market=m,
            rank=i + 1,
            polymarket_id=m.polymarket_id,
            question=m.question,
            category=m.category,
            outcomes=m.outcomes,
            outcome_prices=["0.4", "0.6"],
            volume=m.volume,
            close_date=m.close_date,
        )
        for run in runs
        for i, m in enumerate(markets)
    )
    # Each table's rows are written in one statement, agent after agent, in the order (and so
    # with the ids) that writing them agent by agent would give.
    models = [*BenchmarkModel.objects.filter(active=True).exclude(pk=model.pk), model]
    agents = Agent.objects.bulk_create(
        Agent(cohort=cohort, model=lineup_model, cash=Decimal("9000")) for lineup_model in models
    )
    decisions = Decision.objects.bulk_create(
        _decision(agent, week, markets, runs[-1], text, scale) for agent in agents
    )
    attempts = DecisionAttempt.objects.bulk_create(
        _attempt(decision, week, n, k, text, scale)
        for decision in decisions
        for k in range(scale + 1)
    )
    AnswerCommitment.objects.bulk_create(
        AnswerCommitment(
            attempt=a,
            decision=a.decision,
            agent=a.decision.agent,
            cohort=cohort,
            week_start=week.date(),
            attempt_number=a.number,
            sha256=commitment_sha256(a.raw_response, a.commitment_salt),
            committed_at=a.started_at,
        )
        for a in attempts
    )
    positions = Position.objects.bulk_create(
        _position(agent, market, week, settled=i % 2 == 1)
        for agent in agents
        for i, market in enumerate(markets)
    )
    held = {
        agent.pk: positions[k * len(markets) : (k + 1) * len(markets)]
        for k, agent in enumerate(agents)
    }
    Trade.objects.bulk_create(
        trade
        for agent, decision in zip(agents, decisions, strict=True)
        for trade in _trades(agent, decision, held[agent.pk], week, text)
    )
    PanelForecast.objects.bulk_create(
        _forecast(decision, runs[-1], market, i, text)
        for decision in decisions
        for i, market in enumerate(markets)
    )
    PortfolioSnapshot.objects.bulk_create(
        PortfolioSnapshot(
            agent=agent,
            snapshot_timestamp=week + timedelta(minutes=10 * k),
            cash=Decimal("9000"),
            positions_value=Decimal("300"),
            total_value=Decimal("9300"),
            total_pnl=Decimal("-700"),
            total_pnl_percent=Decimal("-7"),
        )
        for agent in agents
        for k in range(6 * scale)
    )
    SystemEvent.objects.bulk_create(
        SystemEvent(
            kind=SystemEvent.Kind.DECISION_FAILED,
            level=SystemEvent.Level.ERROR,
            message=text,
            cohort=cohort,
            agent=agent,
            decision=decision,
            market=markets[0],
            created_at=week + timedelta(minutes=7),
        )
        for agent, decision in zip(agents, decisions, strict=True)
    )
    agent, decision = agents[-1], decisions[-1]  # the hostile-named model's
    return World(cohort=cohort, agent=agent, decision=decision, market=markets[0], model=model)


def published_release(cohort: Cohort, **fields: object) -> DataRelease:
    """A published data release of `cohort` as a page lists it (no files on disk): version 1,
    one README, `fields` overriding any column."""
    values: dict[str, object] = {
        "cohort": cohort,
        "version": 1,
        "name": f"cohort-{cohort.number}-v1",
        "published_at": datetime(2031, 2, 1, tzinfo=UTC),
        "methodology_version": "v1",
        "manifest": {"files": []},
        "files": [{"name": "README.md", "bytes": 0, "sha256": "0" * 64}],
        "sha256": "0" * 64,
        "total_bytes": 0,
    }
    release: DataRelease = DataRelease.objects.create(**{**values, **fields})
    return release


def _decision(
    agent: Agent, week: datetime, markets: list[Market], run: DecisionRun, text: str, scale: int
) -> Decision:
    return Decision(
        agent=agent,
        cohort=agent.cohort,
        week_start=week.date(),
        run=run,
        status=Decision.Status.DONE,
        action=Decision.Action.BET,
        reasoning=text,
        parsed={
            "action": "BET",
            "reasoning": text,
            "bets": [{"market_id": markets[0].polymarket_id, "side": "YES", "amount": "50"}],
            "sells": [{"position_id": "1", "percentage": "50"}],
        },
        responder=Decision.Responder.OPENROUTER,
        system_prompt=f"system {text}",
        user_prompt=f"user {text}",
        error=text,
        tries=scale,
    )


def _attempt(
    decision: Decision, week: datetime, n: int, k: int, text: str, scale: int
) -> DecisionAttempt:
    """The decision's attempt `k + 1` of `scale + 1`: an API error first, a valid answer last,
    parse errors between."""
    return DecisionAttempt(
        decision=decision,
        number=k + 1,
        responder="openrouter",
        request_messages=[{"role": "user", "content": text}],
        raw_response=text,
        commitment_salt=f"{n:032x}{k:032x}",
        response_text=text,
        parse_error="" if k == scale else text,
        api_error=text if k == 0 else "",
        valid=k == scale,
        latency_ms=1000 + k,
        cost_usd=Decimal("0.0042"),
        started_at=week + timedelta(minutes=5, seconds=k),
    )


def _position(agent: Agent, market: Market, week: datetime, *, settled: bool) -> Position:
    return Position(
        agent=agent,
        market=market,
        side="YES",
        outcome_index=0,
        shares=Decimal("125"),
        cost_basis=Decimal("50"),
        last_price=Decimal("0.4"),
        status=Position.Status.SETTLED if settled else Position.Status.OPEN,
        settlement_value=Decimal("125") if settled else None,
        realized_pnl=Decimal("75") if settled else Decimal("0"),
        opened_at=week + timedelta(minutes=5),
    )


def panel_resolved(cohort: Cohort) -> None:
    """The cohort's panel questions still open resolve NO: their forecasts (the world's stated
    0.35) are scored, as a release waits for them."""
    PanelForecast.objects.filter(agent__cohort=cohort, scored_at__isnull=True).update(
        outcome=0, brier_score=0.1225, log_score=0.4307829160924542, scored_at=cohort.started_at
    )


def _forecast(
    decision: Decision, run: DecisionRun, market: Market, i: int, text: str
) -> PanelForecast:
    """Methodology v2: a stated forecast of every even question, none (the answer's problem
    the world's text) of every odd one; the odd questions resolved YES and scored."""
    scored = i % 2 == 1
    return PanelForecast(
        decision=decision,
        agent=decision.agent,
        run=run,
        week_start=decision.week_start,
        market=market,
        position=i,
        probability=None if i % 2 else Decimal("0.35"),
        problem=text[:300] if i % 2 else "",
        reference_price=Decimal("0.4"),
        reference=PanelForecast.Reference.SNAPSHOT,
        outcome=1 if scored else None,
        brier_score=0.36 if scored else None,
        log_score=0.916290731874155 if scored else None,
        scored_at=run.started_at + timedelta(days=1) if scored else None,
        created_at=run.started_at,
    )


def _trades(
    agent: Agent, decision: Decision, positions: list[Position], week: datetime, text: str
) -> list[Trade]:
    """A BUY per position, a rejected order and a SELL of half the first position."""
    at = week + timedelta(minutes=5)
    buys = [
        Trade(
            decision=decision,
            agent=agent,
            order_index=i,
            kind=Trade.Kind.BUY,
            status=Trade.Status.EXECUTED,
            market=position.market,
            position=position,
            side="YES",
            requested_amount=Decimal("50"),
            price=Decimal("0.4"),
            shares=Decimal("125"),
            amount=Decimal("50"),
            cash_before=Decimal("10000"),
            cash_after=Decimal("9950"),
            implied_confidence=0.02,
            stated_probability=Decimal("0.45"),
            brier_score=0.9604 if position.status == Position.Status.SETTLED else None,
            side_won=True if position.status == Position.Status.SETTLED else None,
            created_at=at,
        )
        for i, position in enumerate(positions)
    ]
    rejected = Trade(
        decision=decision,
        agent=agent,
        order_index=len(positions),
        kind=Trade.Kind.BUY,
        status=Trade.Status.REJECTED,
        reject_reason=text,
        requested_market_id=text[:64],
        side=text[:255],
        requested_amount=Decimal("5000"),
        created_at=at,
    )
    sell = Trade(
        decision=decision,
        agent=agent,
        order_index=len(positions) + 1,
        kind=Trade.Kind.SELL,
        status=Trade.Status.EXECUTED,
        market=positions[0].market,
        position=positions[0],
        side="YES",
        requested_percentage=Decimal("50"),
        requested_position_id="1",
        price=Decimal("0.4"),
        shares=Decimal("62.5"),
        amount=Decimal("25"),
        cash_before=Decimal("9900"),
        cash_after=Decimal("9925"),
        created_at=at,
    )
    return [*buys, rejected, sell]
