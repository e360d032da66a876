"""The embedded demo's market world: the recorded real markets, moved on a simulated clock.

The recordings hold one moment of each market, so the demo source animates them:
- prices follow a seeded random walk in log-odds space (each outcome of a multi-outcome
  market walks on its own and the prices are renormalised);
- "season" markets are listed from the start and resolve before the last simulated week:
  open ones by a seeded draw at their price at that moment (a few, seeded, come back
  resolved 50-50, the recorded ambiguous shape, and are refunded); markets the recording
  shows resolved or ambiguous are shown open until then and resolve exactly as recorded;
- "new" markets are listed a little before the last simulated Sunday and resolve after the
  demo ends, so the last cohort is still running when the demo stops.

With `season` set (a long simulated run: a year), the season markets come in consecutive
seasons of that length instead of one: each is listed at its season's start or, seeded, in
its first half, and resolves before the season ends. A cohort holds the markets of the season
it bets in, so it completes at its season's end, and markets keep being listed and resolved
all through the run.

It hands back Gamma-shaped records, so parsing, upserts, snapshots and settlement run the
production code. Same seed and clock → the same records.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from markets.resolution import SIMULATED
from markets.sources import RECORDINGS, demo_records

STEP = timedelta(hours=4)
VOLATILITY = 0.12  # log-odds per 4-hour step
AMBIGUOUS_SHARE = 0.05
NEW_MARKET_SHARE = 0.25
RECORDED_OUTCOMES = (
    "market_resolved_yes.json",
    "market_resolved_no.json",
    "market_resolved_team_outcomes.json",
    "market_closed_resolved_50_50.json",
)


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))  # nosec B311 # seeded: a reproducible demo walk, not a secret


def _logit(p: float) -> float:
    p = min(max(p, 0.001), 0.999)
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _fmt(p: float) -> str:
    return str(round(p, 4)) if 0 < p < 1 else ("1" if p >= 1 else "0")


@dataclass
class _Plan:
    record: dict[str, Any]
    listed_at: datetime
    resolves_at: datetime
    start_prices: list[float]
    recorded_outcome: dict[str, Any] | None  # serve this record once resolved
    ambiguous: bool


class SimulatedSource:
    """A MarketSource over the recordings at `self.now`, which the demo driver advances."""

    name = "demo"

    def __init__(
        self,
        *,
        start: datetime,
        last_sunday: datetime,
        seed: int = 7,
        season: timedelta | None = None,
    ) -> None:
        self.start = start
        self.last_sunday = last_sunday
        self.season = season
        self.now = start
        self.seed = seed
        self._plans: dict[str, _Plan] = {}
        self._paths: dict[str, list[list[float]]] = {}
        self._walkers: dict[str, random.Random] = {}
        self._build_plans()

    def _build_plans(self) -> None:
        season_end = self.last_sunday - timedelta(hours=12)
        recorded = [json.loads((RECORDINGS / name).read_text()) for name in RECORDED_OUTCOMES]
        recorded_ids = {str(r["id"]) for r in recorded}
        records = dict(demo_records())
        for record in recorded:
            records[str(record["id"])] = record
        for pid, record in sorted(records.items()):
            rng = _rng(self.seed, "plan", pid)
            try:
                outcomes = json.loads(record["outcomes"])
                prices = [float(p) for p in json.loads(record["outcomePrices"])]
            except (KeyError, TypeError, ValueError):
                continue  # unreadable: the sync will refuse it with its reason anyway
            is_recorded = pid in recorded_ids
            if record.get("closed") and not is_recorded:
                continue  # other closed recordings stay out of the simulated world
            if is_recorded or len(outcomes) != len(prices):
                prices = [round(rng.uniform(0.25, 0.75), 3) for _ in outcomes]
                total = sum(prices)
                prices = [p / total for p in prices]
            span = (season_end - self.start).total_seconds()
            new = not is_recorded and rng.random() < NEW_MARKET_SHARE
            if new:
                listed = self.last_sunday - timedelta(hours=1)
                resolves = self.last_sunday + timedelta(weeks=8)
            elif self.season is not None:
                listed, resolves = self._season_window(rng, season_end)
            else:
                listed = self.start - timedelta(days=1)
                resolves = self.start + timedelta(seconds=rng.uniform(0.08, 1.0) * span)
            self._plans[pid] = _Plan(
                record={**record, "closed": False, "active": True},
                listed_at=listed,
                resolves_at=resolves,
                start_prices=prices,
                recorded_outcome=record if is_recorded else None,
                ambiguous=not is_recorded and not new and rng.random() < AMBIGUOUS_SHARE,
            )

    def _season_window(self, rng: random.Random, season_end: datetime) -> tuple[datetime, datetime]:
        """A seeded season, listing and resolution time for one season market: listed the day
        before its season's first Sunday (half of them) or in its first half, resolved before
        its season ends (12 hours before the next season's first Sunday)."""
        assert self.season is not None
        count = max(1, math.ceil((self.last_sunday - self.start) / self.season))
        first_sunday = self.start + self.season * rng.randrange(count)
        ends = min(first_sunday + self.season, self.last_sunday) - timedelta(hours=12)
        ends = min(ends, season_end)
        listed = first_sunday - timedelta(days=1)
        if rng.random() < 0.5:
            listed += (ends - listed) * rng.uniform(0.0, 0.5)
        resolves = listed + (ends - listed) * rng.uniform(0.15, 1.0)
        return listed, resolves

    def _prices_at(self, pid: str, when: datetime) -> list[float]:
        plan = self._plans[pid]
        steps = max(0, int((min(when, plan.resolves_at) - self.start) / STEP))
        path = self._paths.setdefault(pid, [])
        if not path:
            path.append([_logit(p) for p in plan.start_prices])
        rng = self._walkers.setdefault(pid, _rng(self.seed, "walk", pid))
        while len(path) <= steps:
            path.append([x + rng.gauss(0, VOLATILITY) for x in path[-1]])
        raw = [_sigmoid(x) for x in path[steps]]
        if len(raw) == 2 and [o.lower() for o in json.loads(plan.record["outcomes"])] == [
            "yes",
            "no",
        ]:
            return [raw[0], 1 - raw[0]]
        total = sum(raw)
        return [p / total for p in raw]

    def _record_at(self, pid: str, when: datetime) -> dict[str, Any] | None:
        plan = self._plans.get(pid)
        if plan is None or when < plan.listed_at:
            return None
        if when < plan.resolves_at:
            prices = self._prices_at(pid, when)
            return {**plan.record, "outcomePrices": json.dumps([_fmt(p) for p in prices])}
        if plan.recorded_outcome is not None:
            return plan.recorded_outcome
        if plan.ambiguous:
            prices_text = json.dumps(["0.5"] * len(plan.start_prices))
            return {**plan.record, "closed": True, "umaResolutionStatus": "resolved",
                    "outcomePrices": prices_text, SIMULATED: True}  # fmt: skip
        final = self._prices_at(pid, plan.resolves_at)
        draw = _rng(self.seed, "resolve", pid).random()
        winner, cumulative = len(final) - 1, 0.0
        for index, p in enumerate(final):
            cumulative += p
            if draw < cumulative:
                winner = index
                break
        terminal = ["1" if i == winner else "0" for i in range(len(final))]
        return {**plan.record, "closed": True, "umaResolutionStatus": "resolved",
                "outcomePrices": json.dumps(terminal), SIMULATED: True}  # fmt: skip

    def fetch_top_markets(self, limit: int) -> list[Any]:
        open_records = []
        for pid in self._plans:
            record = self._record_at(pid, self.now)
            if record is not None and not record.get("closed"):
                open_records.append(record)
        open_records.sort(
            key=lambda r: float(r.get("volumeNum") or r.get("volume") or 0), reverse=True
        )
        return open_records[:limit]

    def fetch_markets_by_ids(self, ids: list[str]) -> list[Any]:
        return [r for r in (self._record_at(pid, self.now) for pid in ids) if r is not None]
