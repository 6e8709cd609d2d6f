"""The native core's C++ tests (tests/native_cxx/native_tests.cpp): perft,
make/unmake and key invariants, run_searches and the self-play driver with a
fake evaluator, compiled from models/native/ without the Python bindings by
``make native-test`` (g++, -Wall -Wextra -Werror) and run."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers import ROOT


pytestmark = pytest.mark.slow  # compiles the core (about a minute on one core)


def test_native_cxx_tests_pass() -> None:
    missing = [tool for tool in ("make", "g++") if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found: the native C++ tests need them "
            "('make toolchain' installs Debian's g++)"
        )
    run = subprocess.run(
        ["make", "--no-print-directory", "native-test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    assert "native tests: all passed" in run.stdout, output[-4000:]
