"""The Ray resources the async loop's three roles hold at once, checked
against the cluster before anything starts."""

from __future__ import annotations

from pipeline.config import Config, ConfigError


def required_resources(config: Config) -> dict[str, float]:
    """The Ray resources the three roles hold at once."""
    run, selfplay, gating = config.run, config.selfplay, config.gating
    need = {
        "CPU": selfplay.workers * selfplay.cpus_per_worker + run.trainer_cpus + run.gate_cpus
        + gating.workers * gating.cpus_per_worker,
        "GPU": selfplay.workers * selfplay.gpus_per_worker + run.trainer_gpus + gating.workers * gating.gpus_per_worker,
    }  # fmt: skip
    for key, amount in ((run.selfplay_resource, selfplay.workers), (run.trainer_resource, 1), (run.gate_resource, 1)):
        if key:
            need[key] = need.get(key, 0) + amount
    return {key: value for key, value in need.items() if value > 0}


def check_resources(config: Config, available: dict[str, float]) -> None:
    """Fail at once, naming the keys, when the cluster cannot hold the three roles
    together (they would wait for each other forever)."""
    keys = {
        "CPU": "selfplay.workers x selfplay.cpus_per_worker + run.trainer_cpus + run.gate_cpus "
        "+ gating.workers x gating.cpus_per_worker",
        "GPU": "selfplay.workers x selfplay.gpus_per_worker + run.trainer_gpus + gating.workers x gating.gpus_per_worker",
    }
    for name, amount in required_resources(config).items():
        have = available.get(name, 0.0)
        if amount > have + 1e-9:
            what = keys.get(name, f"the Ray resource {name!r} (run.selfplay_resource / run.trainer_resource / "
                                  "run.gate_resource)")  # fmt: skip
            raise ConfigError(f"run.mode async needs {amount:g} {name} for its three roles ({what}); "
                              f"the Ray cluster has {have:g}")  # fmt: skip
