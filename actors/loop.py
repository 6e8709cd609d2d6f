"""The whole AlphaZero loop: generation after generation of self-play (Ray
actors) -> training (Lightning, on the replay window) -> gating (Ray matches).

Run folder ``OUT``:

* ``ledger.jsonl`` — append-only, one line per finished stage
  (``{"generation", "stage", ...}``); a rerun skips what it lists, so killing
  the loop anywhere and starting it again continues from the last finished
  stage (self-play tasks whose shard exists are skipped too, training resumes
  from its checkpoint);
* ``games.jsonl`` — append-only, one line per finished self-play task with the
  ids of its games (``{"generation", "stage": "games", "task", "games"}``);
  every id in it is in exactly one valid shard;
* ``shards/`` — every generation's self-play shards (the replay window's source).
  Before a generation trains, each of its shards is read and validated: a bad
  one is moved to ``shards/quarantine/`` (with a ``.reason.txt``) and its task
  is played again (same task id, same seed), so no finished game is dropped;
* ``gen0000/net.pt`` — the random initial network; ``genNNNN/train/`` the
  training run of generation N (``net.pt`` inside), ``genNNNN/gate/`` its gate,
  ``genNNNN/measure/`` the games of its learning measure (``gating.measure``:
  a ledger stage ``measure``, generation 0's too, in the status line, MLflow
  and the lower panel of ``elo.png``);
* ``best.txt`` — path of the current best network;
* ``metrics.json`` — per-generation figures (a DVC metrics file);
* ``mlflow.db`` — the MLflow store (unless ``MLFLOW_TRACKING_URI`` is set):
  one parent run per pipeline run, a nested run per generation (self-play
  stats, final losses, gate results, PGNs), the training runs nested under
  their generation, and the promoted networks as versions of the registered
  model ``run.model_name`` with the alias ``champion`` on the latest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.evaluation import run_tournament
from actors.selfplay import run_selfplay
from pipeline.atomic import atomic_write
from pipeline.checkpoint import load_net
from pipeline.config import Config
from pipeline.evaluation.gating import run_gate, run_measure
from pipeline.evaluation.measure import PREFIX as MEASURE_PREFIX
from pipeline.evaluation.measure import measure_text
from pipeline.loop.budget import RunClock, spent_before
from pipeline.loop.ledger import GAMES_FILE, Ledger, write_best
from pipeline.loop.records import GenerationSummary, MeasureEntry, SelfPlayEntry, TrainEntry
from pipeline.loop.retention import retain_generation
from pipeline.loop.shards import check_shards, record_games
from pipeline.loop.start import initial_best, open_run, runs_ended_on_error
from pipeline.loop.text import gate_metrics, status_line
from pipeline.loop.tracker import Tracker
from pipeline.loop_plots import elo_figure
from pipeline.status import RunStatus, StatusBoard, TrainingStatus

log = logging.getLogger(__name__)

REGENERATE_ATTEMPTS = 3


def run_pipeline(
    config: Config,
    out: str | Path,
    *,
    init_net: str | None = None,
    on_event: Callable[[str], None] | None = None,
    board: StatusBoard | None = None,
    on_report: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run ``config.run.generations`` generations into ``out``, or until
    ``config.run.hours`` are spent, whichever comes first (resumable; a
    finished run resumed with a larger count or budget goes on).

    ``init_net`` (e.g. a supervised ``zerochess pretrain`` export) replaces the
    random generation-0 network; it must have ``config.net``'s architecture.
    ``board`` (a :class:`pipeline.status.StatusBoard`) gets the live figures.
    ``on_event`` gets each stage's progress line, ``on_report`` (default:
    ``on_event``) the report: generation 0's measure, then one line a
    generation, those a resumed run finished before included.
    On an error or an interrupt the MLflow runs it opened are ended (FAILED,
    KILLED), so none stays RUNNING.  Returns the generations' summaries
    (``generations``), the ``best`` net, the MLflow store (``mlflow``), its
    ``experiment_id``, the ``parent_run`` and generation 0's measure
    (``measure_gen0``)."""
    out, ledger, tracker = open_run(config, out, init_net)
    board = board or StatusBoard(RunStatus(str(out), config.run.generations), live=False)
    with runs_ended_on_error(tracker):
        return SyncLoop(config, out, ledger, tracker, board, on_event, on_report).run(init_net)


