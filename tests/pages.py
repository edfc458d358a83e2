"""A real `jupyter server` with formgrader, and a real headless Chromium cut off from
every host but this one: what the instructor's browser sees."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from helpers import BIN

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class Server:
    """`jupyter server` in the course, with formgrader, on a free loopback port."""

    def __init__(self, course: Path):
        self.token = secrets.token_hex(12)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = course.parent / "server.log"
        env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
        self.process = subprocess.Popen(
            [str(BIN / "jupyter"), "server", f"--port={self.port}", "--ip=127.0.0.1", "--no-browser",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={course}", "--allow-root"],
            cwd=course, env=env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("GET", "/api/status")
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise AssertionError("jupyter server did not start:\n" + self.log.read_text()[-3000:]) from None
                time.sleep(0.3)

    def call(self, method: str, path: str, body=None):
        request = urllib.request.Request(
            self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
        return json.loads(text) if path.startswith("/formgrader/api") or path.startswith("/api") else text

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def launch_chromium(playwright):
    """Debian's Chromium, headless, with none of its own calls home."""
    assert Path(CHROMIUM).exists(), "apt-get install chromium (the README's test command does)"
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])


def offline_page(browser, context=None):
    """A page that may reach this machine only: like a campus lab with no internet."""
    page = context.new_page() if context else browser.new_page(viewport={"width": 1280, "height": 900})
    page.route("**/*", lambda request_route: request_route.continue_()
               if request_route.request.url.startswith(("file:", "http://127.0.0.1", "data:"))
               else request_route.abort())
    return page




def instructor_session(browser, server: Server):
    """A browser context logged in to the server as the instructor is, with JupyterLab open
    once: its login and ``_xsrf`` cookies are there, for whatever a page runs."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = offline_page(browser, context)
    page.goto(f"{server.base}/lab?token={server.token}")
    page.wait_for_load_state("domcontentloaded")
    page.close()
    assert any(cookie["name"] == "_xsrf" for cookie in context.cookies()), context.cookies()
    return context
