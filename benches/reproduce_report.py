"""The reproduction report in a real browser: `tandem reproduce all --quick`, then
Debian's chromium (headless) loads DIR/report.html, screenshots it and dumps the DOM
after load. Fails (exit 1) on a missing or undecodable image, on a JavaScript error,
or on an experiment missing from the page; exit 3 when no chromium is installed
(`make browser` installs it).

    tandem bench reproduce_report [--out DIR] [--jobs 2] [--reuse]

--reuse checks an existing DIR/report.html without re-running the experiments.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tandem.reproduce.registry import EXPERIMENTS

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def chromium(exe: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="tandem-chromium-") as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/reproduce-quick"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reuse", action="store_true")
    a = ap.parse_args()
    exe = browser()
    if exe is None:
        print("error: no chromium found (install it with `make browser`, Debian package chromium)", file=sys.stderr)
        return 3
    if not (a.reuse and (a.out / "report.html").is_file()):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "tandem.cli", "reproduce", "all", "--quick", "--out", str(a.out),
                            "--jobs", str(a.jobs)], env={**os.environ, "COLUMNS": "160"})
        print(f"tandem reproduce all --quick --jobs {a.jobs}: {time.perf_counter() - t0:.0f} s wall, exit {r.returncode}, "
              f"load {os.getloadavg()[0]:.1f}")
        if r.returncode != 0:
            return 1
    page = (a.out / "report.html").resolve()
    url = page.as_uri()
    shot = a.out / "report-screenshot.png"
    s = chromium(exe, f"--screenshot={shot.resolve()}", "--window-size=1400,4000", "--hide-scrollbars", url)
    d = chromium(exe, "--dump-dom", "--virtual-time-budget=10000", url)
    problems = []
    if not shot.is_file() or shot.stat().st_size < 20_000:
        problems.append(f"no screenshot (or an empty one) at {shot}: {s.stderr.strip()[-300:]}")
    body = re.search(r"<body([^>]*)>", d.stdout)
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body.group(1))) if body else {}
    want = len(EXPERIMENTS)
    if not body:
        problems.append(f"chromium dumped no page: {d.stderr.strip()[-300:]}")
    else:
        if attrs.get("data-js-error"):
            problems.append("a JavaScript error fired on the page")
        if attrs.get("data-images-ok") != "1":
            problems.append(f"an image did not load or decode (data-images-ok={attrs.get('data-images-ok')})")
        if attrs.get("data-images") != str(want):
            problems.append(f"{attrs.get('data-images')} images on the page, expected {want} (one per experiment)")
    console_errors = [ln for ln in (s.stderr + d.stderr).splitlines() if "CONSOLE" in ln and "rror" in ln]
    problems += [f"console: {ln.strip()[:200]}" for ln in console_errors]
    missing = [e.name for e in EXPERIMENTS if f"id='{e.name}'" not in page.read_text()]
    if missing:
        problems.append(f"experiments missing from the report: {', '.join(missing)}")
    print(f"chromium: {subprocess.run([exe, '--version'], capture_output=True, text=True).stdout.strip()}")
    print(f"report {page}: {attrs.get('data-images')} images, all decoded: {attrs.get('data-images-ok') == '1'}, js error: {bool(attrs.get('data-js-error'))}; "
          f"screenshot {shot} ({shot.stat().st_size if shot.is_file() else 0} bytes)")
    for p in problems:
        print(f"FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
