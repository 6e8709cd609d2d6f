"""Where the project's shipped files are: ``presets/``, ``data/`` and the
recipe, ``params.yaml``.

In a source checkout (an editable install, or ``PYTHONPATH`` on the tree) they
are the folders at the repository's top.  A wheel carries copies of them
inside this package, under ``pipeline/_shipped/`` (``setup.py``'s
``build_py`` copies them there), so ``zerochess run --preset tiny`` and the
default opening book work from any folder after ``pip install .``.  This
module is the only one that knows either place.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "PRESETS_DIR", "RECIPE_FILE", "SHIPPED_FOLDERS", "project_file", "recipe_params", "shipped_dir"]

SHIPPED_FOLDERS = ("presets", "data")
"""Top-level folders of the repository that a wheel carries."""

RECIPE_FILE = "params.yaml"
"""The project's parameter file (the measured recipe), which a wheel carries too."""

_CHECKOUT = Path(__file__).resolve().parents[1]
_PACKAGED = Path(__file__).resolve().parent / "_shipped"


def shipped_dir(name: str) -> Path:
    """The folder ``name`` (one of :data:`SHIPPED_FOLDERS`): the checkout's, else the wheel's copy."""
    if name not in SHIPPED_FOLDERS:
        raise ValueError(f"no shipped folder {name!r}; the shipped folders are {', '.join(SHIPPED_FOLDERS)}")
    in_checkout = _CHECKOUT / name
    return in_checkout if in_checkout.is_dir() else _PACKAGED / name


PRESETS_DIR = shipped_dir("presets")
DATA_DIR = shipped_dir("data")


def project_file(path: str | Path) -> Path:
    """``path`` itself, or the shipped file of that relative path when the working
    directory has none (``data/endgames.epd`` in a preset works from any folder)."""
    relative = Path(path)
    if relative.is_absolute() or relative.exists() or not relative.parts:
        return relative
    head, *rest = relative.parts
    if head in SHIPPED_FOLDERS:
        shipped = shipped_dir(head).joinpath(*rest)
        if shipped.exists():
            return shipped
    return relative


def recipe_params() -> Path:
    """The parameter file a command reads when ``--params`` is not given:
    ``params.yaml`` of the working folder, else the project's own (the
    checkout's, else the wheel's copy)."""
    here = Path(RECIPE_FILE)
    if here.is_file():
        return here
    in_checkout = _CHECKOUT / RECIPE_FILE
    return in_checkout if in_checkout.is_file() else _PACKAGED / RECIPE_FILE
