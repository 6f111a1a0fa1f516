"""docs/benchmarks.md stays readable: the request figure first, one unbroken table of current figures, live links."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


def _sections() -> list[tuple[str, list[str]]]:
    """The page's `## ` sections: each heading and its lines (up to the next `#` or `##` heading)."""
    sections: list[tuple[str, list[str]]] = []
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            sections.append((line[3:], []))
        elif line.startswith("# ") and sections:
            sections.append((line[2:], []))
        elif sections:
            sections[-1][1].append(line)
    return sections


def _slug(heading: str) -> str:
    # GitHub's anchors: lower case, punctuation dropped, spaces to hyphens.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_page_opens_with_the_request_cost_table_and_its_command() -> None:
    heading, lines = _sections()[0]
    assert heading.startswith("A memory request beside a bare one")
    text = "\n".join(lines)
    assert "python -m benchmarks.request_cost --backend mariadb" in text
    assert "python -m benchmarks.request_cost --backend sqlite" in text
    assert any(line.startswith("| HTTP list (20) p50 / `/healthz` p50") for line in lines)
    assert _sections()[1][0] == "Current figures"


def test_the_current_figures_are_one_table_of_four_columns() -> None:
    lines = dict(_sections())["Current figures"]
    rows = [n for n, line in enumerate(lines) if line.startswith("|")]
    # No blank line inside: a Markdown table ends at the first one, and the rows after it render as text.
    assert rows == list(range(rows[0], rows[-1] + 1))
    cells = [lines[n].strip("|").count("|") + 1 for n in rows]
    assert set(cells) == {4}, [lines[n][:60] for n, count in zip(rows, cells, strict=True) if count != 4]
    assert len(rows) > 10


def test_every_link_inside_the_page_names_one_of_its_headings() -> None:
    text = PAGE.read_text()
    anchors = {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}
    linked = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert linked - anchors == set()
