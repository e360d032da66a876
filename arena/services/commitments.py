"""Commitments to the stored responses: each attempt with a body is committed to, publicly,
in the transaction that stores it (`lifecycle.attempt_record` calls these).

While a week's answers are hidden, its commitments say that each was stored, when, and
bind it: the SHA-256 of a secret salt and the response (`arena.evidence.commitment_sha256`).
The salt is kept on the attempt and revealed with it, so afterwards anyone recomputes the
digest from what is shown and compares it with the commitment published before. Attempts
stored before commitments were made have none, and none is ever made for them later: a
commitment made now would prove nothing about then.
"""

from __future__ import annotations

import secrets

from arena import clock
from arena.evidence import commitment_sha256
from arena.models import AnswerCommitment, Decision, DecisionAttempt

SALT_BYTES = 32


def commitment_salt(*, raw_response: str) -> str:
    """Return a fresh secret salt (SALT_BYTES random bytes, hex) for a response about to be
    stored, or "" when it has no body: nothing is committed to then."""
    return secrets.token_hex(SALT_BYTES) if raw_response else ""


def commitment_record(*, attempt: DecisionAttempt, decision: Decision) -> AnswerCommitment | None:
    """Commit to the attempt's stored response (its `raw_response` with its
    `commitment_salt`), stamped now; None, writing nothing, for an attempt with no body.

    Call it inside the transaction that stores the attempt, so that no response is ever
    stored without its commitment. `decision` is the attempt's (its agent, cohort, week).
    """
    if not attempt.raw_response:
        return None
    return AnswerCommitment.objects.create(
        attempt=attempt,
        decision=decision,
        agent_id=decision.agent_id,
        cohort_id=decision.cohort_id,
        week_start=decision.week_start,
        attempt_number=attempt.number,
        sha256=commitment_sha256(attempt.raw_response, attempt.commitment_salt),
        committed_at=clock.now(),
    )
