"""Fail when an app module passes 800 lines or a function passes 80.

A module that long, or a function that long, is usually two things: split it by what it does.
Migrations are generated and exempt. Run by `make check`.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("forecaster", "arena", "markets", "agents", "scoring")
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80


def oversized(path: Path) -> list[str]:
    """Return one line per rule the file breaks, naming the file, the place and the size."""
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(ROOT)
    found = []
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines > MAX_MODULE_LINES:
        found.append(f"{where}: {lines} lines (at most {MAX_MODULE_LINES} a module)")
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{where}:{node.lineno}: {node.name}() is {length} lines"
                    f" (at most {MAX_FUNCTION_LINES} a function)"
                )
    return found


def main() -> int:
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                found.extend(oversized(path))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} oversized module(s) or function(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
