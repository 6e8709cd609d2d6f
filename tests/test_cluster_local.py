"""The Ray cluster launcher configs in infra/, and a real ``ray up`` +
``ray submit`` on this machine.

The fast tests validate infra/cluster-{aws,gcp,local}.yaml with Ray's own
``prepare_config`` + ``validate_config`` (ray/autoscaler/ray-schema.json).

The slow test starts Debian's sshd on 127.0.0.1 (a free port, key-only, its
own host key, authorized_keys and config in a temp dir), then drives the real
launcher CLI against a copy of ``infra/cluster-local.yaml``:

* ``ray get-auth-token --generate`` on the "laptop" side (its own HOME); the
  file_mounts copy the token to the head (RAY_AUTH_MODE=token, as on the
  cloud configs);
* ``ray up``: file_mounts (the token, the checkout through the .gitignore
  filter), ``infra/setup.sh`` (against this venv, installing nothing) and the
  head's ``ray start`` with non-default ports and its own --temp-dir;
* ``ray exec``: the venv is first on PATH in the launcher's login shells and
  ``ray status`` works with the token; ``ray attach``: a shell on the head;
* the dashboard (only when ray[default]'s dependencies are importable) binds
  127.0.0.1 and a ``ray dashboard`` tunnel reaches it, with the token;
* ``ray submit infra/submit_run.py -- ...``: one generation of the ``tiny``
  preset (self-play, training, gating) as a Ray task on the node with the
  ``trainer`` resource; the test checks its ledger, shards and summary;
* ``mlflow ui`` on the head through ``ray exec``, reached through a
  ``ray dashboard --remote-port`` tunnel;
* a second ``ray submit infra/submit_run.py``: one short ``run.mode: async``
  run (``tiny``, one candidate, the trainer actor on the ``trainer``
  resource while the coordinating task takes none); the test checks its
  shards, the gated candidate and that every MLflow run is FINISHED;
* ``ray down``, with ``ray stop`` on the head replaced by a shim that stops
  only this cluster's processes (the real ``ray stop`` kills every Ray process
  on the machine, other people's tests included).

The sshd runs with ``SetEnv HOME=<temp>/home``, so everything the launcher
puts in the remote ~ (~/.bashrc, ~/ray_bootstrap_config.yaml, the token, the
submitted script) stays in the temp dir. Teardown kills, by pid, every process
whose command line or environment names the temp dir, then checks that none
is left. ZEROCHESS_CLUSTER_TEST_LOGS=DIR keeps the CLI, sshd and Ray logs.
"""

from __future__ import annotations

import contextlib
import getpass
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT
from tests.helpers.runs import FIT_TWO_CPUS, assert_games_once, assert_mlflow, entries, stop_all

INFRA = ROOT / "infra"
VENV_BIN = Path(sys.executable).parent
RAY_CLI = VENV_BIN / "ray"

# Ray's worker ports; the test's own ports stay out of it.
WORKER_PORTS = range(10002, 20000)
# The --*-port flags of the head's `ray start` that the test replaces.
PORT_FLAGS = (
    "port", "ray-client-server-port", "dashboard-port", "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port", "metrics-export-port", "runtime-env-agent-port",
    "node-manager-port", "object-manager-port",
)  # fmt: skip


# ----------------------------------------------------------------------------
# The configs validate against the launcher's schema (fast)


def _prepared(path: Path) -> dict:
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(yaml.safe_load(path.read_text()))
    validate_config(config)  # jsonschema against ray/autoscaler/ray-schema.json
    return config