class SyncLoop:
    """The generations of :func:`run_pipeline` still to run (MLflow runs open):
    each stage runs once, its ledger line says it is done."""

    def __init__(self, config: Config, out: Path, ledger: Ledger, tracker: Tracker, board: StatusBoard,
                 on_event: Callable[[str], None] | None,
                 on_report: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.config, self.out, self.ledger, self.tracker, self.board = config, out, ledger, tracker, board
        self.emit = on_event or (lambda text: log.info("%s", text))
        self.tell = on_report or self.emit
        self.games = Ledger(out / GAMES_FILE)
        self.shards = config.run.shards or str(out / "shards")
        self.clock = RunClock(config.run.hours, spent_before(ledger.entries))

    def say(self, text: str) -> None:
        """A stage's progress line."""
        self.board.note(text)
        self.emit(text)

    def report(self, text: str) -> None:
        """A line of the run's report (the lines the README shows for make demo)."""
        self.board.note(text)
        self.tell(text)

    def run(self, init_net: str | None) -> dict[str, Any]:
        config, ledger, tracker = self.config, self.ledger, self.tracker
        best = initial_best(config, self.out, ledger, tracker, init_net)
        self.board.update(best=best, mlflow=tracker.uri, max_steps=config.train.max_steps,
                          deadline=self.clock.deadline(), budget_s=self.clock.budget_s)  # fmt: skip
        gen0 = ledger.find(0, "init")["net"]  # type: ignore[index]
        baseline = self.measure(0, gen0, gen0)
        if baseline:
            self.report(f"generation 0 (random net): {measure_text(baseline)}")
        history: list[dict[str, Any]] = [e["summary"] for e in ledger.entries if e["stage"] == "generation"]
        latest = best  # training continues from the newest trained net; self-play uses the best
        for generation in range(1, config.run.generation_limit + 1):
            finished = ledger.find(generation, "generation")
            if finished is not None:
                best = finished["best"]
                latest = ledger.find(generation, "train")["net"]  # type: ignore[index]
                self.report(status_line(finished["summary"]))
                continue
            if self.clock.spent():
                self.report(budget_line(config.run.hours, generation - 1, self.clock.elapsed_s()))
                break
            summary, best, latest = self.generation(generation, best, latest, gen0, baseline)
            history.append(summary)
            _write_metrics(self.out, history, baseline)
            self.report(status_line(summary))
        _plot(self.out, history, tracker, baseline)
        tracker.finish(tracker.parent_id)
        self.board.update(stage="finished")
        return {"generations": history, "best": best, "mlflow": tracker.uri, "parent_run": tracker.parent_id,
                "experiment_id": tracker.experiment_id, "measure_gen0": baseline}  # fmt: skip

    def generation(self, generation: int, best: str, latest: str, gen0: str,
                   baseline: dict[str, float]) -> tuple[dict[str, Any], str, str]:  # fmt: skip
        """Self-play with ``best``, training from ``latest``, measure, gate;
        returns the generation's summary, the best net after its gate and the
        net it trained."""
        config, ledger, tracker = self.config, self.ledger, self.tracker
        started = ledger.find(generation, "start")
        self.board.update(generation=generation, stage="self-play", games_done=0, step=0,
                          games_target=config.run.games_per_generation)  # fmt: skip
        run_id = tracker.generation_run(generation, started["run_id"] if started else None)
        if started is None:
            ledger.append({"generation": generation, "stage": "start", "run_id": run_id})
        summary = GenerationSummary(generation)
        selfplay = self.selfplay(generation, best, run_id)
        tracker.log_metrics(run_id, {"selfplay/generation": generation,
                                     **{f"selfplay/{k}": v for k, v in selfplay.figures.items()}},
                            step=generation)  # fmt: skip
        summary.selfplay = selfplay.figures
        trained = self.train(generation, best, latest, run_id)
        retain_generation(config, self.out, self.shards, self.games, generation, self.say)  # run.retain_positions
        self.board.update(losses=trained.losses(), step=trained.steps)
        tracker.log_metrics(run_id, trained.losses(), step=generation)
        summary.train = trained.metrics
        summary.measure = self.measure(generation, trained.net, gen0, run_id=run_id, baseline=baseline)
        gated = self.gate(generation, trained.net, best, run_id)
        if gated["promote"]:
            best = trained.net
            write_best(self.out, best)
        summary.gate = gate_metrics(gated)
        _show_gate(self.board, gated, summary.gate, best)
        tracker.log_metrics(run_id, summary.gate, step=generation)
        tracker.finish(run_id)
        # The parent run carries the per-generation curve too (step = generation),
        # so two pipeline runs compare side by side in mlflow ui.
        tracker.log_metrics(tracker.parent_id, {**trained.losses(), **summary.gate}, step=generation)
        document = summary.as_dict()
        ledger.append({"generation": generation, "stage": "generation", "best": best, "summary": document,
                       **self.clock.stamp()})  # fmt: skip
        return document, best, trained.net

    def selfplay(self, generation: int, best: str, run_id: str) -> SelfPlayEntry:
        """The generation's self-play with ``best`` (once)."""
        entry = self.ledger.find(generation, "selfplay")
        if entry is not None:
            return SelfPlayEntry.from_entry(entry)
        games = self.config.run.games_per_generation
        self.say(f"generation {generation}: self-play of {games} games")
        report = run_selfplay(self.config, self.shards, games, net=load_net(best), generation=generation,
                              mate_rates=mate_rates(self.ledger),
                              on_task=_both(record_games(self.games, generation), _selfplay_progress(self.board)))  # fmt: skip
        done = SelfPlayEntry(generation, report.summary())
        self.ledger.append(done.as_entry())
        self.tracker.set_tags(run_id, {"zerochess.selfplay_inference": report.inference()})
        self.board.update(inference=f"self-play {report.inference()}")
        return done

    def train(self, generation: int, best: str, latest: str, run_id: str) -> TrainEntry:
        """The generation's training from ``latest`` (once; resumes from its checkpoint)."""
        from pipeline.training.trainer import train

        entry = self.ledger.find(generation, "train")
        if entry is not None:
            return TrainEntry.from_entry(entry)
        # ``best`` is still the network this generation's self-play used.
        ensure_shards(self.config, self.shards, generation, best, self.games, self.ledger, self.say)
        train_dir = self.out / f"gen{generation:04d}" / "train"
        resumed_from = _checkpoint_step(train_dir)
        if resumed_from is None:
            self.say(f"generation {generation}: training {self.config.train.max_steps} steps")
        else:
            self.say(f"generation {generation}: training resumes from its checkpoint at step {resumed_from}")
        self.board.update(stage="training")
        result = train(
            self.config, self.shards, train_dir, init_net=latest, resume=True,
            tracking_uri=self.tracker.uri, progress_bar=False, tags={"mlflow.parentRunId": run_id},
            callbacks=[TrainingStatus(self.board)], step_offset=self.steps_before(generation),
        )  # fmt: skip
        self.board.update(window_positions=result.positions)
        done = TrainEntry(generation, result.net_path, result.steps, resumed_from, result.metrics)
        self.ledger.append(done.as_entry())
        return done

    def steps_before(self, generation: int) -> int:
        """The training steps of the generations before ``generation`` (their
        ledger lines): where its training run's MLflow steps start."""
        return sum(entry["steps"] for entry in self.ledger.entries
                   if entry.get("stage") == "train" and entry.get("generation", generation) < generation)  # fmt: skip

    def gate(self, generation: int, candidate: str, best: str, run_id: str) -> dict[str, Any]:
        """The generation's gate of ``candidate`` against ``best`` (once): its
        ledger line (the decision, and the model version of a promoted net)."""
        gated = self.ledger.find(generation, "gate")
        if gated is not None:
            return gated
        self.say(f"generation {generation}: gate")
        self.board.update(stage="gating")
        gate_dir = self.out / f"gen{generation:04d}" / "gate"
        decision = run_gate(self.config, candidate, best, gate_dir, on_pair=_gate_progress(self.board),
                            play=run_tournament)  # fmt: skip
        gated = {"generation": generation, "stage": "gate", **decision.as_dict()}
        for pgn in sorted(gate_dir.glob("*.pgn")):
            self.tracker.client.log_artifact(run_id, str(pgn), "pgn")
        if decision.promote:
            gated["model_version"] = self.tracker.register(run_id, candidate)
        self.ledger.append(gated)
        return gated

    def measure(self, generation: int, net: str, gen0: str, *, run_id: str | None = None,
                baseline: dict[str, float] | None = None) -> dict[str, float]:  # fmt: skip
        """Generation ``generation``'s learning measure (``gating.measure``), played
        once (a ledger stage ``measure``), logged to its MLflow run and to the
        parent run at step = generation, and shown on the board; ``{}`` when off."""
        config = self.config
        if config.gating.measure == "none":
            return {}
        entry = self.ledger.find(generation, "measure")
        if entry is None:
            self.say(f"generation {generation}: measure ({config.gating.measure}, {config.gating.measure_games} games)")
            self.board.update(stage="measuring")
            figures = run_measure(config, net, gen0, self.out / f"gen{generation:04d}" / "measure", play=run_tournament)
            entry = MeasureEntry(generation, net, figures).as_entry()
            self.ledger.append(entry)
            for run in [run_id] if run_id else []:
                self.tracker.log_metrics(run, figures, step=generation)
            self.tracker.log_metrics(self.tracker.parent_id, figures, step=generation)
        figures = entry["figures"]
        shown = f"generation {generation}: {measure_text(figures)}"
        if baseline and generation:
            shown += f"   (generation 0: {measure_text(baseline)})"
        self.board.update(learning=shown)
        return figures


def budget_line(hours: float, generations: int, elapsed_s: float) -> str:
    """The report's line when the time budget ends a run."""
    return (f"time budget of {hours:g} h spent ({elapsed_s / 60:.1f} min) after generation {generations}: "
            f"the run ends here (run it again with a larger --hours to go on)")


def mate_rates(ledger: Ledger) -> dict[int, float]:
    """The measured mate rate of each generation's network so far (the
    ``measure`` stages of ``gating.measure: mate_rate``), for a curriculum
    stage that ends on one."""
    key = MEASURE_PREFIX + "mate_rate"
    return {entry["generation"]: entry["figures"][key] for entry in ledger.entries
            if entry.get("stage") == "measure" and key in entry.get("figures", {})}  # fmt: skip


def _both(*callbacks: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def on_task(summary: dict[str, Any]) -> None:
        for callback in callbacks:
            callback(summary)

    return on_task


def ensure_shards(
    config: Config, shards: str, generation: int, net: str, games: Ledger, ledger: Ledger,
    say: Callable[[str], None],
) -> None:  # fmt: skip
    """Make every shard of ``generation`` valid before it trains: quarantine the
    bad ones (:func:`check_shards`) and play their tasks again with ``net``
    (``run_selfplay`` plays just the tasks whose shard is missing, with the
    same task ids and seeds)."""
    for _ in range(REGENERATE_ATTEMPTS):
        redo = check_shards(config, shards, generation, games)
        if not redo:
            return
        say(f"generation {generation}: playing {len(redo)} self-play task(s) again: "
            + "; ".join(f"{task} ({reason[:200]})" for task, reason in redo.items()))  # fmt: skip
        ledger.append({"generation": generation, "stage": "regenerate", "tasks": redo})
        run_selfplay(config, shards, config.run.games_per_generation, net=load_net(net), generation=generation,
                     on_task=record_games(games, generation), mate_rates=mate_rates(ledger))  # fmt: skip
    redo = check_shards(config, shards, generation, games)
    if redo:
        raise RuntimeError(f"generation {generation}: shards still bad after {REGENERATE_ATTEMPTS} "
                           f"attempts to play them again: {redo}")  # fmt: skip


def _checkpoint_step(train_dir: Path) -> int | None:
    """The step of the training checkpoint in ``train_dir`` (None: none, or unreadable)."""
    from pipeline.training.checkpointing import read_checkpoint
    from pipeline.training.trainer import RunPaths

    path = RunPaths(train_dir).checkpoint
    if not path.exists():
        return None
    try:
        return int(read_checkpoint(path)["global_step"])
    except Exception as error:  # noqa: BLE001 - train() reports a bad checkpoint itself
        log.warning("cannot read the step of %s: %s", path, error)
        return None


def _selfplay_progress(board: StatusBoard) -> Callable[[dict[str, Any]], None]:
    """``run_selfplay``'s ``on_task``: games done and games/s of this generation."""
    import time

    started = time.monotonic()
    totals = {"games": 0, "positions": 0}

    def on_task(summary: dict[str, Any]) -> None:
        totals["games"] += int(summary.get("games", 0))
        totals["positions"] += int(summary.get("positions", 0))
        seconds = max(time.monotonic() - started, 1e-9)
        board.update(games_done=totals["games"], games_per_s=totals["games"] / seconds,
                     positions_per_s=totals["positions"] / seconds)  # fmt: skip

    return on_task


def _gate_progress(board: StatusBoard) -> Callable[[str, Any], None]:
    """``run_gate``'s ``on_pair``: the running score of the match in progress."""

    def on_pair(stage: str, report: Any) -> None:
        board.update(gate_verdict=f"playing {stage}: {len(report.games)} games")

    return on_pair


def _show_gate(board: StatusBoard, gated: dict[str, Any], metrics: dict[str, float], best: str) -> None:
    levels = [(level.get("level", f"level {i}"), level) for i, level in enumerate(gated.get("ladder", []))]
    ladder = {name: level["elo"] for name, level in levels if level.get("elo") is not None}
    scores = {name: (level["score"], level["games"]) for name, level in levels
              if level.get("score") is not None and level.get("games")}  # fmt: skip
    verdict = f"generation {gated['generation']}: {'PROMOTED' if gated['promote'] else 'rejected'} ({gated.get('reason', '')})"
    board.update(gate_verdict=verdict, elo_vs_best=metrics.get("gate/elo_vs_best"), ladder_elo=ladder,
                 ladder_scores=scores, best=best)  # fmt: skip


def _write_metrics(out: Path, history: list[dict[str, Any]], baseline: dict[str, float] | None = None) -> None:
    document: dict[str, Any] = {"generations": history, "last": history[-1] if history else {}}
    if baseline:
        document["measure_gen0"] = baseline
    with atomic_write(out / "metrics.json") as handle:
        handle.write(json.dumps(document, indent=2, default=str).encode())


def _plot(out: Path, history: list[dict[str, Any]], tracker: Tracker, baseline: dict[str, float] | None = None) -> None:
    """Elo (and the learning measure) over generations as ``elo.png``, logged to the parent run."""
    if not history:
        return
    import matplotlib.pyplot as plt

    figure = elo_figure(history, baseline)
    path = out / "elo.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    tracker.client.log_artifact(tracker.parent_id, str(path))
