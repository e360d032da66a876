"""Reads of the status page: the last run of each scheduled job with its outcome, the next
scheduled runs, the operations record, the determinism audit and this week's commitments.

A constant number of queries whatever the data size. Times are UTC. "Nothing yet" is None
(or an empty list), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from celery.schedules import crontab
from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, Subquery, Sum
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from arena.models import (
    Cohort,
    Decision,
    DecisionAttempt,
    DecisionRun,
    DeterminismCheck,
    Position,
    ResolutionCheck,
    SnapshotTick,
    SystemEvent,
)
from arena.seal_rules import positions_open
from arena.selectors.commitments import WeekCommitments, week_commitments
from arena.weeks import cohort_week_start, within_start_grace
from markets.models import Market, MarketSyncRun

RECENT_EVENTS = 50
RECENT_RUN_COSTS = 5
RECENT_CHECKS = 20
SYNC_TASK = "markets.sync_markets"
TICK_TASK = "arena.take_snapshots"
RESOLUTION_TASK = "arena.check_resolutions"
COHORT_TASK = "arena.start_cohort"
# Used when no schedule for the job is declared: the v1 intervals (002, original notes).
DEFAULT_INTERVALS = {SYNC_TASK: timedelta(minutes=5), TICK_TASK: timedelta(minutes=10)}


def next_run(schedule: crontab, *, after: datetime, tz: str = "UTC") -> datetime | None:
    """Return the first moment strictly after `after` that `schedule` fires, in UTC.

    The crontab's fields are read in time zone `tz` (the schedules are declared in UTC). Day
    of week and day of month must both match, as Celery's crontab requires. None when it
    does not fire within four years (a leap day fires within that).
    """
    zone = ZoneInfo(tz)
    local = after.astimezone(zone)
    minutes = sorted(schedule.minute)
    hours = sorted(schedule.hour)
    for offset in range(4 * 366):
        day = local.date() + timedelta(days=offset)
        if not _day_matches(schedule, day):
            continue
        for hour in hours:
            for minute in minutes:
                moment = datetime.combine(day, time(hour, minute), zone)
                if moment > local:
                    return moment.astimezone(UTC)
    return None


def _day_matches(schedule: crontab, day: date) -> bool:
    # Celery counts days of the week from Sunday = 0; Python's weekday() from Monday = 0.
    return (
        (day.weekday() + 1) % 7 in schedule.day_of_week
        and day.day in schedule.day_of_month
        and day.month in schedule.month_of_year
    )


@dataclass(frozen=True)
class ScheduledJob:
    """One scheduled job: its schedule, its next run, when the scheduler last sent it."""

    name: str
    task: str
    schedule: str  # cron fields "minute hour day-of-month month day-of-week"
    next_run_at: datetime | None
    interval: timedelta | None  # between its next two runs
    last_run_at: datetime | None
    total_run_count: int
    enabled: bool
    installed: bool  # False: declared in settings, not (yet) in django-celery-beat


def _cron_text(cron: crontab) -> str:
    return " ".join(
        str(part)
        for part in (
            cron._orig_minute,
            cron._orig_hour,
            cron._orig_day_of_month,
            cron._orig_month_of_year,
            cron._orig_day_of_week,
        )
    )


def _job(
    *,
    name: str,
    task: str,
    cron: crontab,
    now: datetime,
    tz: str = "UTC",
    last_run_at: datetime | None = None,
    total_run_count: int = 0,
    enabled: bool = True,
    installed: bool = True,
) -> ScheduledJob:
    first = next_run(cron, after=now, tz=tz)
    second = next_run(cron, after=first, tz=tz) if first else None
    return ScheduledJob(
        name=name,
        task=task,
        schedule=_cron_text(cron),
        next_run_at=first if enabled else None,
        interval=second - first if first and second else None,
        last_run_at=last_run_at,
        total_run_count=total_run_count,
        enabled=enabled,
        installed=installed,
    )


def scheduled_jobs(*, now: datetime) -> list[ScheduledJob]:
    """Return the crontab jobs installed in django-celery-beat (one query), soonest first;
    when none is installed, the ones declared in CELERY_BEAT_SCHEDULE, marked not installed."""
    jobs = []
    for task in PeriodicTask.objects.select_related("crontab").filter(crontab__isnull=False):
        row = task.crontab
        assert row is not None  # filtered above
        cron = crontab(
            minute=row.minute,
            hour=row.hour,
            day_of_week=row.day_of_week,
            day_of_month=row.day_of_month,
            month_of_year=row.month_of_year,
        )
        jobs.append(
            _job(
                name=task.name,
                task=task.task,
                cron=cron,
                now=now,
                tz=str(row.timezone),
                last_run_at=task.last_run_at,
                total_run_count=task.total_run_count,
                enabled=task.enabled,
            )
        )
    if not jobs:
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
            schedule: Any = entry["schedule"]
            if isinstance(schedule, crontab):
                jobs.append(
                    _job(
                        name=name,
                        task=str(entry["task"]),
                        cron=schedule,
                        now=now,
                        installed=False,
                    )
                )
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(jobs, key=lambda j: (j.next_run_at or far, j.name))


@dataclass(frozen=True)
class Freshness:
    """When a job last did its work, and whether that is older than twice its interval."""

    at: datetime | None
    interval: timedelta
    stale: bool
    age: timedelta | None

    @property
    def interval_text(self) -> str:
        minutes = int(self.interval.total_seconds() // 60)
        return f"{minutes // 60} h" if minutes >= 60 and minutes % 60 == 0 else f"{minutes} min"


def _freshness(at: datetime | None, *, interval: timedelta, now: datetime) -> Freshness:
    age = now - at if at else None
    return Freshness(
        at=at, interval=interval, stale=age is not None and age > 2 * interval, age=age
    )


@dataclass
class RunOutcome:
    """The last decision run and how its decisions ended."""

    run: DecisionRun
    by_status: list[tuple[str, int]]  # (status label, count), in the Status order
    parse_failed: int
    decisions: int


@dataclass(frozen=True)
class RunCost:
    """What the model calls of one decision run used: the sums over its OpenRouter attempts
    (every call the run made, retries and calls cut off by a lost worker included). A sum is
    None when no call reported that figure."""

    run: DecisionRun
    calls: int
    prompt_tokens: int | None
    cached_prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: Decimal | None

    @property
    def cached_share(self) -> Decimal | None:
        """Cached prompt tokens over prompt tokens, in [0, 1]; None when either is unknown."""
        if not self.prompt_tokens or self.cached_prompt_tokens is None:
            return None
        return Decimal(self.cached_prompt_tokens) / Decimal(self.prompt_tokens)


def _attempts_of_run(aggregate: Any) -> Subquery:
    """`aggregate` over the model calls of the outer decision run (None when it has none):
    its attempts answered through OpenRouter, never an offline agent's or a baseline's."""
    attempts = DecisionAttempt.objects.filter(
        run_id=OuterRef("pk"), responder=Decision.Responder.OPENROUTER
    ).order_by()
    return Subquery(attempts.values("run_id").annotate(value=aggregate).values("value"))


def run_costs(*, limit: int = RECENT_RUN_COSTS) -> list[RunCost]:
    """Return the token use and USD cost of the last `limit` decision runs, newest first
    (one query)."""
    runs = DecisionRun.objects.annotate(
        n_calls=_attempts_of_run(Count("pk")),
        sum_prompt=_attempts_of_run(Sum("prompt_tokens")),
        sum_cached=_attempts_of_run(Sum("cached_prompt_tokens")),
        sum_completion=_attempts_of_run(Sum("completion_tokens")),
        sum_cost=_attempts_of_run(Sum("cost_usd")),
    ).order_by("-started_at", "-pk")[:limit]
    return [
        RunCost(
            run=run,
            calls=run.n_calls or 0,
            prompt_tokens=run.sum_prompt,
            cached_prompt_tokens=run.sum_cached,
            completion_tokens=run.sum_completion,
            cost_usd=run.sum_cost,
        )
        for run in runs
    ]


@dataclass
class DeterminismSummary:
    total: int
    matches: int
    mismatches: int
    unknown: int
    void: int = 0  # made by a method that measured nothing: kept, shown, never counted
    recent: list[DeterminismCheck] = field(default_factory=list)

    @property
    def match_rate(self) -> float | None:
        """Matches over the checks that could be compared (unknown ones excluded)."""
        compared = self.matches + self.mismatches
        return self.matches / compared if compared else None


@dataclass(frozen=True)
class MissedCohort:
    """This week's cohort was never started and its first day is over: no run starts it any
    more (a cohort is not started mid-week behind the operators' backs); `command` does."""

    week_start: date
    command: str


def missed_cohort(*, now: datetime, jobs: list[ScheduledJob]) -> MissedCohort | None:
    """Return this week's cohort as missed when it does not exist past its first day
    (COHORT_START_GRACE) while the arena runs weekly: an earlier cohort exists, or the weekly
    start is scheduled (`jobs`, as read). One query, none on the cohort's first day."""
    week = cohort_week_start(now)
    if within_start_grace(week, now):
        return None
    cohorts = Cohort.objects.aggregate(
        this_week=Count("pk", filter=Q(week_start=week)),
        earlier=Count("pk", filter=Q(week_start__lt=week)),
    )
    scheduled = any(job.task == COHORT_TASK and job.enabled and job.installed for job in jobs)
    if cohorts["this_week"] or not (cohorts["earlier"] or scheduled):
        return None
    return MissedCohort(week_start=week, command=f"manage.py start_cohort --week {week:%Y-%m-%d}")


# What each reason the resolution check records for a market it left open is called.
WHY_UNSETTLED = {
    "not_returned": "not returned by the market source",
    "unreadable_record": "its record cannot be read",
    "unknown_uma_status": "an unknown UMA status",
    "awaiting_resolution": "closed, awaiting resolution",
    "trading": "still trading upstream",
}


@dataclass(frozen=True)
class StalledMarket:
    """A held market still unsettled past RESOLUTION_STALL_DAYS, and why it stays open."""

    polymarket_id: str
    question: str
    ends: datetime | None
    days_past_end: int
    reason: str


def stalled_markets(*, now: datetime, last_check: ResolutionCheck | None) -> list[StalledMarket]:
    """Return every market an agent holds an open position in that is still unsettled
    RESOLUTION_STALL_DAYS past its end date (past its first sync here when it has none),
    oldest first, each with the reason the last resolution check left it open. One query."""
    since = now - timedelta(days=settings.RESOLUTION_STALL_DAYS)
    held = Position.objects.filter(positions_open(), market=OuterRef("pk"))
    rows = (
        Market.objects.filter(Exists(held), resolution=Market.Resolution.OPEN)
        .filter(Q(close_date__lte=since) | Q(close_date__isnull=True, created_at__lte=since))
        .order_by("close_date", "polymarket_id")
        .values_list("polymarket_id", "question", "close_date", "created_at")
    )
    reasons: dict[str, str] = {}
    if last_check is not None:
        for entry in last_check.missing:
            reasons[str(entry.get("id"))] = f"{WHY_UNSETTLED['not_returned']}: {entry['reason']}"
        for entry in last_check.still_open:
            label = WHY_UNSETTLED.get(str(entry.get("why")), "still open")
            reasons[str(entry.get("id"))] = f"{label}: {entry.get('reason', '')}"
    return [
        StalledMarket(
            polymarket_id=pid,
            question=question,
            ends=ends,
            days_past_end=(now - (ends or created)).days,
            reason=reasons.get(pid, "the last resolution check did not ask about it"),
        )
        for pid, question, ends, created in rows
    ]


@dataclass
class SystemStatus:
    now: datetime
    last_sync: MarketSyncRun | None
    sync: Freshness
    last_run: RunOutcome | None
    last_tick: SnapshotTick | None
    tick: Freshness
    last_check: ResolutionCheck | None
    jobs: list[ScheduledJob]
    events: list[SystemEvent]
    determinism: DeterminismSummary
    missed_cohort: MissedCohort | None = None
    run_costs: list[RunCost] = field(default_factory=list)
    stalled_markets: list[StalledMarket] = field(default_factory=list)
    stall_days: int = 0
    commitments: WeekCommitments | None = None


def _run_outcome(run: DecisionRun | None) -> RunOutcome | None:
    if run is None:
        return None
    counts = dict(
        Decision.objects.filter(run=run)
        .order_by()
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    parse_failed = Decision.objects.filter(run=run, parse_failed=True).count()
    by_status = [
        (str(label), counts[value]) for value, label in Decision.Status.choices if value in counts
    ]
    return RunOutcome(
        run=run, by_status=by_status, parse_failed=parse_failed, decisions=sum(counts.values())
    )


def _determinism() -> DeterminismSummary:
    counted = Q(void_reason="")
    totals = DeterminismCheck.objects.aggregate(
        n_total=Count("pk", filter=counted),
        n_matches=Count("pk", filter=counted & Q(matches=True)),
        n_mismatches=Count("pk", filter=counted & Q(matches=False)),
        n_unknown=Count("pk", filter=counted & Q(matches__isnull=True)),
        n_void=Count("pk", filter=~counted),
    )
    recent = list(
        DeterminismCheck.objects.select_related(
            "decision__agent__model", "decision__agent__cohort"
        ).order_by("-checked_at", "-pk")[:RECENT_CHECKS]
    )
    return DeterminismSummary(
        total=totals["n_total"],
        matches=totals["n_matches"],
        mismatches=totals["n_mismatches"],
        unknown=totals["n_unknown"],
        void=totals["n_void"],
        recent=recent,
    )


def _interval(jobs: list[ScheduledJob], task: str) -> timedelta:
    for job in jobs:
        if job.task == task and job.interval:
            return job.interval
    return DEFAULT_INTERVALS[task]


def system_status(*, now: datetime | None = None) -> SystemStatus:
    """Return everything the status page shows, in a constant number of queries."""
    now = now or timezone.now()
    jobs = scheduled_jobs(now=now)
    last_sync = MarketSyncRun.objects.order_by("-started_at", "-pk").first()
    last_tick = SnapshotTick.objects.order_by("-slot").first()
    costs = run_costs()  # newest first: its first run is the last run (no query of its own)
    last_run = costs[0].run if costs else None
    last_check = ResolutionCheck.objects.order_by("-checked_at", "-pk").first()
    return SystemStatus(
        now=now,
        last_sync=last_sync,
        sync=_freshness(
            last_sync.finished_at if last_sync else None,
            interval=_interval(jobs, SYNC_TASK),
            now=now,
        ),
        last_run=_run_outcome(last_run),
        last_tick=last_tick,
        tick=_freshness(
            last_tick.slot if last_tick else None, interval=_interval(jobs, TICK_TASK), now=now
        ),
        last_check=last_check,
        jobs=jobs,
        events=list(
            SystemEvent.objects.select_related("cohort", "market").order_by("-created_at", "-pk")[
                :RECENT_EVENTS
            ]
        ),
        determinism=_determinism(),
        missed_cohort=missed_cohort(now=now, jobs=jobs),
        run_costs=costs,
        stalled_markets=stalled_markets(now=now, last_check=last_check),
        stall_days=settings.RESOLUTION_STALL_DAYS,
        commitments=week_commitments(now=now),
    )
