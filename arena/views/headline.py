"""The sentences under the leaderboard's headline table, the forecast panel's: what its ranking
lets be claimed of the two best, and how many weeks more the power analysis expects before
they separate."""

from __future__ import annotations

import math

from arena.selectors.panel import PanelBoard, PanelComparison
from arena.views.analytics import WEEKS_SHOWN, p_value_text
from scoring.statistics import MIN_WEEKS_TO_CLAIM


def panel_says(board: PanelBoard) -> tuple[str, str]:
    """The sentences under the panel's headline table: what its ranking lets be claimed of the
    two best real rows (of the two best offline stand-ins when no real row is ranked), from
    their Holm-corrected pairwise test, and the weeks more the power analysis expects before
    they separate ("" each where there is nothing to say)."""
    ranked = [row for row in board.llms if row.ranked and not row.offline]
    # Without a real ranked row (offline, the demo), the stand-ins' own table is the one read.
    offline = not ranked
    if offline:
        ranked = [row for row in board.llms if row.ranked and row.offline]
    if not ranked:
        return "", ""
    if len(ranked) == 1:
        return "Only one model covers enough panel questions to be ranked: nothing to compare.", ""
    first, second = ranked[0], ranked[1]
    pair = next(
        (
            c
            for c in board.comparisons
            if c.offline == offline and {c.first, c.second} == {first.label, second.label}
        ),
        None,
    )
    if pair is None:
        return "The two best share no resolved question yet: nothing to compare.", ""
    if pair.weeks < MIN_WEEKS_TO_CLAIM:
        verdict = (
            f"Too early to tell: the two best share questions from {pair.weeks} "
            f"week{'s' if pair.weeks != 1 else ''}, under the {MIN_WEEKS_TO_CLAIM} before any "
            "difference is called, so no model is called ahead of another."
        )
    elif pair.holm_p is None:
        return (
            f"{first.label} and {second.label} score alike on every shared question: the panel "
            "cannot tell them apart.",
            "",
        )
    elif pair.holm_p >= 0.05:
        verdict = (
            f"{first.label} and {second.label} are not distinguishable yet on the panel "
            f"(Holm-corrected p = {p_value_text(pair.holm_p)})."
        )
    else:
        better, worse = (
            (pair.first, pair.second) if pair.difference.estimate < 0 else (pair.second, pair.first)
        )
        # Separated: a forecast of when they would separate has nothing left to say.
        return (
            f"{better} forecast better than {worse} on the panel (Holm-corrected p = "
            f"{p_value_text(pair.holm_p)}); the rest of the order is not established by this "
            "alone.",
            "",
        )
    return verdict, _panel_weeks_more(pair)


def _panel_weeks_more(pair: PanelComparison) -> str:
    if pair.questions_needed is None or not pair.weeks:
        return ""
    per_week = pair.questions / pair.weeks
    weeks = max(
        math.ceil(pair.questions_needed / per_week) - pair.weeks, MIN_WEEKS_TO_CLAIM - pair.weeks
    )
    if weeks <= 0:
        return (
            "Had the gap between the two best been real, the power analysis expected it to show "
            "by now (80% power, one-sided 5% for this pair alone, before Holm's correction, "
            "questions treated as independent)."
        )
    when = (
        "in more than two years of questions"
        if weeks > WEEKS_SHOWN
        else f"in about {weeks} more week{'s' if weeks != 1 else ''} of questions"
    )
    return (
        f"If the gap between the two best is real, the power analysis expects them to separate "
        f"{when} (80% power, one-sided 5% for this pair alone, before Holm's correction over "
        "the pairs, questions treated as independent: a rough figure, on the short side)."
    )
