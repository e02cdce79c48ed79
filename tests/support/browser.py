"""A real headless Chromium for the report tests, driven over the Chrome DevTools protocol on a pipe
(``--remote-debugging-pipe``: the browser reads commands on its fd 3 and writes on its fd 4, each
message JSON ended by a NUL byte), with the standard library only.

:func:`load` opens a page, waits for its load event and a quiet moment, and returns every request
the page made, every failed request, every script exception and console or log error, and a PNG
screenshot of the whole page. Host names resolve to nothing (``--host-resolver-rules``), so a page
that reaches for the network gets a failed request, never a silent success.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

EXECUTABLES = ("chromium", "chromium-browser", "google-chrome")


def executable() -> str:
    """The Chromium to run; an error (never a skip) when there is none."""
    for name in EXECUTABLES:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("headless Chromium is required for the report tests: install the Debian package chromium")


@dataclass
class Page:
    """What loading a page did."""

    requests: list[str] = field(default_factory=list)  # every URL requested
    failed: list[str] = field(default_factory=list)  # "url: error" of each failed request
    exceptions: list[str] = field(default_factory=list)  # uncaught script exceptions
    errors: list[str] = field(default_factory=list)  # console.error calls and error log entries
    png: bytes = b""
    height: int = 0
    value: Any = None  # what load's ``expression`` gave, evaluated in the loaded page


class Browser:
    """One headless Chromium process and its DevTools pipe."""

    def __init__(self, timeout: float = 60) -> None:
        self.timeout, self.next_id, self.buffer, self.events = timeout, 0, b"", []
        self.profile = tempfile.mkdtemp(prefix="recsql-chromium-")
        commands_read, self.commands = os.pipe()
        self.replies, replies_write = os.pipe()

        def on_fds() -> None:  # in the child: the pipe ends on the fds the protocol names
            # copies first: an end may already be fd 3 or 4, and dup2 onto itself would keep it close-on-exec
            reading, writing = os.dup(commands_read), os.dup(replies_write)
            os.dup2(reading, 3)
            os.dup2(writing, 4)
            for fd in (3, 4):
                os.set_inheritable(fd, True)

        self.process = subprocess.Popen(
            [executable(), "--headless=new", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "about:blank"],
            preexec_fn=on_fds, close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(replies_write)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send a command and wait for its answer (events that arrive meanwhile are kept)."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read(self.timeout)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, event: str, timeout: float) -> None:
        if any(e.get("method") == event for e in self.events):
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self._read(deadline - time.monotonic())
            self.events.append(message)
            if message.get("method") == event:
                return
        raise TimeoutError(f"no {event} within {timeout} s")

    def drain(self, seconds: float) -> None:
        """Collect the events of the next ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.replies], [], [], left)[0] and b"\0" not in self.buffer:
                return
            self.events.append(self._read(max(left, 0.01)))

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.replies], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self.replies, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium exited (status {self.process.poll()})")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self.commands, self.replies):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


def load(url: str, width: int = 1280, max_height: int = 16000, timeout: float = 60,
         expression: str | None = None) -> Page:
    """Open ``url`` in a fresh headless Chromium and report what happened, with a full-page screenshot
    (and the value of the JavaScript ``expression``, evaluated in the page, as JSON would carry it)."""
    browser = Browser(timeout)
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            browser.call(f"{domain}.enable", session=session)
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
        browser.call("Page.navigate", {"url": url}, session)
        browser.wait_for("Page.loadEventFired", timeout)
        browser.drain(1.0)
        layout = browser.call("Page.getLayoutMetrics", session=session)
        height = int(min(max_height, (layout.get("cssContentSize") or layout["contentSize"])["height"]))
        shot = browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                       "clip": {"x": 0, "y": 0, "width": width, "height": height,
                                                                "scale": 1}}, session)
        page = Page(png=base64.b64decode(shot["data"]), height=height)
        if expression is not None:
            found = browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
            if "exceptionDetails" in found:
                raise RuntimeError(f"{expression}: {json.dumps(found['exceptionDetails'])[:500]}")
            page.value = found["result"].get("value")
        for event in browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Network.requestWillBeSent":
                page.requests.append(params["request"]["url"])
            elif method == "Network.loadingFailed":
                page.failed.append(f"{params.get('requestId')}: {params.get('errorText')}")
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                # the message first: a long page path (twice in the details) must not cut it off
                page.exceptions.append((details.get("exception", {}).get("description", "") + " "
                                        + json.dumps(details))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                page.errors.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                page.errors.append(params["entry"].get("text", ""))
        return page
    finally:
        browser.close()
