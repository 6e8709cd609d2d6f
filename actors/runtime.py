"""Ray start-up for every zerochess command: start or join a cluster with
token authentication on (``RAY_AUTH_MODE``), protect the token file, and, for
a local instance, start the reaper that ends Ray's processes when the driver
dies.  The commands (and ``actors/submit.py``) start Ray only through here.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import ray

log = logging.getLogger(__name__)


def init_ray(address: str | None = None, num_cpus: int | None = None, *, verbose: bool = False) -> None:
    """Start or join Ray once, with Ray's token authentication on.

    ``RAY_AUTH_MODE`` defaults to ``token``: a local instance then admits only
    clients holding the token of ``~/.ray/auth_token`` (Ray generates the file
    on the first start; ``ray get-auth-token --generate`` makes it for a
    cluster, whose configs copy it to every node), because Ray's GCS, raylet
    and workers listen on every interface of the machine, not only on
    127.0.0.1.  The same token serves this CLI, ``ray submit`` and the
    cluster.  Set ``RAY_AUTH_MODE=disabled`` only to join an old cluster that
    runs without tokens.

    With no ``address`` (and no ``RAY_ADDRESS`` in the environment) a new local
    instance is started: a cluster that ``ray start`` left on this machine is
    joined only when asked for (``address="auto"``, ``--ray-address auto``).

    Starting a local instance (on Linux) also starts a small reaper process:
    if this driver dies without shutting Ray down (SIGKILL, out of memory), the
    reaper ends the processes the instance started.  Ray's fate sharing ends
    its daemons, but its dashboard and runtime-env agents outlive a killed
    driver by a minute or two (they keep retrying the dead GCS).

    What the workers write reaches this driver's stderr, each line after
    ``(ActorName pid=...)``: their warnings and errors (a Stockfish restarted,
    a game aborted), not their progress notes, whose records stop at Python's
    last-resort handler (warnings and up).  Ray's own driver notices ("Started
    a local Ray instance") are kept to warnings too.  With ``verbose``
    (``--verbose``) the workers log everything, debug included, as the driver
    does (:func:`verbose_worker_logging`), and Ray's notices show."""
    if ray.is_initialized():
        return
    use_auth_mode()
    # The first error of a task ends the command; the others are not printed again.
    os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
    if address is None and not os.environ.get("RAY_ADDRESS"):
        address = "local"
    if address == "local" and sys.platform.startswith("linux"):
        start_reaper()
    check_reachable(address or os.environ.get("RAY_ADDRESS", ""))
    try:
        ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, **_logging_options(verbose))
        protect_token()  # Ray writes it on the first start, readable by every local user
    except ConnectionError as error:
        raise RayUnreachableError(
            f"cannot join the Ray cluster at {address!r} (--ray-address / RAY_ADDRESS): "
            f"{str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__}"
        ) from error


def _logging_options(verbose: bool) -> dict[str, Any]:
    """``ray.init``'s logging arguments (see :func:`init_ray`).  The set-up hook
    is only for ``verbose``: a job with a runtime environment starts its
    workers a few seconds later."""
    if not verbose:
        return {"log_to_driver": True, "logging_level": logging.WARNING}
    return {"log_to_driver": True, "logging_level": logging.INFO,
            "runtime_env": {"worker_process_setup_hook": verbose_worker_logging}}  # fmt: skip


def verbose_worker_logging() -> None:
    """Ray's ``worker_process_setup_hook`` under ``--verbose``: a worker logs
    every record, debug included, in the driver's format (Ray forwards the
    lines to the driver's stderr)."""
    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s", force=True)


def use_auth_mode(default: str = "token") -> str:
    """Set ``RAY_AUTH_MODE`` (unless set already) and make this process obey it.

    Ray reads the mode into its cached config when it is imported; a mode set
    afterwards reaches the processes a local instance starts (through the
    environment) but not this driver, which then cannot talk to its own GCS
    ("Authentication token is missing").  Ray refreshes the cache the same
    way when it turns token mode on by itself.  Returns the mode."""
    os.environ.setdefault("RAY_AUTH_MODE", default)
    from ray._raylet import Config

    Config.initialize("")
    return os.environ["RAY_AUTH_MODE"]


