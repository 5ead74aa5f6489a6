"""Open an HTML file in headless Chromium and report what a reader would see go wrong.

Collected over the whole visit: console errors (``console.error``), uncaught exceptions, failed loads (the browser's
error log: a broken image or iframe source) and ``<img>`` elements that did not load (``naturalWidth == 0``).

A Snakemake report (one HTML file; a React app whose sections open by JavaScript) is also walked: every category /
subcategory of its global ``categories`` is opened (and must list each of its results by file name), every image
result is shown and must load, every HTML result is shown in its iframe and must have a body, and the rule graph and
run statistics views are opened. Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``,
NUL-separated JSON on file descriptors 3 and 4), so nothing but the browser itself is needed.

``python -m tools.browser_check REPORT.html [--screenshot PNG]`` prints the findings and exits 1 on any.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unstereo.errors import ResourceError

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")

# The walk through a Snakemake report (runs in the page; resolves to a JSON-able summary).
_WALK_REPORT = r"""
(async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const out = {sections: [], problems: [], images_checked: 0, html_checked: 0};
  if (typeof categories === "undefined" || typeof app === "undefined") { out.snakemake = false; return out; }
  out.snakemake = true;
  const base = (p) => p.split("/").pop();
  const brokenImages = () => [...document.images].filter((i) => !(i.complete && i.naturalWidth > 0))
      .map((i) => (i.getAttribute("src") || "").slice(0, 60));
  const settle = async () => { for (let i = 0; i < 50; i++) { await sleep(100);
      if ([...document.images].every((im) => im.complete)) break; } };
  for (const view of ["rulegraph", "stats"]) {
    app.setView({content: view}); await settle();
    out.sections.push("view:" + view);
  }
  for (const cat of Object.keys(categories)) {
    for (const sub of Object.keys(categories[cat])) {
      // as a reader clicks: the menu, the category, then the subcategory (switching straight from one
      // subcategory to another keeps the old list: the results component is reused, not remounted)
      app.setView({navbarMode: "menu"}); await settle();
      app.showCategory(cat); await settle();
      app.setView({navbarMode: "subcategory", category: cat, subcategory: sub}); await settle();
      const label = sub && sub !== cat ? cat + " / " + sub : cat;
      out.sections.push(label);
      const text = document.body.innerText;
      for (const path of categories[cat][sub]) {
        if (!text.includes(base(path))) out.problems.push(`section ${label}: result ${base(path)} not listed`);
        const entry = results[path];
        const mime = entry.mime_type || "";
        if (mime.startsWith("image/")) {
          app.setView({content: "img", contentPath: entry.data_uri, resultPath: path}); await settle();
          const shown = [...document.images].filter((i) => i.getAttribute("src") === entry.data_uri);
          out.images_checked += 1;
          if (!shown.length) out.problems.push(`image ${base(path)}: not shown`);
          else if (!shown.every((i) => i.complete && i.naturalWidth > 0)) out.problems.push(`image ${base(path)}: does not load`);
        } else if (mime === "text/html") {
          app.setView({content: "html", contentPath: entry.data_uri, resultPath: path});
          // a data: URI frame is cross-origin (its document is not readable): the frame must show the result's
          // URI, and the decoded HTML must have text
          let ok = false;
          for (let i = 0; i < 50 && !ok; i++) { await sleep(100);
            ok = [...document.querySelectorAll("iframe")].some((f) => f.getAttribute("src") === entry.data_uri);
          }
          if (ok && entry.data_uri.startsWith("data:")) {
            const body = entry.data_uri.slice(entry.data_uri.indexOf(",") + 1);
            const html = entry.data_uri.slice(0, entry.data_uri.indexOf(",")).endsWith(";base64")
              ? new TextDecoder().decode(Uint8Array.from(atob(body), (c) => c.charCodeAt(0))) : decodeURIComponent(body);
            const doc = new DOMParser().parseFromString(html, "text/html");
            ok = !!(doc.body && doc.body.textContent.trim());
          }
          out.html_checked += 1;
          if (!ok) out.problems.push(`html ${base(path)}: empty or not shown`);
        }
      }
      for (const src of brokenImages()) out.problems.push(`section ${label}: broken image ${src}`);
    }
  }
  return out;
})()
"""


@dataclass
class CheckResult:
    """What the visit found; ``ok`` when nothing went wrong."""

    path: str
    console_errors: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    images_checked: int = 0
    html_checked: int = 0
    snakemake_report: bool = False
    value: Any = None  # what the ``evaluate`` expression of check_html returned

    @property
    def ok(self) -> bool:
        return not (self.console_errors or self.broken_images or self.problems)

    def summary(self) -> str:
        lines = [
            f"{self.path}: {'OK' if self.ok else 'PROBLEMS'}; {len(self.sections)} section(s) opened, "
            f"{self.images_checked} image(s) and {self.html_checked} HTML result(s) shown"
        ]
        lines += [f"  console error: {m}" for m in self.console_errors]
        lines += [f"  broken image: {m}" for m in self.broken_images]
        lines += [f"  {m}" for m in self.problems]
        return "\n".join(lines)


def find_browser() -> str | None:
    """Path of a Chromium-family browser on PATH (env ``UNSTEREO_CHROMIUM`` first), or None."""
    env = os.environ.get("UNSTEREO_CHROMIUM")
    if env:
        return shutil.which(env) or (env if Path(env).is_file() else None)
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class _Pipe:
    """DevTools protocol over Chromium's debugging pipe: send commands, collect events."""

    def __init__(self, browser: str, profile: str, width: int, height: int):
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def wire() -> None:  # in the child: its fd 3 reads our commands, its fd 4 writes answers
            import fcntl

            # Copy both ends above 4 first: a pipe end may itself be fd 3 or 4 (a fresh process), and dup2 onto the
            # same number is a no-op that leaves close-on-exec set, so the browser would start without its pipe.
            r, w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child_r, from_child_w))
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [browser, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                f"--user-data-dir={profile}", f"--window-size={width},{height}",
                "--allow-file-access-from-files", "about:blank"]  # fmt: skip
        # close_fds=False: the child's fds 3 and 4 are made by dup2 after the fork and must survive the exec (every
        # other descriptor Python opened is non-inheritable and closes on exec anyway).
        self.proc = subprocess.Popen(
            args, preexec_fn=wire, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from the browser")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    raise ResourceError("the browser closed its debugging pipe (did it start?)")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60):
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise ResourceError(f"browser: {method} failed: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        if any(e.get("method") == method for e in self.events):
            return True
        while time.monotonic() < deadline:
            try:
                event = self._read_message(deadline)
            except TimeoutError:
                return False
            self.events.append(event)
            if event.get("method") == method:
                return True
        return False

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - the browser may already be gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


def _console_errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        method, p = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            out.append(f"{entry.get('text', '')} {entry.get('url', '')[:80]}".strip())
    return out


def check_html(
    path: str | Path,
    screenshot: str | Path | None = None,
    browser: str | None = None,
    timeout: float = 120,
    size: tuple[int, int] = (1400, 900),
    show: str | None = None,
    evaluate: str | None = None,
) -> CheckResult:
    """Open ``path`` in headless Chromium, walk it (a Snakemake report: every section and result) and return the
    findings; ``screenshot``: a PNG of the page afterwards (a report is first set to ``show``, a category name,
    when given); ``evaluate``: a JavaScript expression run after the walk, its JSON-able value in ``result.value``
    (a page's own checks, e.g. how many table rows it shows). Raises ResourceError when no browser is found."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(path)
    browser = browser or find_browser()
    if browser is None:
        raise ResourceError(
            "no Chromium found (install the Debian package `chromium` or set UNSTEREO_CHROMIUM)"
        )
    result = CheckResult(str(path))
    with tempfile.TemporaryDirectory(prefix="unstereo-chromium-") as profile:
        cdp = _Pipe(browser, profile, *size)
        try:
            target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                cdp.send(f"{domain}.enable", session=session)
            cdp.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            cdp.send("Page.navigate", {"url": path.as_uri()}, session=session)
            if not cdp.wait_event("Page.loadEventFired", timeout):
                result.problems.append(f"page did not finish loading in {timeout:.0f} s")
            walk = cdp.send(
                "Runtime.evaluate",
                {"expression": _WALK_REPORT, "awaitPromise": True, "returnByValue": True},
                session=session,
                timeout=timeout,
            )
            value = walk.get("result", {}).get("value") or {}
            if "exceptionDetails" in walk:
                result.problems.append(f"walk failed: {walk['exceptionDetails'].get('text')}")
            result.snakemake_report = bool(value.get("snakemake"))
            result.sections = list(value.get("sections", []))
            result.problems += list(value.get("problems", []))
            result.images_checked = int(value.get("images_checked", 0))
            result.html_checked = int(value.get("html_checked", 0))
            broken = cdp.send(
                "Runtime.evaluate",
                {
                    "expression": "[...document.images].filter(i => !(i.complete && i.naturalWidth > 0))"
                    ".map(i => (i.getAttribute('src') || '').slice(0, 80))",
                    "returnByValue": True,
                },
                session=session,
            )
            result.broken_images = list(broken.get("result", {}).get("value") or [])
            if evaluate is not None:
                got = cdp.send(
                    "Runtime.evaluate", {"expression": evaluate, "returnByValue": True}, session=session
                )
                result.value = got.get("result", {}).get("value")
            if screenshot is not None:
                if show and result.snakemake_report:
                    expr = (
                        f"(async () => {{ app.setView({{content: 'rulegraph'}}); app.showCategory({json.dumps(show)});"
                        " await new Promise(r => setTimeout(r, 1500)); return true; })()"
                    )
                    cdp.send("Runtime.evaluate", {"expression": expr, "awaitPromise": True}, session=session)
                shot = cdp.send("Page.captureScreenshot", {"format": "png"}, session=session)
                Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
                Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
            result.console_errors = _console_errors(cdp.events)
        finally:
            cdp.close()
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html", help="HTML file (e.g. results/report.html)")
    ap.add_argument("--screenshot", help="write a PNG of the page")
    ap.add_argument("--show", help="report category to show in the screenshot")
    args = ap.parse_args(argv)
    res = check_html(args.html, args.screenshot, show=args.show)
    print(res.summary())
    return 0 if res.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
