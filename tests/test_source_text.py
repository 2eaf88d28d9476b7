"""What the package's comments and docstrings may say: what the code does and why, never a
measured figure (it goes stale the day the code or the machine changes; docs/benchmarks.md
holds each figure with its date and command) nor the name of a design document."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import vivy

ROOT = Path(vivy.__file__).parent

_NUMBER = r"\d[\d,.]*\s?"
_UNIT = r"(?:ms|µs|[KMGT]i?B)\b"
#: A figure told as a measurement: "8 % faster", "took 111 MB", "41 MB of memory instead of
#: 155", "150 MB of float vectors for a guild of 100k notes".
MEASURED = re.compile(
    rf"{_NUMBER}(?:%|times)\s+(?:faster|slower)"
    rf"|\b(?:took|takes|taking|costs?)\s+(?:about\s+)?{_NUMBER}(?:s\b|{_UNIT})"
    rf"|{_NUMBER}{_UNIT}[^.;]{{0,40}}\binstead of \d"
    rf"|{_NUMBER}{_UNIT}[^.;]{{0,40}}\b\d+k notes",
    re.IGNORECASE,
)
#: A design document by its number ("seed 002's retrieval").
DESIGN_DOCUMENT = re.compile(r"\bseeds? \d{3}\b", re.IGNORECASE)


def texts(source: str) -> Iterator[tuple[int, str]]:
    """The comments and docstrings of ``source``, each with its line, whitespace folded."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            yield node.lineno, " ".join(node.value.value.split())


def offences(source: str) -> list[str]:
    """Each measured figure or design-document name in ``source``'s comments and docstrings."""
    return [
        f"{line}: {match.group(0)}"
        for line, text in texts(source)
        for pattern in (MEASURED, DESIGN_DOCUMENT)
        for match in pattern.finditer(text)
    ]


def test_comments_carry_no_measured_figure_nor_design_document() -> None:
    """No comment or docstring of ``vivy/`` tells a measurement or names a seed document."""
    found = {
        str(path.relative_to(ROOT)): offences(path.read_text())
        for path in sorted(ROOT.rglob("*.py"))
    }
    assert {path: lines for path, lines in found.items() if lines} == {}


def test_the_check_finds_what_it_is_for() -> None:
    """The patterns catch the kinds of sentence they are meant for, and pass limits and
    settings that only name a size."""
    caught = '''
# a query embedded 8 % faster so
x = 1  # the index took 111 MB
def f() -> None:
    """The model takes 41 MB of memory instead of 155; seed 002's retrieval."""
# psycopg would hold 150 MB of float vectors for a guild of 100k notes
'''
    assert len(offences(caught)) == 5
    passed = """
# request heads over 64 KiB get 400, targets over 8 KiB 414
# each merge step writes 4 MB at SQLite's 4 KiB pages
x = 1  # latency buckets, 50 ms to 2 min
"""
    assert offences(passed) == []