TOKEN_FILE = Path.home() / ".ray" / "auth_token"


def protect_token(path: Path = TOKEN_FILE) -> None:
    """Make the Ray token file readable by its owner only (Ray creates it
    with the umask's mode, usually 0644: any local user could join)."""
    try:
        if path.exists() and path.stat().st_mode & 0o077:
            path.chmod(0o600)
    except OSError as error:
        log.warning("cannot restrict %s to its owner: %s", path, error)


class RayUnreachableError(ValueError):
    """The Ray cluster asked for cannot be reached (or refused this client)."""


def check_reachable(address: str, timeout_s: float = 3.0) -> None:
    """Fail at once, naming ``address``, when a ``HOST:PORT`` cluster address
    does not accept connections (``ray.init`` would retry for a minute)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise RayUnreachableError(
            f"cannot reach the Ray cluster at {address!r} (--ray-address / RAY_ADDRESS): "
            f"{error.strerror or error}"
        ) from error


OWNER_ENV = "ZEROCHESS_RAY_OWNER"
"""Environment variable marking every process a driver's local Ray instance starts."""

# Run by a separate Python (no import of this package: it starts in milliseconds).
# It waits for the driver to end (EOF on its stdin, a pipe whose writer is the
# driver, or its parent process changed).  Then every process whose environment holds
# OWNER_ENV=<tag> (Ray's daemons, agents and workers, and what they started,
# such as Stockfish engines) gets SIGTERM, then SIGKILL.
_REAPER = r"""
import os, select, signal, sys, time
marker = sys.argv[1].encode()
driver = os.getppid()
spare = {os.getpid(), driver}
while os.getppid() == driver:  # re-parented: the driver is gone
    ready, _, _ = select.select([0], [], [], 0.5)
    if ready and not os.read(0, 65536):  # EOF: the driver is gone
        break
time.sleep(1.0)  # a driver that exits normally has shut Ray down already

def ours():
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spare:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            pass
    return found

for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
    for pid in ours():
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while ours() and time.monotonic() < deadline:
        time.sleep(0.1)
"""
_reaper: subprocess.Popen[bytes] | None = None  # holds the write end of its stdin open


def start_reaper() -> None:
    """Mark the processes started from now on with ``OWNER_ENV`` and start the reaper."""
    global _reaper
    if _reaper is not None and _reaper.poll() is None:
        return
    tag = f"{os.getpid()}-{uuid.uuid4().hex}"
    os.environ[OWNER_ENV] = tag  # inherited by Ray's processes and everything they start
    _reaper = subprocess.Popen(
        [sys.executable, "-c", _REAPER, f"{OWNER_ENV}={tag}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C at the terminal must not end it before the driver
    )


def join_cluster(address: str) -> None:
    """Join the running cluster at ``address`` (``ray submit``'s entry), with
    ``RAY_AUTH_MODE`` (and the token) from the environment, as for the rest of
    the cluster; unset, the mode is ``token``, as for every zerochess command."""
    use_auth_mode()
    ray.init(address=address)


def cluster_resources() -> dict[str, float]:
    """The resources of the Ray cluster this process has joined (``ray.cluster_resources``)."""
    return ray.cluster_resources()


def send_by_value(module: ModuleType) -> None:
    """Have Ray send ``module``'s classes and functions to its workers by
    value rather than by name: for a module the workers cannot import (a
    script's neighbour in ``bench/``, loaded from its folder)."""
    ray.cloudpickle.register_pickle_by_value(module)


def shutdown_ray() -> None:
    """Leave (and, if this process started it, stop) the Ray cluster; nothing when none is joined."""
    ray.shutdown()
