"""An in-process UCI engine for the tests (uniform evaluator): a transcript
that collects its output lines and lets a test wait for one, a session that
sends lines and waits for ``bestmove``, and the parse of the final ``info``
block."""

from __future__ import annotations

import threading
import time

import chess

from models.evaluation import UniformEvaluator
from models.search_config import SearchConfig
from pipeline.uci.engine import UciEngine, UciWriter
from pipeline.uci.player import NetPlayer

WAIT_S = 30.0  # generous: the machine is shared


class Transcript:
    """A text stream that collects whole lines and lets a test wait for one."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._partial = ""
        self._changed = threading.Condition()

    def write(self, text: str) -> int:
        with self._changed:
            self._partial += text
            *complete, self._partial = self._partial.split("\n")
            self.lines.extend(complete)
            self._changed.notify_all()
        return len(text)

    def flush(self) -> None:
        pass

    def wait_for(self, prefix: str, after: int = 0, timeout: float = WAIT_S) -> str:
        """The first line from index ``after`` that starts with ``prefix``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines[after:]:
                    if line.startswith(prefix):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no line starting with {prefix!r} in {self.lines[after:]}"
                    )
                self._changed.wait(left)

    def since(self, after: int) -> list[str]:
        with self._changed:
            return list(self.lines[after:])


class Session:
    """An engine and its output."""

    def __init__(self, **config: object) -> None:
        self.out = Transcript()
        self.threads: list[int] = []
        player = NetPlayer(UniformEvaluator(), SearchConfig(**config))  # type: ignore[arg-type]
        self.engine = UciEngine(
            player, UciWriter(self.out), set_threads=self.threads.append, threads=1
        )

    def send(self, *lines: str) -> int:
        """Send lines; return the transcript index before them."""
        mark = len(self.out.lines)
        for line in lines:
            assert self.engine.handle(line)
        return mark

    def go(self, *lines: str) -> tuple[chess.Move | None, list[str]]:
        """Send lines ending with a ``go``; wait for ``bestmove``; return it and the output."""
        mark = self.send(*lines)
        best = self.out.wait_for("bestmove", mark).split()[1]
        output = self.out.since(mark)
        return (None if best == "(none)" else chess.Move.from_uci(best)), output


def final_infos(output: list[str]) -> list[dict[str, str]]:
    """The last block of ``info ... pv`` lines before ``bestmove``, as key -> value."""
    infos = [line for line in output if line.startswith("info depth")]
    parsed = []
    for line in infos:
        tokens = line.split()[1:]
        fields: dict[str, str] = {}
        while tokens:
            key = tokens.pop(0)
            if key == "pv":
                fields[key], tokens = " ".join(tokens), []
            elif key == "score":
                fields[key] = f"{tokens.pop(0)} {tokens.pop(0)}"
            else:
                fields[key] = tokens.pop(0)
        parsed.append(fields)
    last_first = max(i for i, fields in enumerate(parsed) if fields["multipv"] == "1")
    return parsed[last_first:]
