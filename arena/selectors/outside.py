"""Reads of the outside agents' API: their agents, decisions, trades and snapshots."""

from __future__ import annotations

from datetime import date

from django.db.models import OuterRef, QuerySet, Subquery

from arena.models import Agent, Decision, PortfolioSnapshot, Position, Trade


def outside_agents(*, model_id: int, week_start: date) -> QuerySet[Agent]:
    """The outside agent's agents, newest cohort first, each with `decision_status`: its
    decision of `week_start` (None while no run has opened it)."""
    this_week = Decision.objects.filter(agent=OuterRef("pk"), week_start=week_start)
    return (
        Agent.objects.filter(model_id=model_id)
        .select_related("cohort")
        .annotate(decision_status=Subquery(this_week.values("status")[:1]))
        .order_by("-cohort__number")
    )


def outside_decision(*, agent: Agent, week_start: date) -> Decision | None:
    """The agent's decision of the week, with its run."""
    return Decision.objects.select_related("run").filter(agent=agent, week_start=week_start).first()


def outside_trades(*, agent: Agent) -> QuerySet[Trade]:
    """Every trade of the agent (executed and rejected), oldest first."""
    return (
        Trade.objects.filter(agent=agent)
        .select_related("decision", "market")
        .order_by("created_at", "pk")
    )


def outside_open_positions(*, agent: Agent) -> QuerySet[Position]:
    return (
        Position.objects.filter(agent=agent, status=Position.Status.OPEN)
        .select_related("market")
        .order_by("pk")
    )


def outside_latest_snapshot(*, agent: Agent) -> PortfolioSnapshot | None:
    return PortfolioSnapshot.objects.filter(agent=agent).order_by("-snapshot_timestamp").first()
