"""The layers of docs/architecture.md, read from the imports: models <- pipeline <- actors <- zerochess.

An import of a higher layer anywhere in a file (inside a function too; blocks
under ``if TYPE_CHECKING:`` aside) fails, and so does a source file over 600 lines.
``pipeline/__main__.py`` (``python -m pipeline``, the CLI under its older name
that dvc.yaml's stages use) belongs to the top layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import ROOT

LAYERS = {"models": 0, "pipeline": 1, "actors": 2, "zerochess": 3}
TOP_LAYER_FILES = {Path("pipeline/__main__.py")}
MAX_LINES = 600


def layer_of_file(relative: Path) -> int:
    return LAYERS["zerochess"] if relative in TOP_LAYER_FILES else LAYERS[relative.parts[0]]


def imported_packages(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, top-level package)`` of every absolute import outside TYPE_CHECKING blocks."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def source_files() -> list[Path]:
    return sorted(path.relative_to(ROOT) for package in LAYERS for path in (ROOT / package).rglob("*.py"))


def test_no_import_climbs_the_layers() -> None:
    climbs = []
    for relative in source_files():
        own = layer_of_file(relative)
        tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"), str(relative))
        for line, package in imported_packages(tree):
            if LAYERS.get(package, -1) > own:
                climbs.append(f"{relative}:{line} imports {package}")
    assert climbs == []


@pytest.mark.parametrize("folder", [*LAYERS, "bench", "experiments"])
def test_no_source_file_is_over_600_lines(folder: str) -> None:
    long = [f"{path.relative_to(ROOT)}: {count}" for path in sorted((ROOT / folder).rglob("*.py"))
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]  # fmt: skip
    assert long == []


def test_the_checker_sees_a_climb() -> None:
    tree = ast.parse("import os\nfrom actors.runtime import init_ray\ndef f():\n    import zerochess.cli\n")
    assert imported_packages(tree) == [(1, "os"), (2, "actors"), (4, "zerochess")]
