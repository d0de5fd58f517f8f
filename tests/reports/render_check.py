#!/usr/bin/env python3
"""Renders a saddlescope report page in headless Chromium and checks it, standard library only.

    render_check.py INDEX_HTML --screenshot OUT.png [--chromium /usr/bin/chromium] [--timeout 60]

Drives Chromium through the DevTools protocol over a pipe (--remote-debugging-pipe: file descriptors 3
and 4, NUL-terminated JSON messages), so no port and no network are involved. Fails (exit 1, one line
each) when the page throws, logs a console or network error, or any <figure> lacks an SVG with a
non-empty box or a caption, when the file is larger than --max-bytes (a page a browser opens at once),
or when the first screen takes longer than --max-first-screen-s to draw (first contentful paint, or the
load event where Chromium reports no paint). Writes a full-page PNG screenshot either way.
"""
import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, chromium, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        # Move our ends clear of 3 and 4 first, so that wiring the child cannot overwrite one with the other.
        moved = os.dup(to_browser_r), os.dup(from_browser_w)
        os.close(to_browser_r)
        os.close(from_browser_w)
        to_browser_r, from_browser_w = moved

        def wire():  # in the child: its fd 3 reads our commands, fd 4 writes its replies (kept by pass_fds)
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer, self.next_id, self.events, self.session = b"", 0, [], None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the pipe (it exited)")
                self.buffer += chunk
        msg, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, timeout=30, session=True):
        want = self.send(method, params, session)
        deadline = time.time() + timeout
        while True:
            msg = self.read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error'].get('message')}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method, timeout):
        deadline = time.time() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            msg = self.read(deadline)
            if msg.get("method") == method:
                return msg
            self.events.append(msg)

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


FIGURES_JS = """(() => {
  const out = [];
  for (const f of document.querySelectorAll('figure')) {
    const svg = f.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : null;
    const drawn = svg ? svg.querySelectorAll('path, polyline, polygon, circle, rect, use').length : 0;
    out.push({id: f.id, svg: !!svg, width: box ? box.width : 0, height: box ? box.height : 0, drawn: drawn,
              caption: (f.querySelector('figcaption') || {textContent: ''}).textContent.trim().length});
  }
  return JSON.stringify({figures: out, title: document.title, sections: document.querySelectorAll('section').length});
})()"""


# Milliseconds from navigation to the first contentful paint (the load event's end where none is reported).
TIMING_JS = """JSON.stringify((() => {
  const p = performance.getEntriesByName('first-contentful-paint')[0];
  if (p) return p.startTime;
  const n = performance.getEntriesByType('navigation')[0];
  return n ? n.loadEventEnd : performance.now();
})())"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--max-bytes", type=int, default=1_500_000)
    ap.add_argument("--max-first-screen-s", type=float, default=1.0)
    a = ap.parse_args()
    if not os.path.exists(a.chromium):
        print(f"render_check: no Chromium at {a.chromium} (scripts/setup.sh installs Debian's chromium)", file=sys.stderr)
        return 1
    problems = []
    size = os.path.getsize(a.page)
    if size > a.max_bytes:
        problems.append(f"the page is {size} bytes, over {a.max_bytes}")
    with tempfile.TemporaryDirectory(prefix="render-check-") as profile:
        b = Browser(a.chromium, profile)
        try:
            target = b.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
            b.session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                               session=False)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                b.call(f"{domain}.enable")
            b.call("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})
            url = "file://" + os.path.abspath(a.page)
            nav = b.call("Page.navigate", {"url": url})
            if nav.get("errorText"):
                problems.append(f"navigation failed: {nav['errorText']}")
            b.wait_event("Page.loadEventFired", a.timeout)
            result = b.call("Runtime.evaluate", {"expression": FIGURES_JS, "returnByValue": True})
            page = json.loads(result["result"]["value"])
            timing = b.call("Runtime.evaluate", {"expression": TIMING_JS, "returnByValue": True})
            first_screen_s = json.loads(timing["result"]["value"]) / 1000
            if first_screen_s > a.max_first_screen_s:
                problems.append(f"the first screen took {first_screen_s:.3f} s, over {a.max_first_screen_s} s")
            shot = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, timeout=a.timeout)
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            # Drain what arrived meanwhile.
            try:
                while True:
                    b.events.append(b.read(time.time() + 0.5))
            except TimeoutError:
                pass
        finally:
            b.close()
    for e in b.events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            problems.append("exception: " + p.get("exceptionDetails", {}).get("text", "?"))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            problems.append("console error: " + " ".join(str(x.get("value", x.get("description", ""))) for x in p.get("args", [])))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            problems.append("log error: " + p["entry"].get("text", "?") + " " + p["entry"].get("url", ""))
        elif m == "Network.loadingFailed":
            problems.append("network error: " + p.get("errorText", "?"))
        elif m == "Network.requestWillBeSent":
            u = p.get("request", {}).get("url", "")
            if not u.startswith("file://") and not u.startswith("data:") and u != "about:blank":
                problems.append("the page requested " + u)
    if not page["figures"]:
        problems.append("no <figure> on the page")
    for f in page["figures"]:
        if not f["svg"]:
            problems.append(f"figure {f['id']}: no SVG")
        elif f["width"] < 100 or f["height"] < 50 or f["drawn"] < 5:
            problems.append(f"figure {f['id']}: empty ({f['width']:.0f}x{f['height']:.0f} px, {f['drawn']} shapes)")
        if f["caption"] == 0:
            problems.append(f"figure {f['id']}: no caption")
    if problems:  # one line last on stderr: what a caller that keeps the last line shows
        print(f"{a.page}: {len(problems)} problems: " + "; ".join(problems[:5]), file=sys.stderr)
    if not problems:
        print(f"{a.page}: ok in Chromium ({len(page['figures'])} figures, {page['sections']} sections, "
              f"{size} bytes, first screen {first_screen_s:.3f} s); screenshot {a.screenshot}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
