"""The results pages are drawn from committed data: ``make results`` (``experiments/results.py
pages``) gives exactly the committed pages, every data file is JSON (marked where it was
transcribed from the old README), and a table cell reads into data and writes back the same."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
DATA = ROOT / "docs" / "results" / "data"
TRANSCRIBED = "transcribed from the README table of 2026-"


def experiments_module(name: str) -> ModuleType:
    """``experiments/NAME.py``, imported as the scripts import each other (from their folder)."""
    if str(EXPERIMENTS) not in sys.path:
        sys.path.append(str(EXPERIMENTS))
    return importlib.import_module(name)


results = experiments_module("results")
cells = experiments_module("results_cells")


def test_every_results_page_is_what_its_data_make(tmp_path: Path) -> None:
    written = results.write_pages(tmp_path, plots=False)
    names = {path.name for path in written}
    assert {"frontier.md", "supervised.md", "learning-notebook.md"} <= names
    stale = [path.name for path in written
             if not results.same_file(path, results.RESULTS / path.name)]
    assert stale == [], f"stale pages under docs/results/: {', '.join(stale)}; run `make results`"


def test_every_notebook_page_is_in_the_site_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    suffix = results.TEMPLATE_SUFFIX
    names = [path.name.removesuffix(suffix) for path in results.TEMPLATES.glob(f"*{suffix}")]
    assert [name for name in names if f"results/{name}.md" not in nav] == []


def test_every_placeholder_names_a_table_and_every_table_is_shown() -> None:
    shown = set()
    for template in results.TEMPLATES.glob("*.md.in"):
        shown |= {found.groups() for found in results.PLACEHOLDER.finditer(template.read_text())}
    held = {(path.stem, table) for path in results.NOTEBOOK.glob("*.json")
            for table in json.loads(path.read_text(encoding="utf-8"))["tables"]}  # fmt: skip
    assert shown == held


@pytest.mark.parametrize("path", sorted(DATA.rglob("*.json")), ids=lambda path: path.name)
def test_every_data_file_is_json_marked_where_transcribed(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    if path.parent.name != "notebook":
        assert not (isinstance(data, dict) and data.get("transcribed")), f"{path.name}: measured"
        return
    assert data["transcribed"] is True, f"{path.name}: a notebook file is marked transcribed"
    for name, table in data["tables"].items():
        assert table["source"].startswith(TRANSCRIBED), f"{path.name}: table {name}"
        widths = {len(row) for row in table["rows"]}
        assert widths == {len(table["columns"])}, f"{path.name}: table {name}"


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("0.75 [0.69, 0.80]", {"value": 0.75, "lo": 0.69, "hi": 0.8, "decimals": 2}),
        ("+14 [\u22129, +37]", {"elo": 14, "lo": -9, "hi": 37}),
        ("0.61 [0.57, 0.65], +78 Elo", {"value": 0.61, "lo": 0.57, "hi": 0.65, "elo": 78}),
        ("**0.995 (+99 =1 \u22120)**",
         {"value": 0.995, "wins": 99, "draws": 1, "losses": 0, "bold": True}),
        ("**24** (0.80 [0.63, 0.90])",
         {"count": 24, "rate": 0.8, "lo": 0.63, "hi": 0.9, "decimals": 2, "bold": "count"}),
        ("41/97 (0.42)", {"count": 41, "of": 97, "rate": 0.42}),
        ("18 / **22**", {"list": [18, {"value": 22, "bold": True}], "sep": " / "}),
        ("124,283", {"value": 124283, "thousands": True}),
        ("11\u201317", {"min": 11, "max": 17}),
        ("0.0", 0.0),
        ("1", 1),
        ("0 (random net)", "0 (random net)"),
        ("\u2013", "\u2013"),
        ("", ""),
    ],
)  # fmt: skip
def test_a_cell_reads_into_data_and_writes_back_the_same(text: str, cell: object) -> None:
    assert cells.parse_cell(text) == cell
    assert cells.format_cell(cell) == text


def test_a_cell_of_no_known_kind_is_an_error_naming_its_keys() -> None:
    with pytest.raises(cells.CellError, match="value"):
        cells.format_cell({"value": 1, "wins": 2})
