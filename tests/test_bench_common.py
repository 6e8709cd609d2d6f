"""``bench/common.py``: the helpers the benchmark scripts share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import ModuleType

import pytest


def test_a_number_list_reads_commas_and_spaces(bench_script: Callable[[str], ModuleType]) -> None:
    number_list = bench_script("common").number_list
    assert number_list(int, 1)("1, 2,4,") == [1, 2, 4]
    assert number_list(float, 0.0)("0,400.5") == [0.0, 400.5]


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        (int, "1,x", r"'x' in '1,x' is not a whole number"),
        (int, "2.5", r"'2.5' in '2.5' is not a whole number"),
        (int, "1,0", r"'0' in '1,0' is below 1"),
        (int, " , ", r"needs a whole number or more"),
        (float, "400,nan", r"'nan' in '400,nan' is not a finite number"),
        (float, "inf", r"'inf' in 'inf' is not a finite number"),
        (float, "-3", r"'-3' in '-3' is below 0"),
    ],
)
def test_a_bad_number_list_names_the_item(bench_script: Callable[[str], ModuleType], kind: type, text: str,
                                          message: str) -> None:
    minimum = 1 if kind is int else 0.0
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        bench_script("common").number_list(kind, minimum)(text)


@pytest.mark.parametrize(
    ("script", "argv", "flag"),
    [
        ("scale", ["--producers", "8,lots"], "--producers"),
        ("scale", ["--rate", "400,-1"], "--rate"),
        ("driver_threads", ["--threads", "1,two"], "--threads"),
        ("learning", ["--recheck", "0,ten"], "--recheck"),
    ],
)
def test_the_benches_answer_a_bad_list_with_a_usage_error(bench_script: Callable[[str], ModuleType],
                                                          capsys: pytest.CaptureFixture[str], script: str,
                                                          argv: list[str], flag: str) -> None:
    module = bench_script(script)
    entry = getattr(module, "parse", None) or module.main
    with pytest.raises(SystemExit) as stopped:
        entry(argv)
    assert stopped.value.code == 2
    assert f"argument {flag}:" in capsys.readouterr().err
