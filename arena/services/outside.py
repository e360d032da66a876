"""Outside agents: their API tokens, admission to the main board, the rate limit, and the
record of every refused request.

An outside team's weekly submission, once its token is authenticated, is a decision's answer
like a lineup model's: it is taken in arena/services/decisions/outside.py.

Tokens are `fa_<prefix>_<secret>`; only their SHA-256 is stored. Every refusal (a bad token,
the rate limit, a body too large, a cohort the agent is not in, a submission outside the
window or after the final one) raises OutsideRefused and is recorded as an
`outside_refused` system event naming the token by its prefix, never the token.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import caches
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.models import BenchmarkModel
from arena import clock
from arena.evidence import storable_text
from arena.exceptions import OutsideRefused
from arena.models import Agent, OutsideAgentToken, SystemEvent
from arena.services.events import Kind, Level, event_record

logger = logging.getLogger(__name__)

TOKEN_PATTERN = re.compile(r"fa_([0-9a-f]{8})_[A-Za-z0-9_-]{40,64}")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# --------------------------------------------------------------------------------- tokens


def outside_token_issue(
    *,
    model: BenchmarkModel,
    actor_id: int | None,
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> tuple[OutsideAgentToken, str]:
    """Issue an API token for the outside agent `model`; return (row, token).

    The token itself is returned once, here, and never stored: the caller shows it once.
    It expires at `expires_at` (default OUTSIDE_TOKEN_DAYS from now). Raise ValueError for
    a lineup model."""
    if not model.is_outside:
        raise ValueError(f"{model} is not an outside agent: only outside agents get tokens")
    now = now or clock.now()
    expires_at = expires_at or now + timedelta(days=settings.OUTSIDE_TOKEN_DAYS)
    for _ in range(5):  # a prefix collision (1 in 4 billion a pair) draws again
        prefix = secrets.token_hex(4)
        token = f"fa_{prefix}_{secrets.token_urlsafe(32)}"
        try:
            with transaction.atomic():
                row = OutsideAgentToken.objects.create(
                    model=model,
                    prefix=prefix,
                    digest=_digest(token),
                    created_at=now,
                    created_by_id=actor_id,
                    expires_at=expires_at,
                )
        except IntegrityError:
            continue
        return row, token
    raise RuntimeError("could not draw an unused token prefix")


def outside_token_revoke(*, token_id: int, now: datetime | None = None) -> bool:
    """Revoke the token; return False when it was revoked already (a repeat is a no-op)."""
    with transaction.atomic():
        revoked = OutsideAgentToken.objects.filter(pk=token_id, revoked_at__isnull=True).update(
            revoked_at=now or clock.now()
        )
    return revoked == 1


def outside_admission_set(*, model_id: int, admitted: bool) -> bool:
    """Admit the outside agent to the main leaderboard (or withdraw it); return whether the
    row changed. Lineup models are never touched."""
    with transaction.atomic():
        changed = (
            BenchmarkModel.objects.filter(pk=model_id, kind=BenchmarkModel.Kind.OUTSIDE)
            .exclude(admitted_to_main_board=admitted)
            # updated_at (wall time, as auto_now keeps it) moves the data watermark: cached
            # leaderboards are recomputed.
            .update(admitted_to_main_board=admitted, updated_at=timezone.now())
        )
    return changed == 1


def outside_token_authenticate(*, token: str, now: datetime | None = None) -> OutsideAgentToken:
    """Return the live token row for `token`, or raise OutsideRefused (401): unknown, not a
    token at all, revoked or expired. The comparison is on digests, in constant time."""
    now = now or clock.now()
    match = TOKEN_PATTERN.fullmatch(token)
    row = (
        OutsideAgentToken.objects.select_related("model").filter(prefix=match.group(1)).first()
        if match
        else None
    )
    if row is None or not hmac.compare_digest(row.digest, _digest(token)):
        raise OutsideRefused(401, "invalid_token", "The API token is not valid.")
    if row.revoked_at is not None:
        raise OutsideRefused(401, "token_revoked", "The API token was revoked.", token=row)
    if row.expires_at <= now:
        raise OutsideRefused(401, "token_expired", "The API token has expired.", token=row)
    if row.last_used_at is None or row.last_used_at < now - timedelta(minutes=1):
        OutsideAgentToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


def outside_rate_count(*, token: OutsideAgentToken) -> None:
    """Count one request of the token in its fixed window (OUTSIDE_API_RATE_LIMIT requests per
    OUTSIDE_API_RATE_WINDOW_SECONDS); raise OutsideRefused (429) over the limit. Counted in
    the `api_rate` cache (Redis when configured: every process counts against one limit);
    the key names the token by its prefix, never the token."""
    window: int = settings.OUTSIDE_API_RATE_WINDOW_SECONDS
    now = time.time()
    number = int(now // window)
    key = f"outside-rate:{token.prefix}:{number}"
    counts = caches["api_rate"]
    try:
        counts.add(key, 0, timeout=window + 1)
        try:
            count = counts.incr(key)
        except ValueError:  # expired between add and incr
            counts.set(key, 1, timeout=window + 1)
            count = 1
    except Exception as exc:  # the cache is down: serve rather than fail
        logger.warning("outside rate limit not counted: the api_rate cache failed: %s", exc)
        return
    if count > settings.OUTSIDE_API_RATE_LIMIT:
        wait = max(1, int((number + 1) * window - now + 0.999))
        raise OutsideRefused(
            429,
            "rate_limited",
            f"Too many requests with this token: at most {settings.OUTSIDE_API_RATE_LIMIT} "
            f"per {window} s; try again in {wait} seconds.",
            token=token,
            retry_after=wait,
            # Only the first request over the limit in a window is recorded: a client
            # hammering the API must not fill the operations record.
            record=count == settings.OUTSIDE_API_RATE_LIMIT + 1,
        )


# A refused submission's body is kept with the refusal, up to this many characters (the
# whole body's size and digest too): what was sent is on record, as for a model's answer.
REFUSED_BODY_KEPT = 4096


def outside_refusal_record(
    *,
    refusal: OutsideRefused,
    method: str,
    path: str,
    token: OutsideAgentToken | None,
    body: bytes | None = None,
    client: str = "",
) -> None:
    """Record a refused request: what was refused and why, the token by its prefix only, and
    a refused submission's body (clipped, with its size and SHA-256). A client's refused
    tokens (401) are recorded once per rate window, so that they cannot flood the record."""
    if not refusal.record:
        return
    if refusal.status == 401 and (
        SystemEvent.objects.filter(
            kind=Kind.OUTSIDE_REFUSED,
            data__status=401,
            data__client=client,
            created_at__gte=clock.now()
            - timedelta(seconds=settings.OUTSIDE_API_RATE_WINDOW_SECONDS),
        ).exists()
    ):
        return
    agent = refusal.agent
    sent = {}
    if body is not None:
        sent = {
            "body": storable_text(body.decode("utf-8", errors="backslashreplace"))[
                :REFUSED_BODY_KEPT
            ],
            "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
        }
    event_record(
        kind=Kind.OUTSIDE_REFUSED,
        level=Level.WARNING,
        message=f"{method} {path} refused ({refusal.status} {refusal.code}): {refusal.message}",
        agent_id=agent.pk if agent else None,
        cohort_id=agent.cohort_id if agent else None,
        decision_id=refusal.decision_id,
        data={
            "status": refusal.status,
            "code": refusal.code,
            "method": method,
            "path": path[:200],
            "token_prefix": token.prefix if token else None,
            "model": token.model.internal_id if token else None,
            "client": client,
            **sent,
        },
    )


# ------------------------------------------------------------------------------- agents


def outside_agent_in_cohort(*, token: OutsideAgentToken, cohort_number: int) -> Agent:
    """Return the token's agent in the cohort, or raise OutsideRefused (403): a token acts
    for its own agent only, and only in cohorts it was entered in."""
    agent = (
        Agent.objects.select_related("cohort", "model")
        .filter(model_id=token.model_id, cohort__number=cohort_number)
        .first()
    )
    if agent is None:
        raise OutsideRefused(
            403,
            "not_in_cohort",
            f"{token.model.display_name} has no agent in cohort {cohort_number}.",
            token=token,
        )
    return agent
