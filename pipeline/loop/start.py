"""How a loop run starts: its folder, ledger and MLflow tracker (with the
runs ended on an error), and its first network: generation 0, saved,
registered and recorded once; a resumed run reads its best network back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from models.net import AlphaZeroNet
from pipeline.checkpoint import load_weights, save_net
from pipeline.config import Config
from pipeline.loop.ledger import BEST_FILE, LEDGER_FILE, Ledger, write_best
from pipeline.loop.tracker import Tracker


def initial_best(config: Config, out: Path, ledger: Ledger, tracker: Tracker, init_net: str | None) -> str:
    """The best network a (resumed) run starts from; a new run first saves
    its generation-0 net (random, or ``init_net``), registers it and records it."""
    entry = ledger.find(0, "init")
    if entry is not None:
        best_file = out / BEST_FILE
        return best_file.read_text().strip() if best_file.exists() else entry["net"]
    torch.manual_seed(config.selfplay.seed)
    net = AlphaZeroNet(config.net)
    if init_net is not None:
        load_weights(net, init_net)  # another architecture: an error naming both shapes
    path = out / "gen0000" / "net.pt"
    save_net(net, path)
    run_id = tracker.generation_run(0, None)
    version = tracker.register(run_id, str(path))
    tracker.finish(run_id)
    write_best(out, str(path))
    ledger.append({"generation": 0, "stage": "init", "net": str(path), "model_version": version})
    return str(path)


def open_run(config: Config, out: str | Path, init_net: str | None) -> tuple[Path, Ledger, Tracker]:
    """The run folder ``out`` (created), its ledger and its MLflow tracker
    (the parent run, opened or resumed); ``init_net`` must load into
    ``config.net`` before MLflow records a run."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(out / LEDGER_FILE)
    if init_net is not None and ledger.find(0, "init") is None:
        load_weights(AlphaZeroNet(config.net), init_net)  # before MLflow records a run
    return out, ledger, Tracker(config, out)


@contextmanager
def runs_ended_on_error(tracker: Tracker) -> Iterator[None]:
    """On an error or an interrupt, end the MLflow runs still open (FAILED,
    KILLED), so none stays RUNNING; the error propagates."""
    try:
        yield
    except BaseException as error:
        tracker.fail_open_runs("KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise
