"""Screenshot of MLflow's compare-runs page for two (or more) runs, as the
README shows it (``docs/mlflow-compare.png``).

It starts ``mlflow ui`` on the store, drives Debian's headless ``chromium``
through the DevTools protocol (to close the assistant side panel and turn on
*Show diff only*, which a plain ``chromium --screenshot`` cannot), saves the
PNG, and stops both processes it started::

    .venv/bin/python docs/mlflow_compare_screenshot.py \\
        --tracking-uri sqlite:////tmp/x/mlflow.db --runs RUN_A RUN_B --out docs/mlflow-compare.png

Needs ``chromium`` (``apt-get install chromium``), aiohttp and Pillow (both
come with the project's dependencies).  Ports stay out of Ray's worker range
10002-19999.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import io
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip

# Runs in the page once it has rendered: close the assistant panel, switch on
# "Show diff only" for the parameters, fold the visualizations, and open the
# pipeline's Elo plot (elo.png) in the artifacts, side by side.
TIDY_PAGE = """
(() => {
  const done = [];
  const close = document.querySelector('[data-component-id="mlflow.assistant.chat_panel.close"]');
  if (close) { close.click(); done.push("assistant closed"); }
  const label = [...document.querySelectorAll("label")].find(e => e.textContent.trim() === "Show diff only");
  const toggle = label && label.closest("[data-component-id]").querySelector("button, input");
  if (toggle) { toggle.click(); done.push("parameters: diff only"); }
  const header = [...document.querySelectorAll('[class*="collapse-header"]')]
      .find(e => e.textContent.trim().startsWith("Visualizations"));
  if (header) { header.click(); done.push("visualizations folded"); }
  const plot = document.evaluate("//*[normalize-space(text())='elo.png']", document, null,
      XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue;
  if (plot) { plot.click(); done.push("artifacts: elo.png"); }
  return done.join(", ");
})()
"""


def compare_url(base: str, runs: list[str], experiments: list[str]) -> str:
    """MLflow 3's compare page: ``#/compare-runs?runs=[...]&experiments=[...]``."""
    query = "&".join(
        f"{key}={urllib.parse.quote(json.dumps(value, separators=(',', ':')), safe='')}"
        for key, value in (("runs", runs), ("experiments", experiments))
    )
    return f"{base}/#/compare-runs?{query}"


def wait_http(url: str, timeout_s: float) -> Any:
    """GET ``url`` until it answers 200 (JSON bodies are parsed)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = response.read()
                try:
                    return json.loads(body)
                except ValueError:
                    return body
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not answer in {timeout_s:.0f} s") from None
            time.sleep(0.5)


@contextlib.contextmanager
def started(command: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` in a process group of its own for the block, then stop
    that group (the process and its children: uvicorn workers, renderers)."""
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class DevTools:
    """The few DevTools protocol calls this script needs, over aiohttp."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        await self.socket.send_json({"id": number, "method": method, "params": params})
        while True:
            message = await self.socket.receive_json()
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")


async def shoot(
    debug_port: int, url: str, width: int, height: int, ready_text: str, timeout_s: float
) -> bytes:
    import aiohttp

    targets = wait_http(f"http://127.0.0.1:{debug_port}/json/list", timeout_s)
    page = next(target for target in targets if target.get("type") == "page")
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as socket,
    ):
        tools = DevTools(socket)
        await tools.call("Page.enable")
        await tools.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        await tools.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout_s
        while not await tools.evaluate(
            f"document.body && document.body.innerText.includes({ready_text!r})"
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never showed {ready_text!r}")
            await asyncio.sleep(0.5)
        # let the tables, the artifact list and the side panel finish rendering
        for _ in range(20):
            await asyncio.sleep(1)
            if await tools.evaluate("document.body.innerText.includes('elo.png')"):
                break
        await asyncio.sleep(1)
        print("page:", await tools.evaluate(TIDY_PAGE), file=sys.stderr)
        await asyncio.sleep(3)  # the images of the artifact preview
        shot = await tools.call("Page.captureScreenshot", format="png")
    return base64.b64decode(shot["data"])


def shrink(png: bytes, max_bytes: int) -> bytes:
    """Quantize (then scale down) the PNG until it fits ``max_bytes``."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    scale = 1.0
    while True:
        size = (round(image.width * scale), round(image.height * scale))
        small = image.resize(size, Image.LANCZOS) if scale < 1 else image
        buffer = io.BytesIO()
        small.quantize(colors=128, method=Image.MEDIANCUT).save(buffer, "PNG", optimize=True)
        if buffer.tell() <= max_bytes or scale < 0.5:
            return buffer.getvalue()
        scale *= 0.9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", required=True, help="the MLflow store holding the runs")
    parser.add_argument("--runs", nargs="+", required=True, help="run ids to compare")
    parser.add_argument("--out", default="docs/mlflow-compare.png")
    parser.add_argument("--port", type=int, default=5055, help="mlflow ui port")
    parser.add_argument("--debug-port", type=int, default=9333, help="chromium DevTools port")
    parser.add_argument("--size", default="1400x900", help="window WIDTHxHEIGHT")
    parser.add_argument("--max-bytes", type=int, default=300_000)
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args(argv)

    from mlflow.tracking import MlflowClient

    client = MlflowClient(args.tracking_uri)
    experiments = sorted({client.get_run(run).info.experiment_id for run in args.runs})
    width, height = map(int, args.size.split("x"))
    base = f"http://127.0.0.1:{args.port}"
    url = compare_url(base, args.runs, experiments)
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    with tempfile.TemporaryDirectory() as scratch:
        ui = [str(mlflow_bin), "ui", "--backend-store-uri", args.tracking_uri, "--host", "127.0.0.1",
              "--port", str(args.port)]  # fmt: skip
        browser = ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={scratch}/profile",
                   f"--window-size={width},{height}", f"--remote-debugging-port={args.debug_port}",
                   "about:blank"]  # fmt: skip
        with started(ui, Path(scratch) / "mlflow.log"):
            wait_http(f"{base}/health", args.timeout)
            with started(browser, Path(scratch) / "chromium.log"):
                png = asyncio.run(
                    shoot(
                        args.debug_port,
                        url,
                        width,
                        height,
                        f"Comparing {len(args.runs)} Runs",
                        args.timeout,
                    )
                )
    data = shrink(png, args.max_bytes)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_bytes(data)
    print(f"{args.out}: {len(data)} bytes; {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
