"""MLflow bookkeeping of a loop's run: the parent run, one run per generation
(or candidate), and the registered model whose ``champion`` is the best net."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from pipeline.atomic import atomic_write
from pipeline.config import Config, flatten
from pipeline.training.tracking import EXPERIMENT_KIND_TAG, TRAINING_KIND, mark_training_experiment

log = logging.getLogger(__name__)

PARENT_RUN_FILE = "pipeline.json"
RUN_DIR_TAG = "zerochess.run_dir"  # the parent run's folder, to find it again after a kill


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
            self.parent_id = self._unrecorded_parent(out) or self._new_parent(config, out)
            with atomic_write(info_path) as handle:
                handle.write(json.dumps({"run_id": self.parent_id, "tracking_uri": self.uri}).encode())

    def _new_parent(self, config: Config, out: Path) -> str:
        run = self.client.create_run(self.experiment_id, run_name=f"pipeline {out.resolve().name}",
                                     tags={RUN_DIR_TAG: str(out.resolve())})  # fmt: skip
        self._log_params(run.info.run_id, config)
        return str(run.info.run_id)

    def _unrecorded_parent(self, out: Path) -> str | None:
        """The parent run of ``out`` that a killed driver created before it
        wrote ``pipeline.json``, if any."""
        path = str(out.resolve()).replace("'", "")
        if path != str(out.resolve()):
            return None  # a path MLflow's filter cannot quote: a new parent
        return self._reuse_first(f"tags.`{RUN_DIR_TAG}` = '{path}'", f"parent run of {out}")

    def _reuse_first(self, filter_string: str, what: str) -> str | None:
        """The oldest run of the experiment matching ``filter_string``, marked
        RUNNING again (a killed driver created it), or None."""
        found = self.client.search_runs([self.experiment_id], filter_string,
                                        order_by=["attributes.start_time ASC"], max_results=1)  # fmt: skip
        if not found:
            return None
        log.info("MLflow %s found unrecorded (%s): reused", what, found[0].info.run_id)
        self.client.update_run(found[0].info.run_id, status="RUNNING")
        return str(found[0].info.run_id)

    def _log_params(self, run_id: str, config: Config) -> None:
        from mlflow.entities import Param

        params = [Param(key, str(value)[:500]) for key, value in flatten(config).items()]
        for start in range(0, len(params), 100):
            self.client.log_batch(run_id, params=params[start : start + 100])

    def generation_run(self, generation: int, existing: str | None) -> str:
        if existing:
            return existing
        return self.child_run(f"gen{generation:04d}")

    def child_run(self, name: str) -> str:
        """The run ``name`` nested under the parent: the one a killed driver
        created before it could record its id, or a new one (so a resumed
        run never holds two runs of one name)."""
        found = self._reuse_first(f"tags.mlflow.runName = '{name}' and tags.mlflow.parentRunId = '{self.parent_id}'",
                                  f"run {name} under the parent run")  # fmt: skip
        if found:
            return found
        run = self.client.create_run(self.experiment_id, run_name=name, tags={"mlflow.parentRunId": self.parent_id})
        return str(run.info.run_id)

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
        """Log ``net_path`` under ``run_id`` and make it the ``champion`` version
        (the version a killed driver registered for ``run_id`` before its gate
        reached the ledger, if any: never two versions of one candidate)."""
        try:
            self.client.get_registered_model(self.model_name)
        except Exception:  # noqa: BLE001 - MLflow raises a generic error when absent
            self.client.create_registered_model(self.model_name)
        found = self.client.search_model_versions(f"name = '{self.model_name}' and run_id = '{run_id}'")
        if found:
            version = min(found, key=lambda v: int(v.version))
            log.info("model version %s of run %s found: reused", version.version, run_id)
        else:
            self.client.log_artifact(run_id, net_path, "net")
            artifact_uri = self.client.get_run(run_id).info.artifact_uri
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
