"""(slow) The address ``zerochess run`` prints opens MLflow's UI on the
experiment's runs table, not on MLflow 3's GenAI pages.

A real store made by the project's own tracking code (the pipeline's parent
run with a metric), served by the printed ``mlflow ui`` command on a free
port, rendered by headless Chromium (Debian's ``chromium``, which ``make
test`` installs) in a fresh profile: a browser that never chose a side of the
UI, which MLflow 3.17 would open on its GenAI side."""

from __future__ import annotations

import html
import http.client
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import suppress
from pathlib import Path

import pytest

SERVER_START_S = 600.0
"""How long ``mlflow ui`` may take to answer: ~1 min on a busy 2-core
machine, 4.5 min on one three times oversubscribed."""
RENDER_S = 240
"""How long one Chromium render may take: ~0.5 min on a busy 2-core machine,
1 min on one three times oversubscribed."""
VIRTUAL_TIME_MS = 20_000
"""The page's own time budget: the UI's scripts and its calls to the server."""
RENDERS = 3
"""Renders tried before the page is taken as not showing the run."""
GENAI_TEXTS = ("Welcome to MLflow", "Token Usage", "Tool calls")
"""Texts of the GenAI landing page and of the GenAI overview of an experiment."""


def chromium() -> str:
    """The headless browser: Debian's ``chromium``; fails (not skips) when
    missing, since ``make test`` installs it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium not found: `make chromium` (run by `make test`) installs it")
    return found


def free_port() -> int:
    """A TCP port nothing listens on now (outside Ray's worker range)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_store(out: Path) -> tuple[str, str, str]:
    """A pipeline run's MLflow bookkeeping in ``out``, as ``zerochess run``
    starts it, with one metric: (tracking URI, experiment id, run name)."""
    from pipeline.config import load_config
    from pipeline.loop.tracker import Tracker

    tracker = Tracker(load_config(None, preset="tiny"), out)
    tracker.log_metrics(tracker.parent_id, {"loss/total": 5.9}, step=1)
    tracker.finish(tracker.parent_id)
    return tracker.uri, tracker.experiment_id, f"pipeline {out.resolve().name}"


def start_ui(tracking_uri: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """The printed ``mlflow ui`` command on ``port``, in its own process group."""
    from pipeline.training.tracking import mlflow_ui_command

    command = [*shlex.split(mlflow_ui_command(tracking_uri)), "--port", str(port), "--workers", "1"]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    with log.open("wb") as handle:
        return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip


def wait_for_ui(server: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until the server answers ``/health``; fails with its log if it exits or
    takes longer than ``SERVER_START_S``."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"mlflow ui exited with {server.returncode}:\n{log_tail(log)}")
        if answers(f"http://127.0.0.1:{port}/health"):
            return
        time.sleep(1.0)
    pytest.fail(f"mlflow ui did not answer in {SERVER_START_S:.0f} s:\n{log_tail(log)}")


def log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 OK within 5 s."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (OSError, http.client.HTTPException):  # URLError is an OSError
        return False


def stop(process: subprocess.Popen[bytes]) -> None:
    """End ``process`` and its process group: SIGTERM, then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 15.0)):
        with suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
            return


def render(browser: str, url: str, profile: Path) -> str:
    """The DOM of ``url`` after the page's scripts ran, as headless Chromium
    dumps it ("" if Chromium failed or ran out of time)."""
    command = [browser, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}",
               f"--virtual-time-budget={VIRTUAL_TIME_MS}", "--dump-dom", url]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # fmt: skip
    try:
        dom, _ = process.communicate(timeout=RENDER_S)
    except subprocess.TimeoutExpired:
        return ""
    finally:
        stop(process)
    return dom.decode("utf-8", errors="replace") if process.returncode == 0 else ""


def page_text(dom: str) -> str:
    """The visible text of ``dom``: no scripts, styles or tags, spaces folded."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.DOTALL | re.IGNORECASE)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text))).strip()


def page_title(dom: str) -> str:
    found = re.search(r"<title>(.*?)</title>", dom, flags=re.DOTALL | re.IGNORECASE)
    return html.unescape(found.group(1)).strip() if found else ""


@pytest.mark.slow
def test_the_printed_address_opens_the_runs_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.training.tracking import mlflow_runs_url

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    browser = chromium()
    uri, experiment_id, run_name = make_store(tmp_path / "ui-check")
    port = free_port()
    url = mlflow_runs_url(experiment_id, port)
    log = tmp_path / "mlflow-ui.log"
    server = start_ui(uri, port, log)
    try:
        wait_for_ui(server, port, log)
        text, title = "", ""
        for attempt in range(RENDERS):  # a fresh profile each time: no remembered side of the UI
            dom = render(browser, url, tmp_path / f"profile{attempt}")
            text, title = page_text(dom), page_title(dom)
            if run_name in text:
                break
    finally:
        stop(server)
    shown = f"{url} showed (title {title!r}):\n{text[:1500]}"
    assert run_name in text, f"the runs table lacks the run {run_name!r}; {shown}"
    assert title.startswith("Runs"), f"not the Runs tab; {shown}"
    assert not [t for t in GENAI_TEXTS if t in text], f"a GenAI page; {shown}"


def test_the_hint_names_the_store_and_the_experiments_runs() -> None:
    from pipeline.training.tracking import mlflow_ui_hint

    hint = mlflow_ui_hint("sqlite:////tmp/run/mlflow.db", "7")
    assert "ui --backend-store-uri sqlite:////tmp/run/mlflow.db --host 127.0.0.1" in hint
    assert hint.endswith("then open http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning")
