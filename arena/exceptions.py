"""Domain errors of the arena."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arena.models import Agent, OutsideAgentToken


class TradeRejected(Exception):
    """An order that cannot execute; the message is the reason recorded on the trade."""


class DecisionNotRetryable(Exception):
    """The decision is final or held by a running claim."""


class ClaimLost(Exception):
    """The decision is no longer held by this executor's claim (a slow worker whose claim
    was taken over): it must write nothing more for it."""


class OutcomesChanged(Exception):
    """A resolved market whose final record no longer names an outcome that positions were
    bought on (`unlisted_sides`, against the record's `outcomes`): it is not settled, since
    nobody can say by the record which of them won; staff decide."""

    def __init__(
        self, *, polymarket_id: str, outcomes: list[str], unlisted_sides: list[str]
    ) -> None:
        self.polymarket_id = polymarket_id
        self.outcomes = outcomes
        self.unlisted_sides = unlisted_sides
        super().__init__(
            f"market {polymarket_id} not settled: its final record lists the outcomes "
            f"{outcomes}, which no longer name {unlisted_sides}, bought by positions in it; "
            "staff must decide how it settles"
        )


class OutsideRefused(Exception):
    """An outside agent's API request refused: `status` (a 4xx), a snake_case `code` and the
    message sent back. The refusal is recorded (`outside_refusal_record` in
    arena/services/outside.py) with what is known of the request:

    - `token`: the token row the request was made with, once it was read (else None);
    - `agent` and `decision_id`: the token's agent in the cohort named, and its decision of
      the week, for a refused submission;
    - `retry_after`: seconds until the rate window ends, sent back as `Retry-After` (a 429;
      None for every other refusal);
    - `record`: False for a refusal not worth recording (a prompt read before it is ready,
      every request past the first over the rate limit in a window).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        token: OutsideAgentToken | None = None,
        agent: Agent | None = None,
        decision_id: int | None = None,
        retry_after: int | None = None,
        record: bool = True,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.token = token
        self.agent = agent
        self.decision_id = decision_id
        self.retry_after = retry_after
        self.record = record
