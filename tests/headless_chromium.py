"""Open a local HTML file in Debian's headless Chromium through the DevTools protocol: collect
console messages, uncaught exceptions and failed loads, and take a screenshot. Chromium is
started with no network features and a fresh profile, and stopped before returning."""
from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--remote-debugging-port=0", "--remote-allow-origins=*")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@dataclass
class PageVisit:
    problems: list  # console errors/warnings, exceptions, failed loads, as text
    console: list  # every console message, as text
    screenshot_png: bytes
    height: int  # the page's full height in CSS pixels


class _DevTools:
    def __init__(self, ws_url: str):
        import websocket
        self.socket = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 30.0) -> None:
        deadline = time.time() + timeout
        while not any(e.get("method") == event for e in self.events):
            if time.time() > deadline:
                raise TimeoutError(f"no {event} within {timeout} s")
            self.events.append(json.loads(self.socket.recv()))


def _devtools_port(profile: Path, process, timeout: float = 30.0) -> int:
    deadline = time.time() + timeout
    marker = profile / "DevToolsActivePort"
    while time.time() < deadline:
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with code {process.returncode} before it listened")
        time.sleep(0.05)
    raise TimeoutError("chromium did not open its DevTools port")


def _end_group(process) -> None:
    """SIGTERM to chromium's process group, SIGKILL to what is left after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        deadline = time.time() + wait
        while time.time() < deadline:  # the helpers leave after the browser
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def visit(page: Path, width: int = 1280, height: int = 1600, settle_s: float = 0.5) -> PageVisit:
    """Load ``page`` (a local file), return what the console said and a screenshot of the
    top ``width`` x ``height`` CSS pixels."""
    chromium = find_chromium()
    # chromium's helper processes (renderer, crash handler) may still write the profile when
    # the browser itself has exited: the whole process group is ended, and a file they leave
    # behind does not fail the visit
    with tempfile.TemporaryDirectory(prefix="ptxds-chromium-", ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={profile}",
                                    f"--window-size={width},{height}", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port = _devtools_port(Path(profile), process)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                target = next(t for t in json.load(response) if t["type"] == "page")
            tools = _DevTools(target["webSocketDebuggerUrl"])
            for domain in ("Page", "Runtime", "Log", "Network"):
                tools.call(f"{domain}.enable")
            tools.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                       deviceScaleFactor=1, mobile=False)
            tools.call("Page.navigate", url=page.resolve().as_uri())
            tools.wait_for("Page.loadEventFired")
            time.sleep(settle_s)
            metrics = tools.call("Page.getLayoutMetrics")
            shot = tools.call("Page.captureScreenshot", format="png")
            tools.call("Runtime.evaluate", expression="0")  # drain events sent before the shot
            tools.socket.close()
        finally:
            _end_group(process)
    problems, console = [], []
    for event in tools.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            console.append(f"{params['type']}: {text}")
            if params["type"] in ("error", "warning", "assert"):
                problems.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            problems.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            problems.append(f"log {params['entry']['level']}: {params['entry']['text']} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            problems.append(f"load failed: {params.get('errorText')}")
    return PageVisit(problems=problems, console=console, screenshot_png=base64.b64decode(shot["data"]),
                     height=int(metrics["cssContentSize"]["height"]))
