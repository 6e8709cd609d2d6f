"""The asynchronous loop (``run.mode: async``, ``actors/async_loop.py``).

* config and resource checks name the keys;
* a tiny async run end to end through ``zerochess run`` (every candidate
  promoted, so the pool switches nets): ledgers, shards tagged with the net
  version, MLflow's parent / trainer / candidate runs, a rerun does nothing;
* a whole self-play node of a multi-node cluster on this machine
  (``ray.cluster_utils.Cluster``) is removed mid-run: the run goes on, nothing
  is lost or duplicated.

The async chaos test (a pool actor, the trainer, the gatekeeper and the
driver SIGKILLed, a shard truncated) is in ``tests/test_chaos.py``, beside
the sync one; the helpers they share are in ``tests/helpers/runs.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pipeline.config import ConfigError, load_config
from tests.helpers import ROOT
from tests.helpers.runs import (
    FIT_TWO_CPUS,
    assert_games_once,
    assert_mlflow,
    entries,
    run_command,
    run_env,
)


# -- fast checks ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("run.mode=parallel", "run.mode"),
        ("run.candidate_every_steps=0", "run.candidate_every_steps"),
        ("run.train_samples_per_position=0", "run.train_samples_per_position"),
        ("run.trainer_cpus=-1", "run.trainer_cpus"),
        ("run.gates_in_flight=0", "run.gates_in_flight"),
        ("gating.cpus_per_worker=-0.5", "gating.cpus_per_worker"),
    ],
)
def test_bad_async_settings_name_the_key(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(ROOT / "params.yaml", [override])


@pytest.mark.parametrize(
    ("override", "key"), [("train.devices=2", "train.devices"), ("run.trainer_gpus=2", "run.trainer_gpus")]
)
def test_ddp_is_rejected_in_async_mode_naming_the_keys(override: str, key: str) -> None:
    """The async trainer trains on one device: asking it for several (DDP, the
    sync trainer's) fails at load time naming the key and the mode."""
    with pytest.raises(ConfigError, match=re.escape(key) + r" must be .* with run\.mode async"):
        load_config(ROOT / "params.yaml", ["run.mode=async", override])
    assert load_config(ROOT / "params.yaml", ["run.mode=sync", override]).run.mode == "sync"
    for one in ("train.devices=1", "train.devices=0", "run.trainer_gpus=1"):
        assert load_config(ROOT / "params.yaml", ["run.mode=async", one]).run.mode == "async"


def test_the_learning_measure_is_rejected_in_async_mode() -> None:
    """gating.measure runs after each generation of the sync loop: async mode
    says so at load time instead of silently measuring nothing."""
    with pytest.raises(ConfigError, match=r"gating\.measure must be none with run\.mode async .*got 'mate_rate'"):
        load_config(ROOT / "params.yaml", ["run.mode=async", "gating.measure=mate_rate"])
    assert load_config(ROOT / "params.yaml", ["run.mode=sync", "gating.measure=mate_rate"]).gating.measure == "mate_rate"


def test_modes_of_the_presets() -> None:
    assert load_config(ROOT / "params.yaml").run.mode == "sync"
    assert load_config(ROOT / "params.yaml", preset="tiny").run.mode == "sync"
    assert load_config(ROOT / "params.yaml", preset="cpu").run.mode == "sync"
    for preset in ("gpu", "cluster"):
        assert load_config(ROOT / "params.yaml", preset=preset).run.mode == "async"
    cluster = load_config(ROOT / "params.yaml", preset="cluster").run
    assert cluster.trainer_resource == "trainer" and cluster.selfplay_resource == "selfplay"


def test_roles_that_do_not_fit_the_cluster_fail_naming_the_keys() -> None:
    from pipeline.loop.resources import check_resources, required_resources

    config = load_config(ROOT / "params.yaml", preset="tiny", overrides=["run.mode=async"])
    assert required_resources(config)["CPU"] == 2 * 1.0 + 1.0 + 0.0 + 2 * 1.0
    with pytest.raises(ConfigError, match=r"needs 5 CPU.*run\.trainer_cpus.*has 2"):
        check_resources(config, {"CPU": 2.0})
    fits = load_config(ROOT / "params.yaml", preset="tiny", overrides=[f"{k}={v}" for k, v in FIT_TWO_CPUS.items()])
    check_resources(fits, {"CPU": 2.0})
    on_nodes = load_config(ROOT / "params.yaml", preset="tiny",
                           overrides=[*(f"{k}={v}" for k, v in FIT_TWO_CPUS.items()), "run.trainer_resource=trainer"])  # fmt: skip
    with pytest.raises(ConfigError, match="'trainer'"):
        check_resources(on_nodes, {"CPU": 2.0})


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_cluster_preset_fits_the_cluster_configs(cloud: str) -> None:
    """The cluster preset's three roles fit the node types of infra/cluster-*.yaml
    at their max_workers, and a self-play node holds its share of both pools."""
    import yaml

    from pipeline.loop.resources import check_resources

    config = load_config(ROOT / "params.yaml", preset="cluster")
    nodes = yaml.safe_load((ROOT / "infra" / f"cluster-{cloud}.yaml").read_text())["available_node_types"]
    total: dict[str, float] = {}
    for node in nodes.values():
        for key, value in node["resources"].items():
            total[key] = total.get(key, 0) + value * max(node.get("max_workers", 1), 1)
    check_resources(config, total)
    selfplay_node = next(node["resources"] for node in nodes.values() if "selfplay" in node["resources"])
    per_node = selfplay_node["selfplay"]
    sp, gating = config.selfplay, config.gating
    assert per_node * sp.gpus_per_worker + per_node * gating.gpus_per_worker <= selfplay_node["GPU"] + 1e-9
    assert per_node * sp.cpus_per_worker + per_node * gating.cpus_per_worker <= selfplay_node["CPU"]
    trainer_node = next(node["resources"] for node in nodes.values() if "trainer" in node["resources"])
    assert config.run.trainer_gpus <= trainer_node["GPU"] and config.run.trainer_cpus <= trainer_node["CPU"]


def test_gpu_preset_fits_one_gpu_and_16_cores() -> None:
    from pipeline.loop.resources import check_resources

    check_resources(load_config(ROOT / "params.yaml", preset="gpu"), {"CPU": 16.0, "GPU": 1.0})


def test_task_names_carry_the_net_version() -> None:
    from pipeline.loop.tasks import parse_task, task_name

    assert task_name(3, 17) == "gen0003-task00017"
    assert parse_task(task_name(3, 17)) == (3, 17)
    assert parse_task("something-else") is None


def test_status_screen_shows_the_three_roles() -> None:
    from rich.console import Console

    from pipeline.async_status import AsyncStatus, AsyncStatusBoard, render_async

    status = AsyncStatus("runs/x", 5, pool_workers=2, pool_alive=1, games=40, positions=1600, games_per_s=1.5,
                         net_version=3, step=120, trainer_state="waiting for self-play (ratio control)",
                         window_positions=5000, window_shards=12, samples_per_position=3.9,
                         samples_per_position_target=4.0, losses={"loss/total": 2.5}, candidates=2,
                         gates_in_flight=["candidate 2 vs v3"], verdicts=["candidate 1 (step 60): PROMOTED to v3"])  # fmt: skip
    console = Console(width=200, record=True)
    console.print(render_async(status))
    text = console.export_text()
    for expected in ("self-play pool", "1/2 actors, net v3", "1.50 games/s", "trainer", "step 120",
                     "waiting for self-play", "samples/position 3.90 (target 4)", "total 2.500",
                     "candidates 2 / 5", "gatekeeper", "candidate 2 vs v3", "PROMOTED to v3"):  # fmt: skip
        assert expected in text, (expected, text)
    board = AsyncStatusBoard(status, console=console, live=False)
    board.update(games=41)
    assert board.status.games == 41 and not board.live
    with pytest.raises(AttributeError):
        board.update(no_such_field=1)


def test_trainer_resumes_from_its_state_as_if_never_stopped(tmp_path: Path) -> None:
    """A new TrainerActor on the same folder (what the driver starts after a
    SIGKILL) continues at the saved step and ends with the same weights and
    candidates as a trainer that was never stopped."""
    import torch

    from actors.roles import TrainerActor
    from actors.selfplay import SelfPlayActor
    from models.net import AlphaZeroNet
    from pipeline.checkpoint import load_net, save_net
    from pipeline.config import to_dict

    config = load_config(ROOT / "params.yaml", preset="tiny", overrides=["train.checkpoint_every=4"])
    plain = to_dict(config)
    shards = tmp_path / "shards"
    SelfPlayActor(plain, None, str(shards), 0).play_task("gen0000-task00000", 1, 8)
    torch.manual_seed(0)
    init = save_net(AlphaZeroNet(config.net), tmp_path / "init.pt")

    straight = TrainerActor(plain, str(shards), str(tmp_path / "straight"), str(init))
    assert straight.run(12, every=6)["exported"]["step"] == 6
    done = straight.run(12, every=6)
    assert done["step"] == 12 and [c["step"] for c in done["candidates"]] == [6, 12]

    first = TrainerActor(plain, str(shards), str(tmp_path / "killed"), str(init))
    assert first.run(6, every=6)["exported"]["index"] == 1
    assert first.run(10, every=6)["step"] == 10  # its state was last saved at step 8
    del first  # SIGKILL: nothing more is saved
    second = TrainerActor(plain, str(shards), str(tmp_path / "killed"), str(init))
    assert second.resumed_from == 8 and [c["index"] for c in second.candidates] == [1]
    resumed = second.run(12, every=6)
    assert resumed["step"] == 12 and resumed["exported"]["index"] == 2
    for a, b in zip(load_net(done["candidates"][1]["net"]).state_dict().values(),
                    load_net(resumed["candidates"][1]["net"]).state_dict().values()):  # fmt: skip
        assert torch.equal(a, b)


# -- end to end ------------------------------------------------------------------

E2E = {**FIT_TWO_CPUS, "run.generations": 2, "run.candidate_every_steps": 10, "gating.always_promote": "true",
       "selfplay.games_per_task": 8}  # fmt: skip


@pytest.mark.slow
def test_async_tiny_run_end_to_end_then_resume_does_nothing(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    out = tmp_path / "run"
    env = run_env(RAY_TMPDIR=tempfile.mkdtemp(prefix="zc-async-", dir="/tmp"))
    first = subprocess.run(run_command(out, E2E), cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert first.returncode == 0, first.stderr[-4000:]
    assert "candidate 2: promoted" in first.stdout and "busy:" in first.stdout
    ledger = entries(out / "ledger.jsonl")
    stages = [(entry["generation"], entry["stage"]) for entry in ledger]
    for index in (1, 2):
        assert stages.count((index, "candidate")) == 1 and stages.count((index, "gate")) == 1
    gates = [entry for entry in ledger if entry["stage"] == "gate"]
    assert [gate["version"] for gate in gates] == [1, 2]
    assert (out / "best.txt").read_text() == gates[-1]["candidate"]
    candidates = [entry for entry in ledger if entry["stage"] == "candidate"]
    assert [c["step"] for c in candidates] == [10, 20]
    # The ratio control: no step before the first games, never more samples than allowed.
    for candidate in candidates:
        assert candidate["step"] * 32 <= 4.0 * candidate["training_positions"]

    owner = assert_games_once(out)
    versions = {entry["generation"] for entry in entries(out / "games.jsonl")}
    assert {0, 1} <= versions  # the pool switched to the first promoted net once it was out
    assert len(owner) >= 8
    assert_mlflow(out, 2)
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    assert int(client.get_model_version_by_alias("zerochess", "champion").version) == 3  # gen0 + 2 promotions
    metrics = json.loads((out / "metrics.json").read_text())
    assert [c["candidate"] for c in metrics["candidates"]] == [1, 2]
    assert 0 < metrics["last"]["busy"]["selfplay"] <= 1.0

    games_before = (out / "games.jsonl").read_text()
    second = subprocess.run(run_command(out, E2E), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-4000:]
    assert entries(out / "ledger.jsonl") == ledger
    assert (out / "games.jsonl").read_text() == games_before
    assert_mlflow(out, 2)
    shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)


# -- a whole node lost -------------------------------------------------------------


@pytest.mark.slow
def test_losing_a_self_play_node_mid_run(tmp_path: Path) -> None:
    """Head (gating), two self-play nodes and a trainer node, 1 CPU each; the node
    running the pool's actors is removed once shards land: its actors are replaced
    on the other self-play node and their tasks played again; the run finishes
    with every game exactly once.

    It runs in a fresh interpreter: Ray reads its authentication mode when it
    is imported, and a driver that already joined the session's token-auth
    cluster could not register actors on this auth-disabled throwaway cluster
    (every pool actor creation was cancelled when the whole suite ran in one
    process)."""
    if os.environ.get("ZEROCHESS_NODE_LOSS_CHILD") != "1":
        node_id = f"{Path(__file__).resolve()}::test_losing_a_self_play_node_mid_run"
        child = subprocess.run(
            [sys.executable, "-m", "pytest", node_id, "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "child")],
            env={**os.environ, "ZEROCHESS_NODE_LOSS_CHILD": "1"}, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert child.returncode == 0, child.stdout[-6000:] + child.stderr[-3000:]
        assert "1 passed" in child.stdout, child.stdout[-3000:]
        return
    import ray
    from ray.cluster_utils import Cluster

    from actors.async_loop import run_async
    from actors.runtime import use_auth_mode

    saved = {name: os.environ.get(name) for name in ("MLFLOW_TRACKING_URI", "RAY_AUTH_MODE")}
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    os.environ["RAY_AUTH_MODE"] = "disabled"  # a throwaway cluster of this test only
    use_auth_mode()
    if ray.is_initialized():
        ray.shutdown()
    config = load_config(ROOT / "params.yaml", preset="tiny", overrides=[
        f"{k}={v}" for k, v in {**FIT_TWO_CPUS, "gating.cpus_per_worker": 0.5, "run.trainer_cpus": 1,
                                "run.selfplay_resource": "selfplay", "run.trainer_resource": "trainer",
                                "run.candidate_every_steps": 10, "run.generations": 2,
                                "selfplay.games_per_task": 8,
                                # A lost node takes both pool actors with it, and on a loaded
                                # machine replacements can die again before Ray marks the node
                                # dead (CI once lost all of them with the default 3).
                                "selfplay.max_restarts": 10}.items()])  # fmt: skip
    out = tmp_path / "run"
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 1, "include_dashboard": False})
    removed: dict[str, Any] = {}
    try:
        nodes = [cluster.add_node(num_cpus=1, resources={"selfplay": 2}) for _ in range(2)]
        trainer_node = cluster.add_node(num_cpus=1, resources={"trainer": 1})
        ray.init(address=cluster.address, log_to_driver=False)

        def remove_a_pool_node() -> None:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                recorded = entries(out / "games.jsonl")
                if len(recorded) >= 3:
                    used = {entry["node"] for entry in recorded}
                    victim = next(node for node in nodes if node.node_id in used)
                    removed.update(node=victim.node_id, tasks_before=len(recorded))
                    cluster.remove_node(victim)
                    return
                time.sleep(0.1)

        killer = threading.Thread(target=remove_a_pool_node, daemon=True)
        killer.start()
        result = run_async(config, out)
        killer.join(timeout=10)
    finally:
        ray.shutdown()
        cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        use_auth_mode()  # back to the mode the rest of the session runs with
    assert removed, "the node was never removed"
    recorded = entries(out / "games.jsonl")
    after = recorded[removed["tasks_before"]:]
    # Results the lost node returned before it went may be recorded in the turn after (games.jsonl is
    # written once a turn): at most its actors' tasks in flight (2 actors x 2); then only the other node.
    stale = [entry for entry in after if entry["node"] == removed["node"]]
    assert after and len(stale) <= 4 and after[-1]["node"] != removed["node"]
    assert {entry["node"] for entry in recorded} <= {n.node_id for n in nodes}  # self-play stayed on its nodes
    assert len(result["candidates"]) == 2 and result["step"] == 20
    trained_on = {entry["node"] for entry in entries(out / "ledger.jsonl") if entry["stage"] == "candidate"}
    assert trained_on == {trainer_node.node_id}  # the trainer on its own node (run.trainer_resource)
    assert_games_once(out)
    assert_mlflow(out, 2)
