"""The async loop's gatekeeper (:class:`GateRole`, a part of
:class:`actors.async_loop.AsyncLoop`): gates each candidate in order on the
gatekeeper actor, gates again one whose gate started before another
promotion, promotes, and records each gate (ledger, MLflow, ``best.txt``)."""

from __future__ import annotations

from typing import Any

import ray

from actors.async_pool import kill_quietly
from actors.roles import GatekeeperActor, GateResult
from pipeline.loop.ledger import write_best
from pipeline.loop.text import gate_metrics


class GateRole:
    """The gatekeeper's part of the driver (its state is set up in
    :class:`actors.async_loop.AsyncLoop`'s ``__init__``)."""

    def _feed_gatekeeper(self) -> None:
        if self.stopping:  # every candidate the run asks for is gated: no new gate (the loop drains)
            return
        while self.gate_queue and len(self.gating) < self.config.run.gates_in_flight:
            index = self.gate_queue.popleft()
            if self.gatekeeper is None:
                run = self.config.run
                self.gatekeeper = ray.remote(
                    num_cpus=run.gate_cpus, resources={run.gate_resource: 1} if run.gate_resource else None,
                    max_restarts=0, max_task_retries=0, max_concurrency=max(1, run.gates_in_flight),
                )(GatekeeperActor).remote(self.plain)  # fmt: skip
            self._gate_run(index)
            gate_dir = self.out / f"cand{index:04d}" / "gate"
            ref = self.gatekeeper.gate.remote(index, self.candidates[index].net, self.best, str(gate_dir))
            self.in_flight[ref] = ("gate", index)
            self.gating[index] = self.version
            self.board.update(gates_in_flight=[f"candidate {i} vs v{v}" for i, v in self.gating.items()])
            self.say(f"gatekeeper: candidate {index} vs best v{self.version}")

    def _gate_run(self, index: int) -> str:
        entry = self.ledger.find(index, "gate_start")
        if entry is not None:
            self.tracker.client.update_run(entry["run_id"], status="RUNNING")
            return entry["run_id"]
        run_id = self.tracker.child_run(f"candidate{index:04d}")
        self.ledger.append({"generation": index, "stage": "gate_start", "run_id": run_id})
        return run_id

    def _on_gate(self, ref: Any, index: int) -> None:
        against = self.gating.pop(index)
        self.board.update(gates_in_flight=[f"candidate {i} vs v{v}" for i, v in self.gating.items()])
        try:
            result: GateResult = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
            self.gate_restarts += 1
            kill_quietly(self.gatekeeper)
            self.gatekeeper = None
            if self.gate_restarts > self.config.run.role_max_restarts:
                raise RuntimeError(f"the gatekeeper died {self.gate_restarts} times: {error}") from error
            self.say(f"gatekeeper lost ({type(error).__name__}): candidate {index} is gated again")
            self.gate_queue.appendleft(index)
            return
        decision = result.decision
        self.busy.gate_s += result.busy_s
        if decision.promote and against != self.version:
            self.say(f"candidate {index} beat v{against}, but v{self.version} is the best now: gated again")
            self.gate_queue.appendleft(index)
            return
        run_id = self._gate_run(index)
        gate_dir = self.out / f"cand{index:04d}" / "gate"
        for pgn in sorted(gate_dir.glob("*.pgn")):
            self.tracker.client.log_artifact(run_id, str(pgn), "pgn")
        gated = {"generation": index, "stage": "gate", "candidate": self.candidates[index].net,
                 **decision.as_dict(), "busy_s": result.busy_s, "node": result.node,
                 **self.clock.stamp()}  # fmt: skip
        if decision.promote:
            gated["version"] = self.version + 1
            gated["model_version"] = self.tracker.register(run_id, self.candidates[index].net)
        metrics = gate_metrics(gated)
        _, positions, _ = self._totals()
        self.tracker.log_metrics(run_id, {**metrics, "candidate/step": self.candidates[index].step}, step=index)
        self.tracker.finish(run_id)
        self.tracker.log_metrics(self.tracker.parent_id, metrics, step=index)
        self.tracker.log_metrics(self.tracker.parent_id, {f"by_positions/{k}": v for k, v in metrics.items()},
                                 step=positions)  # fmt: skip
        self.ledger.append(gated)
        if decision.promote:
            self.version += 1
            self.versions[self.version] = self.candidates[index].net
            self.best = self.versions[self.version]
            write_best(self.out, self.best)
            self.board.update(best=self.best, net_version=self.version)
            self._drop_old_weights()
        verdict = (f"candidate {index} (step {self.candidates[index].step}): "
                   f"{'PROMOTED to v' + str(self.version) if decision.promote else 'rejected'} "
                   f"({decision.reason})")  # fmt: skip
        self.board.update(verdicts=[*self.board.status.verdicts[-9:], verdict])
        self.say(verdict)
        self._write_metrics()
