"""How long the native core takes to build each distance-to-mate table, and
the longest mate it finds beside the published one.

    .venv/bin/python bench/tablebase.py                 # KQK KRK KBBK KBNK KQKR, 1 build each
    .venv/bin/python bench/tablebase.py --repeats 3     # the median of three builds

Each build starts from nothing (a new generator: the smaller tables a
four-piece table needs are built inside its time).  The published longest
mates (Thompson's and Nalimov's tables) are the baseline the tables must
meet: a different figure is a bug, and the script exits 1.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout this script lives in, whatever is installed

from models.tablebase import build_tables

PUBLISHED_LONGEST_MATE = {"KQvK": 10, "KRvK": 16, "KBBvK": 19, "KBNvK": 33, "KQvKR": 35}
"""Moves to mate from the longest won position with the strong side to move."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1, help="builds of each table (the median is shown)")
    parser.add_argument("--tables", default=",".join(PUBLISHED_LONGEST_MATE), help="comma-separated names")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    print(f"{'table':8} {'build s (median)':>17} {'longest mate':>13} {'published':>10}")
    wrong = 0
    for name in args.tables.split(","):
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            table = build_tables([name])[name]
            times.append(time.perf_counter() - started)
        longest = (int(table.max()) + 1) // 2
        published = PUBLISHED_LONGEST_MATE.get(name)
        wrong += published is not None and longest != published
        print(f"{name:8} {statistics.median(times):17.2f} {longest:13d} {published if published else '-':>10}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
