"""Making ``models._native`` importable in a checkout that lacks it (``zerochess stage native``).

``dvc exp run --temp`` and ``--queue`` run in a temporary copy of the
committed files, without the git-ignored compiled module: it is copied from
the editable install when the native sources are the same, else built in place.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

NATIVE_SOURCES = ("setup.py", "models/native")


def native_module_name() -> str:
    """The file name of ``models._native`` for this interpreter."""
    import importlib.machinery

    return "_native" + importlib.machinery.EXTENSION_SUFFIXES[0]


def editable_source() -> Path | None:
    """The checkout the installed ``zerochess`` distribution points to (an
    editable install), or None."""
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        direct = metadata.distribution("zerochess").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    url = json.loads(direct or "{}").get("url", "")
    return Path(unquote(urlparse(url).path)) if url.startswith("file://") else None


def _same_native_sources(a: Path, b: Path) -> bool:
    def files(root: Path) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for name in NATIVE_SOURCES:
            path = root / name
            paths = sorted(path.rglob("*")) if path.is_dir() else [path]
            found.update({str(f.relative_to(root)): f.read_bytes() for f in paths if f.is_file()})
        return found

    return files(a) == files(b)


def ensure_native(root: Path, source: Path | None) -> str:
    """Make ``models._native`` importable in the checkout ``root``: "present"
    when it is there, "copied" from ``source`` (a checkout with the module
    built) when both have the same native sources, else "built" in place."""
    import shutil
    import subprocess
    import sys

    name = native_module_name()
    target = root / "models" / name
    if target.exists():
        return "present"
    built = None if source is None else source / "models" / name
    if built is not None and built.exists() and _same_native_sources(root, source):  # type: ignore[arg-type]
        temporary = target.with_name(f".{name}.copy")
        shutil.copy2(built, temporary)
        os.replace(temporary, target)
        return "copied"
    subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "-j", "2"],
        cwd=root, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return "built"

