"""Drive the real engine over the demo's simulated market world, week after week.

Cohorts start on Sundays, agents (offline stand-ins and baselines) decide at 00:05 through
the real prompt → response → parse → execute path, ticks snapshot every portfolio, markets
resolve and settle. The only simulated parts are the clock and the market source.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from agents.models import BenchmarkModel
from agents.offline import offline_agent_reply
from arena import clock
from arena.exceptions import OutsideRefused
from arena.models import Decision
from arena.services.cohorts import cohort_start
from arena.services.decisions.context import decision_context
from arena.services.decisions.outside import outside_decision_submit, outside_decisions_close
from arena.services.decisions.run import decisions_run_all
from arena.services.frozen import FrozenMarkets
from arena.services.marking import snapshots_take
from arena.services.releases import RELEASE_ENTRY, releases_publish_due
from arena.services.settlement import resolutions_check
from arena.weeks import cohort_week_start, outside_window, week_opens
from markets.demo import SimulatedSource

logger = logging.getLogger(__name__)

# An outside team in the demo, so its board, labels and pages have something to
# show: a deterministic stand-in that reads its prompt and submits through the service the
# outside agents' API calls, ten minutes into each decision window.
DEMO_OUTSIDE_TEAM = "demo-outside-team"
DEMO_OUTSIDE_SUBMITS_AFTER = timedelta(minutes=10)


@dataclass
class DemoReport:
    cohorts: int = 0
    decision_runs: int = 0
    ticks: int = 0
    resolved: int = 0
    cancelled: int = 0
    completed: int = 0

    def summary(self) -> str:
        return (
            f"demo: {self.cohorts} cohorts, {self.decision_runs} decision runs, {self.ticks} "
            f"ticks, {self.resolved} markets resolved, {self.cancelled} cancelled (refunded), "
            f"{self.completed} cohorts completed"
        )


def demo_run(
    *,
    weeks: int = 6,
    seed: int = 7,
    tick: timedelta = timedelta(hours=8),
    until: datetime | None = None,
) -> DemoReport:
    """Simulate `weeks` weekly cohorts ending with this week's, from `weeks - 1` Sundays ago
    up to `until` (default: now), one tick every `tick` of simulated time — hourly over the
    last day and every 10 minutes over the last two hours, so the charts' short ranges (1D,
    1H, 10M) have points to show."""
    if weeks < 1:
        raise ValueError("the demo needs at least one week")
    until = until or timezone.now()
    last_sunday = week_opens(cohort_week_start(until))
    start = last_sunday - timedelta(weeks=weeks - 1)
    source = SimulatedSource(start=start, last_sunday=last_sunday, seed=seed)
    demo_outside_team()
    report = DemoReport()
    sundays = [start + timedelta(weeks=i) for i in range(weeks)]
    moment = start
    while moment <= until:
        source.now = moment
        with clock.simulated(moment):
            if moment in sundays:
                _, created = cohort_start(week_start=moment.date(), now=moment)
                report.cohorts += int(created)
                decision_time = moment + timedelta(minutes=5)
                source.now = decision_time
                with clock.simulated(decision_time):
                    run = decisions_run_all(now=decision_time, source=source)
                    report.decision_runs += int(run.run_id is not None)
                _demo_outside_week(run_at=decision_time)
                source.now = moment
            # The resolution check re-reads every held market, so the tick need not.
            check = resolutions_check(now=moment, source=source)
            snapshots_take(now=moment, source=source, refresh=False)
            # A cohort's release once its LLM agents' bets are scored, and its next one when a
            # baseline's position settles later; a failed publish is recorded, never raised.
            releases_publish_due(now=moment)
            report.ticks += 1
            report.resolved += len(check.resolved)
            report.cancelled += len(check.cancelled)
            report.completed += len(check.completed_cohorts)
        moment += _step(moment, until=until, tick=tick)
    return report


def demo_releases_discard(root: Path | None = None) -> int:
    """Remove every release entry of RELEASES_ROOT (`root`): the folders a publish wrote or
    set aside, partial folders and lock files; leave anything else. Return how many went.

    For the demo's reset only, which empties the database those releases were published
    from: a folder left behind verifies against its own checksums, so the next demo's
    publish would adopt it as its cohort's first release though it holds the old demo's
    rows, and publish the new data as the second. Outside the demo a published folder is
    never deleted (arena.services.releases)."""
    root = Path(settings.RELEASES_ROOT) if root is None else root
    if not root.is_dir():
        return 0
    removed = 0
    for entry in sorted(root.iterdir()):
        if not RELEASE_ENTRY.fullmatch(entry.name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
        removed += 1
    return removed


def demo_outside_team() -> BenchmarkModel:
    """The demo's outside team, registered once (as staff would in the admin)."""
    team, _ = BenchmarkModel.objects.get_or_create(
        internal_id=DEMO_OUTSIDE_TEAM,
        defaults={
            "display_name": "Contrarian Lab (demo)",
            "kind": BenchmarkModel.Kind.OUTSIDE,
            "owner": "Forecaster Arena demo",
            "contact": "demo@example.org",
            "method_description": "A stand-in for an outside team in the demo: the offline "
            "agents' deterministic rules, submitted through the outside agents' API path ten "
            "minutes into each decision window (sometimes malformed first, then resubmitted).",
            "display_order": 90,
        },
    )
    return team


def _demo_outside_week(*, run_at: datetime) -> None:
    """The demo outside team's week: it submits ten minutes into its window (halfway through
    what is left of a shorter one), then the window closes."""
    opens, closes = outside_window(run_at.date())
    first = max(opens, run_at)
    if first < closes:
        submitted_at = min(first + DEMO_OUTSIDE_SUBMITS_AFTER, first + (closes - first) / 2)
        with clock.simulated(submitted_at):
            _demo_outside_submit(at=submitted_at)
    with clock.simulated(closes):
        outside_decisions_close(now=closes)


def _demo_outside_submit(*, at: datetime) -> None:
    """Submit the demo outside team's awaiting decisions at `at`, as its client would: read
    the prompt's snapshot and portfolio, answer, and resubmit once if the answer was
    malformed."""
    awaiting = Decision.objects.filter(
        status=Decision.Status.AWAITING, agent__model__internal_id=DEMO_OUTSIDE_TEAM
    ).select_related("agent__cohort", "agent__model", "run")
    for decision in awaiting:
        agent = decision.agent
        if decision.run is None:
            continue
        frozen = FrozenMarkets.load(decision.run)
        context = decision_context(agent=agent, run=decision.run, frozen=frozen, as_of=at)
        for attempt in (1, 2):
            reply = offline_agent_reply(
                model_id=agent.model.internal_id, context=context, attempt=attempt
            )
            try:
                taken = outside_decision_submit(agent=agent, body=reply.text, now=at)
            except OutsideRefused as refused:  # recorded by the API in production; logged here
                logger.warning("demo outside team refused: %s", refused.message)
                break
            if taken.valid or not taken.resubmissions_left:
                break


def _step(moment: datetime, *, until: datetime, tick: timedelta) -> timedelta:
    """The next tick's distance: finer near `until`. Each step divides the coarser one, so
    the ticks still fall on every Sunday 00:00 that starts a cohort."""
    left = until - moment
    if left <= timedelta(hours=2):
        return min(tick, timedelta(minutes=10))
    if left <= timedelta(days=1):
        return min(tick, timedelta(hours=1))
    return tick
