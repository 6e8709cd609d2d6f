"""Builds the native core (models._native) with pybind11 and ships presets/ and data/ in the wheel.

Release flags and no -march=native: the same wheel must run on every node of a
cluster whatever its CPU generation (x86-64 baseline, SSE2).  Set
ZEROCHESS_NATIVE_SANITIZE=1 to build with AddressSanitizer and UBSan (see the
README's section on the native core), ZEROCHESS_NATIVE_WERROR=1 to turn
warnings into errors (`make test` does: the core compiles clean under -Wall
-Wextra).
"""

from __future__ import annotations

import os
import shutil
from glob import glob
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("presets", "data")  # pipeline/resources.py's SHIPPED_FOLDERS
RECIPE = "params.yaml"  # pipeline/resources.py's RECIPE_FILE


class build_py_with_shipped(build_py):
    """Copies presets/, data/ and params.yaml into the built package as
    pipeline/_shipped/ (a wheel's copy of them)."""

    def run(self) -> None:
        super().run()
        shipped = Path(self.build_lib) / "pipeline" / "_shipped"
        for name in SHIPPED:
            shutil.rmtree(shipped / name, ignore_errors=True)
            shutil.copytree(name, shipped / name, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        shutil.copyfile(RECIPE, shipped / RECIPE)

ParallelCompile("ZEROCHESS_BUILD_JOBS", default=2).install()

compile_args = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-Wall", "-Wextra"]
link_args: list[str] = ["-pthread"]
if os.environ.get("ZEROCHESS_NATIVE_SANITIZE"):
    sanitize = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]
    compile_args = ["-O1", "-ffp-contract=off", *sanitize]
    link_args += sanitize
if os.environ.get("ZEROCHESS_NATIVE_WERROR") == "1":
    compile_args.append("-Werror")

setup(
    ext_modules=[
        Pybind11Extension(
            "models._native",
            sorted(glob("models/native/*.cpp")),
            include_dirs=["models/native"],
            cxx_std=17,
            extra_compile_args=["-pthread", *compile_args],
            extra_link_args=link_args,
        )
    ],
    cmdclass={"build_ext": build_ext, "build_py": build_py_with_shipped},
)
