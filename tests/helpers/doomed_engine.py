"""A Stockfish stand-in for ``tests/test_chaos.py``: the first engine started
while the ladder of one generation's gate runs is SIGKILLed at a chosen
``go``; every other start is the real Stockfish (``exec``).

The fault fires inside the engine at a fixed point of the conversation, so it
cannot be missed by a watcher that polls too slowly, and every start is
appended to a log the test reads once the run has finished.

Settings, from the environment:
    ZC_DOOMED_ENGINE: the real Stockfish binary
    ZC_DOOMED_LEDGER: the run's ``ledger.jsonl``
    ZC_DOOMED_GENERATION: the generation whose gate loses its engine
    ZC_DOOMED_AFTER_GO: the engine dies on receiving this ``go`` (1 = the first)
    ZC_DOOMED_LOG: JSON lines, one per start (``pid``, ``doomed``) and one per kill
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from pipeline.loop.ledger import Ledger


def _gating(ledger: Path, generation: int) -> bool:
    """The ledger records the generation's training, and not yet its gate."""
    stages = Ledger(ledger)
    return stages.find(generation, "train") is not None and stages.find(generation, "gate") is None


def _claim(log: Path) -> bool:
    """True for the one start that takes the doom (a marker made atomically)."""
    try:
        os.close(os.open(f"{log}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _record(log: Path, **entry: object) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _die_at_go(engine: str, after_go: int, log: Path) -> None:
    """Run the engine as a child (its stdout is ours), pass our input on line
    by line, and SIGKILL it and ourselves on the ``after_go``-th ``go``."""
    child = subprocess.Popen([engine], stdin=subprocess.PIPE, text=True, bufsize=1)
    assert child.stdin is not None
    seen = 0
    for line in sys.stdin:
        if line.split()[:1] == ["go"]:
            seen += 1
            if seen == after_go:
                _record(log, killed=os.getpid(), engine=child.pid, go=seen)
                child.kill()
                child.wait()
                os.kill(os.getpid(), signal.SIGKILL)
        child.stdin.write(line)
    child.stdin.close()
    child.wait()


def main() -> None:
    engine = os.environ["ZC_DOOMED_ENGINE"]
    log = Path(os.environ["ZC_DOOMED_LOG"])
    doomed = _gating(Path(os.environ["ZC_DOOMED_LEDGER"]), int(os.environ["ZC_DOOMED_GENERATION"])) and _claim(log)
    _record(log, pid=os.getpid(), doomed=doomed)
    if not doomed:
        os.execv(engine, [engine])
    _die_at_go(engine, int(os.environ["ZC_DOOMED_AFTER_GO"]), log)


if __name__ == "__main__":
    main()
