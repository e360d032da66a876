"""What every page of the arena's admin shares: read-only bases, display helpers, the
permission test, and the record of each staff action.

A stored decision is evidence: nothing in the admin edits one; changes of state are actions
that call services (`arena/services/operations.py` and the engine's own), and each reports
what it did and the reason of every failure. Staff without the superuser flag see and run what
their group allows (the Viewers and Operators groups, migration 0007): every action and
operation asks for its own permission, and each run is recorded with who ran it
(`staff_action_log`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django.contrib import admin, messages
from django.db.models import Model
from django.http import HttpRequest
from django.utils.html import format_html

from arena.services import operations
from arena.services.events import staff_action_record


def preformatted(text: str) -> str:
    """Return `text` escaped in a scrolling <pre> block (prompts, responses, tracebacks)."""
    return format_html(
        '<pre style="white-space:pre-wrap;max-height:520px;overflow:auto;font-size:12px">{}</pre>',
        text,
    )


def pretty_json(value: Any) -> str:
    """Return `value` as indented JSON in a <pre> block, or a dash when there is none."""
    return (
        preformatted(json.dumps(value, indent=2, ensure_ascii=False)) if value is not None else "—"
    )


def short(text: str | None, length: int = 80) -> str:
    """Return `text` on one line, cut to `length` characters (inlines and lists must fit a
    1280 px window; the whole text is on the row's own page)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= length else flat[: length - 1] + "…"


def usd(value: Decimal | None) -> str:
    return "—" if value is None else f"${value:,.2f}"


def user_may(request: HttpRequest, permission: str) -> bool:
    """Return whether the signed-in user holds `permission` (a superuser holds them all)."""
    return bool(request.user.has_perm(permission))


def report_to(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    report: operations.OperationReport,
    *,
    what: str,
) -> None:
    """Show an operation's report: one success message with what went through, one error
    message with every failure and its reason (the admin escapes both)."""
    if report.done:
        model_admin.message_user(
            request,
            f"{what}: {len(report.done)} done — " + "; ".join(report.done),
            messages.SUCCESS,
        )
    if report.failed:
        model_admin.message_user(
            request,
            f"{what}: {len(report.failed)} failed — " + "; ".join(report.failed),
            messages.ERROR,
        )


def staff_action_log(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    *,
    action: str,
    summary: str,
    failed: bool = False,
    objects: Sequence[Model] = (),
    data: dict[str, Any] | None = None,
    cohort_id: int | None = None,
) -> None:
    """Record that the signed-in user ran `action`: an admin LogEntry for each of `objects`
    (the admin's own history of each row), written like any admin edit's, then the staff
    action's SystemEvent (`staff_action_record`: it names the user, the action and `data`,
    links `cohort_id`, and never raises)."""
    for obj in objects:
        model_admin.log_change(request, obj, f"{action}: {summary}"[:2000])
    staff_action_record(
        actor_id=request.user.pk,
        actor_username=request.user.get_username(),
        action=action,
        summary=summary,
        failed=failed,
        data=data,
        cohort_id=cohort_id,
    )


def report_record(
    model_admin: admin.ModelAdmin,  # type: ignore[type-arg]
    request: HttpRequest,
    report: operations.OperationReport,
    *,
    action: str,
    objects: Sequence[Model] = (),
    data: dict[str, Any] | None = None,
) -> None:
    """Record an operation's run (`staff_action_log`) with its report: what went through,
    what failed and why."""
    staff_action_log(
        model_admin,
        request,
        action=action,
        summary=f"{len(report.done)} done, {len(report.failed)} failed",
        failed=bool(report.failed),
        objects=objects,
        data={**(data or {}), "done": report.done, "failed": report.failed},
    )


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """View only: no add, no change (so no Save buttons), no delete."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):  # type: ignore[type-arg]
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
