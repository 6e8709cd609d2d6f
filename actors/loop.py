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
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from actors.gate import run_gate, run_measure
from actors.selfplay import plan_tasks, run_selfplay
from models.net import AlphaZeroNet
from pipeline.atomic import atomic_write
from pipeline.checkpoint import load_net, load_weights, save_net
from pipeline.config import Config, flatten
from pipeline.evaluation.measure import PREFIX as MEASURE_PREFIX
from pipeline.evaluation.measure import measure_text
from pipeline.loop_plots import elo_figure
from pipeline.shards import ShardError, quarantine_shard, read_shard, remove_stale_temps, shard_exists, shard_name
from pipeline.status import RunStatus, StatusBoard, TrainingStatus, elo_text
from pipeline.training.tracking import EXPERIMENT_KIND_TAG, TRAINING_KIND, mark_training_experiment

log = logging.getLogger(__name__)

PARENT_RUN_FILE = "pipeline.json"
GAMES_FILE = "games.jsonl"
REGENERATE_ATTEMPTS = 3


class Ledger:
    """Append-only record of finished stages (one JSON object a line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        if path.exists():
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    self.entries.append(json.loads(line))
                except json.JSONDecodeError:
                    # Only the last line can be torn (a kill mid-append): drop it.
                    log.warning("%s:%d: unreadable ledger line dropped", path, number)

    def find(self, generation: int, stage: str) -> dict[str, Any] | None:
        for entry in self.entries:
            if entry["generation"] == generation and entry["stage"] == stage:
                return entry
        return None

    def append(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, default=str) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.entries.append(entry)


class Tracker:
    """MLflow bookkeeping of a pipeline run (parent, generations, registry)."""

    def __init__(self, config: Config, out: Path) -> None:
        import mlflow
        from mlflow.tracking import MlflowClient

        self.uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{out.resolve()}/mlflow.db"
        mlflow.set_tracking_uri(self.uri)
        self.client = MlflowClient(self.uri)
        experiment = self.client.get_experiment_by_name(config.train.experiment)
        self.experiment_id = (
            experiment.experiment_id
            if experiment is not None
            else self.client.create_experiment(
                config.train.experiment, artifact_location=(out / "mlartifacts").resolve().as_uri(),
                tags={EXPERIMENT_KIND_TAG: TRAINING_KIND},
            )
        )
        mark_training_experiment(self.client, self.experiment_id)
        self.model_name = config.run.model_name
        info_path = out / PARENT_RUN_FILE
        if info_path.exists():
            self.parent_id = json.loads(info_path.read_text())["run_id"]
            self.client.update_run(self.parent_id, status="RUNNING")
        else:
            run = self.client.create_run(self.experiment_id, run_name=f"pipeline {out.resolve().name}")
            self.parent_id = run.info.run_id
            self._log_params(self.parent_id, config)
            with atomic_write(info_path) as handle:
                handle.write(json.dumps({"run_id": self.parent_id, "tracking_uri": self.uri}).encode())

    def _log_params(self, run_id: str, config: Config) -> None:
        from mlflow.entities import Param

        params = [Param(key, str(value)[:500]) for key, value in flatten(config).items()]
        for start in range(0, len(params), 100):
            self.client.log_batch(run_id, params=params[start : start + 100])

    def generation_run(self, generation: int, existing: str | None) -> str:
        if existing:
            return existing
        run = self.client.create_run(
            self.experiment_id, run_name=f"gen{generation:04d}", tags={"mlflow.parentRunId": self.parent_id}
        )
        return run.info.run_id

    def set_tags(self, run_id: str, tags: dict[str, str]) -> None:
        for key, value in tags.items():
            self.client.set_tag(run_id, key, value)

    def log_metrics(self, run_id: str, metrics: dict[str, float], step: int = 0) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step) for k, v in metrics.items() if isinstance(v, (int, float))]
        if items:
            self.client.log_batch(run_id, metrics=items)

    def register(self, run_id: str, net_path: str) -> str:
        """Log ``net_path`` under ``run_id`` and make it the ``champion`` version."""
        self.client.log_artifact(run_id, net_path, "net")
        artifact_uri = self.client.get_run(run_id).info.artifact_uri
        try:
            self.client.get_registered_model(self.model_name)
        except Exception:  # noqa: BLE001 - MLflow raises a generic error when absent
            self.client.create_registered_model(self.model_name)
        version = self.client.create_model_version(self.model_name, f"{artifact_uri}/net", run_id=run_id)
        self.client.set_registered_model_alias(self.model_name, "champion", version.version)
        return str(version.version)

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        self.client.set_terminated(run_id, status)

    def fail_open_runs(self, status: str = "FAILED") -> None:
        """End the parent run and its generation runs still RUNNING (after an
        error or an interrupt: a rerun resumes and marks them RUNNING again)."""
        from mlflow.entities import ViewType

        try:
            running = self.client.search_runs([self.experiment_id], "attributes.status = 'RUNNING'",
                                              run_view_type=ViewType.ACTIVE_ONLY, max_results=1000)  # fmt: skip
            ours = {self.parent_id}  # the parent, its generations and their training runs
            for _ in range(3):
                ours |= {run.info.run_id for run in running if run.data.tags.get("mlflow.parentRunId") in ours}
            for run in running:
                if run.info.run_id in ours:
                    self.client.set_terminated(run.info.run_id, status)
        except Exception as error:  # noqa: BLE001 - the original error matters more
            log.warning("could not end the MLflow runs of %s: %s", self.parent_id, error)


def run_pipeline(
    config: Config,
    out: str | Path,
    *,
    init_net: str | None = None,
    on_event: Callable[[str], None] | None = None,
    board: StatusBoard | None = None,
) -> dict[str, Any]:
    """Run ``config.run.generations`` generations into ``out`` (resumable).

    ``init_net`` (e.g. a supervised ``zerochess pretrain`` export) replaces the
    random generation-0 network; it must have ``config.net``'s architecture.
    ``board`` (a :class:`pipeline.status.StatusBoard`) gets the live figures.
    On an error or an interrupt the MLflow runs it opened are ended (FAILED,
    KILLED), so none stays RUNNING."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    board = board or StatusBoard(RunStatus(str(out), config.run.generations), live=False)
    emit = on_event or (lambda text: log.info("%s", text))

    def say(text: str) -> None:
        board.note(text)
        emit(text)

    ledger = Ledger(out / "ledger.jsonl")
    if init_net is not None and ledger.find(0, "init") is None:
        load_weights(AlphaZeroNet(config.net), init_net)  # before MLflow records a run
    tracker = Tracker(config, out)
    try:
        return _generations(config, out, ledger, tracker, init_net, board, say)
    except BaseException as error:
        tracker.fail_open_runs("KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise


def _generations(
    config: Config,
    out: Path,
    ledger: Ledger,
    tracker: Tracker,
    init_net: str | None,
    board: StatusBoard,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The generations of :func:`run_pipeline` still to run (MLflow runs open)."""
    from pipeline.training.trainer import train

    games = Ledger(out / GAMES_FILE)
    best = _initial_best(config, out, ledger, tracker, init_net)
    board.update(best=best, mlflow=tracker.uri, max_steps=config.train.max_steps)
    gen0 = ledger.find(0, "init")["net"]  # type: ignore[index]
    baseline = _measure(config, out, ledger, tracker, 0, gen0, gen0, board, say)
    shards = config.run.shards or str(out / "shards")
    history: list[dict[str, Any]] = [e["summary"] for e in ledger.entries if e["stage"] == "generation"]
    latest = best  # training continues from the newest trained net; self-play uses the best
    for generation in range(1, config.run.generations + 1):
        finished = ledger.find(generation, "generation")
        if finished is not None:
            best = finished["best"]
            latest = ledger.find(generation, "train")["net"]  # type: ignore[index]
            continue
        started = ledger.find(generation, "start")
        board.update(generation=generation, stage="self-play", games_done=0, step=0,
                     games_target=config.run.games_per_generation)  # fmt: skip
        run_id = tracker.generation_run(generation, started["run_id"] if started else None)
        if started is None:
            ledger.append({"generation": generation, "stage": "start", "run_id": run_id})
        summary: dict[str, Any] = {"generation": generation}

        selfplay = ledger.find(generation, "selfplay")
        if selfplay is None:
            say(f"generation {generation}: self-play of {config.run.games_per_generation} games")
            report = run_selfplay(config, shards, config.run.games_per_generation, net=load_net(best),
                                  generation=generation, mate_rates=mate_rates(ledger),
                                  on_task=_both(_record_games(games, generation), _selfplay_progress(board)))  # fmt: skip
            selfplay = {"generation": generation, "stage": "selfplay", **report.summary()}
            ledger.append(selfplay)
            tracker.set_tags(run_id, {"zerochess.selfplay_inference": report.inference()})
            board.update(inference=f"self-play {report.inference()}")
        tracker.log_metrics(run_id, {f"selfplay/{k}": v for k, v in selfplay.items() if k not in ("stage",)})
        summary["selfplay"] = {k: v for k, v in selfplay.items() if k not in ("generation", "stage")}

        trained = ledger.find(generation, "train")
        if trained is None:
            # ``best`` is still the network this generation's self-play used.
            _ensure_shards(config, shards, generation, best, games, ledger, say)
            train_dir = out / f"gen{generation:04d}" / "train"
            resumed_from = _checkpoint_step(train_dir)
            if resumed_from is None:
                say(f"generation {generation}: training {config.train.max_steps} steps")
            else:
                say(f"generation {generation}: training resumes from its checkpoint at step {resumed_from}")
            board.update(stage="training")
            result = train(
                config, shards, train_dir, init_net=latest, resume=True,
                tracking_uri=tracker.uri, progress_bar=False, tags={"mlflow.parentRunId": run_id},
                callbacks=[TrainingStatus(board)],
            )  # fmt: skip
            board.update(window_positions=result.positions)
            trained = {"generation": generation, "stage": "train", "net": result.net_path,
                       "steps": result.steps, "resumed_from_step": resumed_from, "metrics": result.metrics}  # fmt: skip
            ledger.append(trained)
        latest = trained["net"]
        board.update(losses={k: v for k, v in trained["metrics"].items() if k.startswith("loss/")},
                     step=trained["steps"])  # fmt: skip
        tracker.log_metrics(run_id, {k: v for k, v in trained["metrics"].items() if k.startswith("loss/")})
        summary["train"] = trained["metrics"]
        figures = _measure(config, out, ledger, tracker, generation, trained["net"], gen0, board, say,
                           run_id=run_id, baseline=baseline)  # fmt: skip
        if figures:
            summary["measure"] = figures

        gated = ledger.find(generation, "gate")
        if gated is None:
            say(f"generation {generation}: gate")
            board.update(stage="gating")
            gate_dir = out / f"gen{generation:04d}" / "gate"
            decision = run_gate(config, trained["net"], best, gate_dir, on_pair=_gate_progress(board))
            gated = {"generation": generation, "stage": "gate", **decision.as_dict()}
            for pgn in sorted(gate_dir.glob("*.pgn")):
                tracker.client.log_artifact(run_id, str(pgn), "pgn")
            if decision.promote:
                gated["model_version"] = tracker.register(run_id, trained["net"])
            ledger.append(gated)
        if gated["promote"]:
            best = trained["net"]
            _write_best(out, best)
        summary["gate"] = _gate_metrics(gated)
        _show_gate(board, gated, summary["gate"], best)
        tracker.log_metrics(run_id, summary["gate"])
        tracker.finish(run_id)
        # The parent run carries the per-generation curve too (step = generation),
        # so two pipeline runs compare side by side in mlflow ui.
        losses = {k: v for k, v in summary["train"].items() if k.startswith("loss/")}
        tracker.log_metrics(tracker.parent_id, {**losses, **summary["gate"]}, step=generation)
        ledger.append({"generation": generation, "stage": "generation", "best": best, "summary": summary})
        history.append(summary)
        _write_metrics(out, history, baseline)
        say(_status_line(summary))
    _plot(out, history, tracker, baseline)
    tracker.finish(tracker.parent_id)
    board.update(stage="finished")
    return {"generations": history, "best": best, "mlflow": tracker.uri, "parent_run": tracker.parent_id,
            "measure_gen0": baseline}


def _measure(
    config: Config, out: Path, ledger: Ledger, tracker: Tracker, generation: int, net: str, gen0: str,
    board: StatusBoard, say: Callable[[str], None], *, run_id: str | None = None,
    baseline: dict[str, float] | None = None,
) -> dict[str, float]:  # fmt: skip
    """Generation ``generation``'s learning measure (``gating.measure``), played
    once (a ledger stage ``measure``), logged to its MLflow run and to the
    parent run at step = generation, and shown on the board; ``{}`` when off."""
    if config.gating.measure == "none":
        return {}
    entry = ledger.find(generation, "measure")
    if entry is None:
        say(f"generation {generation}: measure ({config.gating.measure}, {config.gating.measure_games} games)")
        board.update(stage="measuring")
        figures = run_measure(config, net, gen0, out / f"gen{generation:04d}" / "measure")
        entry = {"generation": generation, "stage": "measure", "net": net, "figures": figures}
        ledger.append(entry)
        for run in [run_id] if run_id else []:
            tracker.log_metrics(run, figures)
        tracker.log_metrics(tracker.parent_id, figures, step=generation)
        if generation == 0:
            say(f"generation 0 (random net): {measure_text(figures)}")
    figures = entry["figures"]
    shown = f"generation {generation}: {measure_text(figures)}"
    if baseline and generation:
        shown += f"   (generation 0: {measure_text(baseline)})"
    board.update(learning=shown)
    return figures


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


def _record_games(games: Ledger, generation: int) -> Callable[[dict[str, Any]], None]:
    """``run_selfplay``'s ``on_task``: append the finished task's game ids to ``games``
    (once per task: a task played again after its shard was quarantined has the same ids)."""

    def on_task(summary: dict[str, Any]) -> None:
        if not any(entry["task"] == summary["task"] for entry in games.entries):
            _append_games(games, generation, summary["task"], summary["game_ids"])

    return on_task


def _append_games(games: Ledger, generation: int, task: str, ids: list[str]) -> None:
    games.append({"generation": generation, "stage": "games", "task": task, "games": sorted(ids)})


def generation_tasks(config: Config, generation: int) -> list[str]:
    """The self-play task ids (and shard names) of ``generation``, as ``run_selfplay`` cuts them."""
    return [task for task, _ in plan_tasks(config.run.games_per_generation, config.selfplay.games_per_task, generation)]


def check_shards(config: Config, shards: str, generation: int, games: Ledger) -> dict[str, str]:
    """Read and validate every shard of ``generation``; returns ``{task: reason}``
    of the tasks to play again.

    A shard that does not read back (truncated, corrupt, invalid rows) or whose
    game ids differ from those ``games`` recorded for its task is quarantined
    (``shards/quarantine/`` with a ``.reason.txt``); a missing shard is reported
    as missing.  A valid shard whose task ``games`` lacks (the driver died
    between the shard and its summary) has its ids recorded now.  I/O errors
    propagate: they say nothing about the shard."""
    recorded = {entry["task"]: entry["games"] for entry in games.entries}
    remove_stale_temps(shards)  # left by writers killed mid-write
    redo: dict[str, str] = {}
    for task in generation_tasks(config, generation):
        if not shard_exists(shards, task):
            redo[task] = "missing"
            continue
        path = os.path.join(shards, shard_name(task))
        try:
            table = read_shard(path, check_legality=config.train.check_legality)
        except ShardError as error:
            reason = error.reason
        else:
            ids = sorted(set(table.column("game_id").to_pylist()))
            if task not in recorded:
                _append_games(games, generation, task, ids)
                continue
            if ids == sorted(recorded[task]):
                continue
            reason = f"game ids {ids} differ from the ids {GAMES_FILE} recorded: {sorted(recorded[task])}"
        moved = quarantine_shard(path, reason)
        log.warning("quarantined bad shard %s -> %s: %s", path, moved, reason)
        redo[task] = reason
    return redo


def _ensure_shards(
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
                     on_task=_record_games(games, generation), mate_rates=mate_rates(ledger))  # fmt: skip
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


def _initial_best(config: Config, out: Path, ledger: Ledger, tracker: Tracker, init_net: str | None) -> str:
    entry = ledger.find(0, "init")
    if entry is not None:
        best_file = out / "best.txt"
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
    _write_best(out, str(path))
    ledger.append({"generation": 0, "stage": "init", "net": str(path), "model_version": version})
    return str(path)


def _write_best(out: Path, best: str) -> None:
    with atomic_write(out / "best.txt") as handle:
        handle.write(best.encode())


def _gate_metrics(gated: dict[str, Any]) -> dict[str, float]:
    metrics: dict[str, float] = {"gate/promoted": float(gated["promote"])}
    head = gated.get("vs_best", {}).get("pairings", [{}])
    if head and head[0].get("elo") is not None:
        metrics["gate/elo_vs_best"] = head[0]["elo"]
        metrics["gate/score_vs_best"] = head[0]["score"]
        metrics["gate/games_vs_best"] = float(head[0].get("games", 0))
    for index, level in enumerate(gated.get("ladder", [])):
        if level.get("elo") is not None:
            metrics[f"ladder/{index}/elo"] = level["elo"]
            metrics[f"ladder/{index}/score"] = level["score"]
            metrics[f"ladder/{index}/games"] = float(level.get("games", 0))
    return metrics


def _write_metrics(out: Path, history: list[dict[str, Any]], baseline: dict[str, float] | None = None) -> None:
    document: dict[str, Any] = {"generations": history, "last": history[-1] if history else {}}
    if baseline:
        document["measure_gen0"] = baseline
    with atomic_write(out / "metrics.json") as handle:
        handle.write(json.dumps(document, indent=2, default=str).encode())


def _status_line(summary: dict[str, Any]) -> str:
    gate = summary["gate"]
    train = summary["train"]
    selfplay = summary["selfplay"]
    ladder = ", ".join(
        f"SF{key.split('/')[1]} "
        + elo_text(value, gate.get(key.replace("/elo", "/score")), int(gate.get(key.replace("/elo", "/games"), 0)))
        for key, value in gate.items() if key.endswith("/elo")
    )  # fmt: skip
    return (
        f"generation {summary['generation']}: {selfplay.get('games', 0):.0f} games "
        f"({selfplay.get('positions_per_s', 0):.0f} pos/s), loss {train.get('loss/total', float('nan')):.3f} "
        f"(policy {train.get('loss/policy', float('nan')):.3f}, value {train.get('loss/value', float('nan')):.3f}), "
        f"gate: {'PROMOTED' if gate['gate/promoted'] else 'rejected'}"
        + (f", vs best {_vs_best_text(gate)} Elo" if "gate/elo_vs_best" in gate else "")
        + (f", ladder {ladder}" if ladder else "")
        + (f"; {measure_text(summary['measure'])}" if summary.get("measure") else "")
    )


def _vs_best_text(gate: dict[str, float]) -> str:
    """The gate's Elo against the best net (a bound when the score is 0 or 1)."""
    return elo_text(gate["gate/elo_vs_best"], gate.get("gate/score_vs_best"), int(gate.get("gate/games_vs_best", 0)))


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
