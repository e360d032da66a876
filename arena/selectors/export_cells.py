"""How PostgreSQL writes an export's cells itself (`COPY ... TO STDOUT`), in the very formats
the Python writer uses (arena/services/exports.py; a test compares the bytes): the cell
expressions by column type, and the lines read back in batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import NotSupportedError, connection
from django.db.models import CharField, DecimalField, F, TextField, Value
from django.db.models.expressions import Case, Combinable, Expression, Func, When
from django.db.models.functions import Cast, NullIf
from django.db.models.lookups import Exact


class _IsoUtc(Func):
    """A timestamptz as ISO 8601 in UTC with a Z, microseconds only when not zero (as
    Python's `isoformat`): `2026-01-04T00:10:00Z`, `2026-01-04T00:10:00.000005Z`."""

    template = (
        "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
        " || CASE WHEN date_trunc('second', %(expressions)s) = %(expressions)s THEN 'Z'"
        " ELSE to_char(%(expressions)s AT TIME ZONE 'UTC', '.US\"Z\"') END"
    )
    output_field = TextField()


class FirstOfTwo(Func):
    """A market's first outcome when it has exactly two (its outcomes a JSON list), else
    NULL: the frame a two-outcome market's questions are asked in."""

    output_field = CharField()
    arity = 1
    # Each database's JSON functions; the project runs on these two. The length is asked in
    # a CASE of its own because SQL may evaluate either side of an AND first, and
    # PostgreSQL's array length fails on a scalar. The argument is a column (the market's
    # outcomes), so repeating it costs nothing.
    TEMPLATES = {
        "sqlite": "CASE WHEN json_type(%(expressions)s) = 'array' THEN CASE WHEN "
        "json_array_length(%(expressions)s) = 2 THEN json_extract(%(expressions)s, '$[0]') "
        "END END",
        "postgresql": "CASE WHEN jsonb_typeof(%(expressions)s) = 'array' THEN CASE WHEN "
        "jsonb_array_length(%(expressions)s) = 2 THEN (%(expressions)s) ->> 0 END END",
    }

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> Any:
        template = template or self.TEMPLATES.get(connection.vendor)
        if template is None:
            raise NotSupportedError(f"FirstOfTwo has no SQL for {connection.vendor}")
        return super().as_sql(compiler, connection, function, template, arg_joiner, **extra_context)


# A cell of the inner query (as `pg_cell` gives it for JSON Lines) as JSON text, null for
# NULL. Decimals, timestamps and dates are digits and punctuation: quoted, nothing to escape.
JSON_VALUE = {
    "integer": "coalesce({0}::text, 'null')",
    "float": "coalesce({0}::text, 'null')",
    "string": "coalesce(to_json({0})::text, 'null')",
    "decimal": "coalesce('\"' || {0} || '\"', 'null')",
    "timestamp": "coalesce('\"' || {0} || '\"', 'null')",
    "date": "coalesce('\"' || {0} || '\"', 'null')",
    "boolean": "CASE WHEN {0} THEN 'true' WHEN NOT {0} THEN 'false' ELSE 'null' END",
}


class _FifteenDigits(Func):
    """A double as PostgreSQL's numeric cast prints it: 15 significant digits, plain
    notation (0.053824, 1, 0.0000001)."""

    template = "(%(expressions)s)::numeric"
    output_field = DecimalField()


def pg_cell(kind: str, source: str | Combinable, fmt: str) -> str | Expression | Combinable:
    """The cell as PostgreSQL should print it: for CSV text (None an empty cell), for JSON
    Lines a value `row_to_json` writes as the JSON value the Python writer would."""
    value = F(source) if isinstance(source, str) else source
    if kind == "timestamp":
        return _IsoUtc(value)
    if kind == "date":
        return Func(value, Value("YYYY-MM-DD"), function="to_char", output_field=TextField())
    if kind == "float":
        return _FifteenDigits(value)
    if fmt == "csv":
        if kind == "string":  # COPY quotes an empty string (""), Python's csv writes nothing
            return NullIf(value, Value(""), output_field=TextField())
        if kind == "boolean":
            return Case(
                When(Exact(value, True), then=Value("true")),
                When(Exact(value, False), then=Value("false")),
                output_field=TextField(),
            )
    elif kind == "decimal":  # a JSON string with the stored places
        return Cast(value, TextField())
    return source


def copied(copy_statement: str, batch_rows: int) -> Iterator[tuple[int, bytes]]:
    """The lines `COPY ... TO STDOUT` sends (one message a row), joined in batches."""
    with connection.cursor() as cursor:
        with cursor.cursor.copy(copy_statement) as copy:
            lines: list[bytes] = []
            for line in copy:
                lines.append(bytes(line))
                if len(lines) == batch_rows:
                    yield len(lines), b"".join(lines)
                    lines = []
            if lines:
                yield len(lines), b"".join(lines)