@pytest.mark.parametrize("name", ["cluster-aws.yaml", "cluster-gcp.yaml"])
def test_cloud_configs_validate(name: str) -> None:
    config = _prepared(INFRA / name)
    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    assert head["resources"] == {"CPU": 0}, "no work is scheduled on the head"
    trainers = [t for t in types.values() if t["resources"].get("trainer") == 1]
    assert len(trainers) == 1 and trainers[0]["resources"].get("GPU", 0) >= 1
    selfplay = [n for n, t in types.items() if t is not head and "trainer" not in t["resources"]]
    assert selfplay and all(types[n]["resources"].get("GPU", 0) >= 1 for n in selfplay)
    head_start = " ".join(config["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head_start
    assert "RAY_AUTH_MODE=token" in head_start
    assert "RAY_AUTH_MODE=token" in " ".join(config["worker_start_ray_commands"])
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    setup = " ".join(config["setup_commands"])
    assert "infra/setup.sh" in setup and "RAY_AUTH_MODE=token" in setup


def test_local_config_validates() -> None:
    config = _prepared(INFRA / "cluster-local.yaml")
    assert config["provider"]["head_ip"] == "127.0.0.1"
    assert config["provider"]["worker_ips"] == []
    start = " ".join(config["head_start_ray_commands"])
    assert "ray stop" not in start  # it would kill every Ray process on the machine
    assert "--dashboard-host=127.0.0.1" in start and "--temp-dir=" in start
    ports = {flag: int(value) for flag, value in re.findall(r"--([a-z-]+-port|port)=(\d+)", start)}
    assert set(ports) == set(PORT_FLAGS)
    assert not set(ports.values()) & {6379, 8265, 10001, 52365, 22}
    assert not any(port in WORKER_PORTS for port in ports.values())


# ----------------------------------------------------------------------------
# ray up / ray submit / ray down against a real sshd

RELAY = '''\
"""ProxyCommand for ssh: relay stdin/stdout to HOST PORT (the launcher has no port option)."""
import os, socket, sys, threading
conn = socket.create_connection((sys.argv[1], int(sys.argv[2])))
def upstream():
    while data := os.read(0, 65536):
        conn.sendall(data)
    conn.shutdown(socket.SHUT_WR)
threading.Thread(target=upstream, daemon=True).start()
while data := conn.recv(65536):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
'''

# Replaces `ray stop` on the head during `ray down` (see the module docstring).
SCOPED_STOP = '''\
"""Stop the processes of one test cluster only: those whose HOME is HOME or
whose command line names TEMPDIR (never this process or its ancestors)."""
import os, sys, time
import psutil
home, tempdir = sys.argv[1], sys.argv[2]
spare = {os.getpid()} | {p.pid for p in psutil.Process().parents()}
def ours():
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        if proc.pid in spare:
            continue
        env = proc.info["environ"] or {}
        if env.get("HOME") == home or tempdir in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found
procs = ours()
print(f"scoped ray stop: {len(procs)} processes", flush=True)
for proc in procs:
    try:
        proc.terminate()
    except psutil.Error:
        pass
gone, alive = psutil.wait_procs(procs, timeout=10)
for proc in alive:
    try:
        proc.kill()
    except psutil.Error:
        pass
psutil.wait_procs(alive, timeout=5)
'''


def _free_ports(count: int) -> list[int]:
    """Free TCP ports on 127.0.0.1, outside Ray's worker range."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            held.append(sock)
            port = sock.getsockname()[1]
            if port not in WORKER_PORTS and port not in ports:
                ports.append(port)
    finally:
        for sock in held:
            sock.close()
    return ports


def _install_ssh_tools() -> None:
    """sshd, ssh, ssh-keygen and rsync (the launcher copies files with rsync)."""
    wanted = {"/usr/sbin/sshd": "openssh-server", "ssh": "openssh-client",
              "ssh-keygen": "openssh-client", "rsync": "rsync"}  # fmt: skip
    packages = sorted({pkg for tool, pkg in wanted.items() if not (shutil.which(tool) or os.path.exists(tool))})
    if not packages:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(f"missing {', '.join(packages)} and no root apt-get to install them (make test installs them)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        result = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            pytest.skip(f"could not install {packages}: {result.stderr[-500:]}")


def _ours(base: Path) -> list:
    """Every process (not this one or its ancestors) whose command line or
    environment names ``base``, and their descendants."""
    import psutil

    spare = {os.getpid()} | {p.pid for p in psutil.Process().parents()}
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter(["cmdline", "environ"]):
        if proc.pid in spare:
            continue
        text = " ".join(proc.info["cmdline"] or []) + " " + " ".join((proc.info["environ"] or {}).values())
        if f"{base}/" in text:
            found[proc.pid] = proc
            try:
                for child in proc.children(recursive=True):
                    if child.pid not in spare:
                        found[child.pid] = child
            except psutil.Error:
                pass
    return list(found.values())


@dataclass
class Cluster:
    base: Path          # everything of this test lives here (the marker of its processes)
    config: Path        # the derived cluster YAML
    env: dict[str, str] # the "laptop" side's environment
    ports: dict[str, int]  # the head's --*-port values
    server_home: Path
    shim_bin: Path
    logs: Path

    def ray(self, *args: str, timeout: float, name: str, check: bool = True, stdin: str | None = None) -> str:
        """Run the venv's ``ray`` CLI on the laptop side; return its output."""
        log = self.logs / f"{name}.log"
        with open(log, "w") as handle:
            try:
                result = subprocess.run([str(RAY_CLI), *args], check=False, cwd=ROOT, env=self.env, stdout=handle,
                                        stderr=subprocess.STDOUT, timeout=timeout,
                                        **({"input": stdin.encode()} if stdin else {"stdin": subprocess.DEVNULL}))  # fmt: skip
                code = result.returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
        output = log.read_text(errors="replace").replace("\r\n", "\n")
        if check and code != 0:
            sshd = (self.logs / "sshd.log").read_text(errors="replace")[-2000:]
            raise AssertionError(f"ray {' '.join(args[:2])} -> {code}\n{output[-6000:]}\n--- sshd.log ---\n{sshd}")
        return output


@pytest.fixture
def local_cluster() -> Iterator[Cluster]:
    import psutil

    _install_ssh_tools()
    # A short path: Ray's unix sockets live under --temp-dir (107-byte limit).
    base = Path(tempfile.mkdtemp(prefix="zcl-", dir="/tmp"))
    try:
        yield _start(base)
    finally:
        # Ray's processes and stray launcher clients first, then sshd and its sessions.
        stop_all([p for p in _ours(base) if _status(p, "name") != "sshd"])
        stop_all(_ours(base))
        still = [p for p in _ours(base) if _status(p, "status") not in ("", psutil.STATUS_ZOMBIE)]
        if os.environ.get("ZEROCHESS_CLUSTER_TEST_LOGS"):  # keep the CLI and sshd logs
            keep = Path(os.environ["ZEROCHESS_CLUSTER_TEST_LOGS"]) / base.name
            shutil.copytree(base / "logs", keep)
            if (base / "ray" / "session_latest" / "logs").is_dir():
                shutil.copytree(base / "ray" / "session_latest" / "logs", keep / "ray")
        shutil.rmtree(base, ignore_errors=True)
        control = _control_dir(f"zerochess-test-{base.name}")
        shutil.rmtree(control, ignore_errors=True)
        try:
            control.parent.rmdir()  # only when no other cluster uses it
        except OSError:
            pass
        # The launcher's state files belong in RAY_TMPDIR (base), never in the shared /tmp/ray.
        strays = list(Path("/tmp/ray").glob(f"cluster-zerochess-test-{base.name}.*"))
        for stray in strays:
            stray.unlink(missing_ok=True)
        assert not still, f"processes left behind: {[(p.pid, _status(p, 'name')) for p in still]}"
        assert not strays, f"files left in /tmp/ray: {strays}"


def _status(proc, what: str) -> str:
    """``proc.name()`` or ``proc.status()``; "" once the process is gone."""
    import psutil

    try:
        return getattr(proc, what)()
    except psutil.Error:
        return ""


def _control_dir(cluster_name: str) -> Path:
    """The folder of the launcher's ssh ControlMaster sockets for one cluster
    (ray/autoscaler/_private/command_runner.py: always under /tmp)."""
    import hashlib

    user = hashlib.sha256(getpass.getuser().encode()).hexdigest()[:10]
    return Path(f"/tmp/ray_ssh_{user}") / hashlib.sha256(cluster_name.encode()).hexdigest()[:10]


def _start(base: Path) -> Cluster:
    logs = base / "logs"
    home, client_home, shim = base / "home", base / "client", base / "shim"
    for folder in (logs, home, client_home, shim):
        folder.mkdir(mode=0o700)
    for name in ("client_key", "host_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / name)],
                       check=True, timeout=30, capture_output=True)  # fmt: skip
    shutil.copy(base / "client_key.pub", base / "authorized_keys")
    (base / "authorized_keys").chmod(0o600)
    (base / "relay.py").write_text(RELAY)
    (base / "scoped_stop.py").write_text(SCOPED_STOP)

    ssh_port, *ray_ports = _free_ports(1 + len(PORT_FLAGS))
    (base / "sshd_config").write_text(f"""\
Port {ssh_port}
ListenAddress 127.0.0.1
HostKey {base}/host_key
PidFile {base}/sshd.pid
AuthorizedKeysFile {base}/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers {getpass.getuser()}
UsePAM no
StrictModes no
MaxSessions 64
MaxStartups 64
SetEnv HOME={home}
""")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    test = subprocess.run([sshd_bin, "-t", "-f", str(base / "sshd_config")], check=False,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    if test.returncode != 0:
        pytest.skip(f"sshd rejects its config: {test.stderr.strip()}")
    with open(logs / "sshd.log", "w") as log:
        sshd = subprocess.Popen([sshd_bin, "-D", "-e", "-f", str(base / "sshd_config")],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 15
    while True:
        if sshd.poll() is not None:
            pytest.skip(f"sshd exited: {(logs / 'sshd.log').read_text()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", ssh_port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                pytest.skip("sshd did not listen within 15 s")
            time.sleep(0.2)

    # `ray stop` on the head (ray down) runs this shim, which stops only this cluster.
    (shim / "ray").write_text(f"""#!/bin/bash
if [ "$1" = stop ]; then exec {sys.executable} {base}/scoped_stop.py {home} {base}/ray; fi
exec {RAY_CLI} "$@"
""")
    (shim / "ray").chmod(0o755)

    config = yaml.safe_load((INFRA / "cluster-local.yaml").read_text())
    config["cluster_name"] = f"zerochess-test-{base.name}"
    config["auth"]["ssh_user"] = getpass.getuser()  # root in CI
    config["auth"]["ssh_private_key"] = str(base / "client_key")
    config["auth"]["ssh_proxy_command"] = f"{sys.executable} {base}/relay.py 127.0.0.1 {ssh_port}"
    config["setup_commands"] = [
        f"ZEROCHESS_VENV={VENV_BIN.parent} ZEROCHESS_NO_INSTALL=1 {command}" for command in config["setup_commands"]
    ] + [
        f"echo 'export PATH={shim}:$PATH' >> ~/.bashrc",  # the shim before the venv's ray
        f"echo 'export RAY_TMPDIR={base}' >> ~/.bashrc",  # the head's autoscaler state file (not /tmp/ray)
    ]
    if os.environ.get("PYTHONPATH"):  # the head runs this interpreter: give it this import path too
        config["setup_commands"].append(f"echo 'export PYTHONPATH={os.environ['PYTHONPATH']}' >> ~/.bashrc")
    start = []
    for command in config["head_start_ray_commands"]:
        assert "ray stop" not in command
        for flag, port in zip(PORT_FLAGS, ray_ports):
            command, count = re.subn(rf"--{flag}=\d+", f"--{flag}={port}", command)
            assert count == 1, flag
        if importlib.util.find_spec("grpc") is None:  # minimal ray: `ray start` refuses the flag
            command = re.sub(r"--ray-client-server-port=\d+\s*", "", command)
        command, count = re.subn(r"--temp-dir=\S+", f"--temp-dir={base}/ray", command)
        assert count == 1
        start.append(command + " --num-cpus=2")
    config["head_start_ray_commands"] = start
    path = base / "cluster.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))

    env = {
        **os.environ,
        "HOME": str(client_home),          # the laptop's ~ (its ~/.ray/auth_token)
        "RAY_TMPDIR": str(base),           # the launcher's cluster state and lock files
        "TMPDIR": str(base),               # its config cache (ray-config-<hash>)
        "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_AUTH_MODE", None)
    ports = dict(zip(PORT_FLAGS, ray_ports))
    return Cluster(base=base, config=path, env=env, ports=ports, server_home=home, shim_bin=shim, logs=logs)


@pytest.mark.slow
def test_ray_up_submit_down(local_cluster: Cluster) -> None:
    cluster = local_cluster
    config = str(cluster.config)
    started = time.monotonic()

    cluster.ray("get-auth-token", "--generate", timeout=60, name="token")
    token = (cluster.base / "client" / ".ray" / "auth_token").read_text().strip()
    assert token

    up = cluster.ray("up", "-y", "--no-config-cache", config, timeout=300, name="up")
    assert "zerochess setup: ok" in up, up[-3000:]
    # file_mounts copied the token and the checkout (not what .gitignore lists)
    assert (cluster.server_home / ".ray" / "auth_token").read_text().strip() == token
    synced = cluster.server_home / "zerochess"
    assert (synced / "infra" / "setup.sh").exists() and (synced / "pyproject.toml").exists()
    assert not (synced / ".venv").exists() and not (synced / ".git").exists()

    # The launcher's login shells find the venv (infra/setup.sh's ~/.bashrc block).
    probe = cluster.ray("exec", config, "command -v python; echo mode=$RAY_AUTH_MODE; command -v ray; "
                        f"ray status --address 127.0.0.1:{cluster.ports['port']}", timeout=120, name="exec")  # fmt: skip
    assert f"{VENV_BIN}/python" in probe and "mode=token" in probe
    assert "1.0 trainer" in probe, probe[-2000:]  # `ray status` (token auth) lists the head's resources
    assert f"{cluster.shim_bin}/ray" in probe, "ray down must find the shim, never the real `ray stop`"
    # `ray attach` is an interactive login shell on the head (here fed from a pipe).
    attached = cluster.ray("attach", config, timeout=120, name="attach",
                           stdin="echo attached-$((6 * 7)) $HOME\nexit\n")  # fmt: skip
    assert f"attached-42 {cluster.server_home}" in attached, attached[-2000:]

    # The GCS listens on the test's port; the dashboard, when ray[default] is installed, on 127.0.0.1 only.
    assert _listening(cluster.ports["port"]), "no GCS on the configured port"
    if all(importlib.util.find_spec(m) for m in ("aiohttp_cors", "opencensus", "prometheus_client")):
        _check_dashboard(cluster, token)
    else:  # minimal `ray` (the project's dependency): Ray starts no dashboard
        assert not _listening(cluster.ports["dashboard-port"]) - {"127.0.0.1"}

    out = cluster.base / "run"
    submitted = cluster.ray(
        "submit", config, str(INFRA / "submit_run.py"), "--",
        "--trainer-gpus", "0", "--ray-address", f"127.0.0.1:{cluster.ports['port']}",
        "--preset", "tiny", "--set", "run.generations=1", "--set", "run.games_per_generation=4",
        "--out", str(out),
        timeout=480, name="submit",
    )  # fmt: skip
    line = next((ln for ln in submitted.splitlines() if ln.startswith("submit_run: {")), None)
    assert line is not None, submitted[-4000:]
    summary = json.loads(line.removeprefix("submit_run: "))
    assert summary["exit"] == 0 and summary["ran_on"] == "trainer node" and summary["generations"] == 1
    stages = [json.loads(ln)["stage"] for ln in (out / "ledger.jsonl").read_text().splitlines()]
    assert {"selfplay", "train", "gate", "generation"} <= set(stages)
    assert list((out / "shards").glob("gen0001-task*.parquet"))
    assert (out / "gen0001" / "train" / "net.pt").exists()
    _check_mlflow(cluster, out / "mlflow.db")
    async_seconds = _check_async_submit(cluster)

    down = cluster.ray("down", "-y", config, timeout=120, name="down")
    assert "scoped ray stop" in down or not _ours_on_head(cluster), down[-3000:]
    deadline = time.monotonic() + 20
    while _ours_on_head(cluster) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _ours_on_head(cluster), "ray down left the head's Ray processes running"
    print(f"ray up + exec + submit + down: {time.monotonic() - started:.0f} s (async submit {async_seconds:.0f} s)")


def _check_async_submit(cluster: Cluster) -> float:
    """``ray submit infra/submit_run.py`` of a one-candidate async run: its
    coordinator task takes no resources, so the trainer actor gets the head's
    only ``trainer``; the pool's shards land, the candidate is gated, every
    MLflow run is FINISHED."""
    out = cluster.base / "run-async"
    overrides = {**FIT_TWO_CPUS, "run.generations": 1, "run.candidate_every_steps": 10,
                 "run.trainer_resource": "trainer"}  # fmt: skip
    sets = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    submitted = cluster.ray(
        "submit", str(cluster.config), str(INFRA / "submit_run.py"), "--",
        "--ray-address", f"127.0.0.1:{cluster.ports['port']}", "--preset", "tiny", *sets, "--out", str(out),
        timeout=240, name="submit-async",
    )  # fmt: skip
    assert "submit_run: run.mode async" in submitted, submitted[-4000:]
    line = next((ln for ln in submitted.splitlines() if ln.startswith("submit_run: {")), None)
    assert line is not None, submitted[-4000:]
    summary = json.loads(line.removeprefix("submit_run: "))
    assert summary["exit"] == 0 and summary["ran_on"] == "any node" and summary["candidates"] == 1, summary
    ledger = entries(out / "ledger.jsonl")
    assert [(e["generation"], e["stage"]) for e in ledger if e["stage"] in ("candidate", "gate")] == [
        (1, "candidate"), (1, "gate")]  # fmt: skip
    assert assert_games_once(out)  # the pool's shards, each game once
    assert list((out / "shards").glob("gen0000-task*.parquet"))
    assert_mlflow(out, 1)
    return float(summary["seconds"])


def _listening(port: int) -> set[str]:
    """The addresses with a TCP socket listening on ``port``."""
    import psutil

    return {c.laddr.ip for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.laddr.port == port}


@contextlib.contextmanager
def _tunnel(cluster: Cluster, remote: int, name: str) -> Iterator[int]:
    """``ray dashboard CONFIG --port L --remote-port R``: an SSH tunnel from a
    free local port L to the head's 127.0.0.1:R (any service, not only the
    dashboard). Yields L."""
    local = _free_ports(1)[0]
    with open(cluster.logs / f"{name}.log", "w") as log:
        tunnel = subprocess.Popen([str(RAY_CLI), "dashboard", str(cluster.config), "--port", str(local),
                                   "--remote-port", str(remote)], cwd=ROOT, env=cluster.env, stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        yield local
    finally:
        os.killpg(tunnel.pid, signal.SIGTERM)
        tunnel.wait(timeout=30)


def _get(url: str, token: str | None = None, wait: float = 60.0) -> bytes:
    """The body of a GET that answers 200, retried until ``wait`` runs out."""
    import urllib.error
    import urllib.request

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as response:
                return response.read()
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _check_dashboard(cluster: Cluster, token: str) -> None:
    """The dashboard binds 127.0.0.1 only, `ray dashboard` tunnels to it, and
    its API wants the token."""
    import urllib.error

    remote = cluster.ports["dashboard-port"]
    deadline = time.monotonic() + 60
    while not _listening(remote) and time.monotonic() < deadline:
        time.sleep(1)
    assert _listening(remote) == {"127.0.0.1"}, _listening(remote)
    with _tunnel(cluster, remote, "dashboard") as local:
        assert b"ray_version" in _get(f"http://127.0.0.1:{local}/api/version", token)
        with pytest.raises(urllib.error.HTTPError) as refused:  # no token, no API
            _get(f"http://127.0.0.1:{local}/api/version", wait=0)
        assert refused.value.code in (401, 403)


def _check_mlflow(cluster: Cluster, store: Path) -> None:
    """`ray exec CONFIG 'mlflow ui ... --host 127.0.0.1'` on the head, reached
    through a `ray dashboard --remote-port` tunnel."""
    remote = _free_ports(1)[0]
    command = f"mlflow ui --backend-store-uri sqlite:///{store} --host 127.0.0.1 --port {remote} --workers 1"
    with open(cluster.logs / "mlflow.log", "w") as log:
        server = subprocess.Popen([str(RAY_CLI), "exec", str(cluster.config), command], cwd=ROOT, env=cluster.env,
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)  # fmt: skip
    try:
        with _tunnel(cluster, remote, "mlflow-tunnel") as local:
            url = f"http://127.0.0.1:{local}/api/2.0/mlflow/experiments/search?max_results=50"
            try:
                body = _get(url, wait=90)
            except OSError as error:
                raise AssertionError(f"{error}\n{(cluster.logs / 'mlflow.log').read_text()[-3000:]}") from None
            assert b'"zerochess"' in body, body[:2000]
            assert _listening(remote) == {"127.0.0.1"}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def _ours_on_head(cluster: Cluster) -> list:
    """Live processes started on the head (their HOME is the sshd's SetEnv HOME)."""
    import psutil

    return [proc for proc in psutil.process_iter(["environ", "status"])
            if (proc.info["environ"] or {}).get("HOME") == str(cluster.server_home)
            and proc.info["status"] != psutil.STATUS_ZOMBIE]  # fmt: skip
