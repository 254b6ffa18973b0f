"""Measure `grpolab data` on the dry-run corpus (cases.py): how many good cases pass clean (exit 0), how many faults
are caught (exit 1 with an error; "named" when the error's rule is one the case expects), internal errors (a
traceback or an exit other than 0, 1, 2), processes left running, files written outside the case's folder, and the
largest resident memory of the command and what it waited for.

    python tests/data/dryrun/measure.py [--grpolab PATH] [--only NAME ...] [--held | --dev] [--verbose]

PATH defaults to this checkout's .venv/bin/grpolab (main's: /work/main/.venv/bin/grpolab). Prints one line per case
and the figures README.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES, build  # noqa: E402

ROOT = HERE.parents[2]


def _leftovers(root: Path, before: set[int]) -> list[str]:
    """Processes that were not there before whose working folder or command line is in the case's folder."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in before:
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(root)) or str(root) in cmd or "grpolab-dryrun-corpus" in cmd:
            found.append(f"{entry}: {cmd[:80]}")
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass
    return found


def run_case(case, grpolab: str, top: Path, timeout: float = 180) -> dict:
    root = top / case.name
    work = root / "a" / "b"
    recipe, _ = build(case, work)
    sets = json.loads((work / "sets.json").read_text())
    before_files = {p for p in root.rglob("*")}
    before = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    argv = [grpolab, "data", str(recipe), *[f"--set={k}={v}" for k, v in sets.items()], "--no-tokenizer", "--json"]
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = "timeout"
    seconds = time.monotonic() - start
    rss = _max_rss()
    time.sleep(0.3)
    left = _leftovers(root, before)
    written = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p not in before_files and work not in p.parents and p != work
    )
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        doc = {}
    problems = doc.get("problems", []) if isinstance(doc, dict) else []
    errors = sorted({p["rule"] for p in problems if p["severity"] == "error"})
    warnings = sorted({p["rule"] for p in problems if p["severity"] == "warning"})
    internal = rc not in (0, 1, 2) or "Traceback" in err
    if case.kind == "good":
        ok = rc == 0 and not internal
    else:
        ok = rc == 1 and bool(errors) and not internal
    named = case.kind == "fault" and any(r in case.expect for r in errors)
    contained = not left and not written
    return {
        "name": case.name,
        "kind": case.kind,
        "held": case.held,
        "rc": rc,
        "ok": ok and (contained or not case.outside),
        "named": named,
        "errors": errors,
        "warnings": warnings,
        "internal": internal,
        "left": left,
        "written": written,
        "seconds": round(seconds, 2),
        "rss_mb": rss,
        "stderr": err.strip().splitlines()[-1:] if err.strip() else [],
        "messages": [p["message"][:300] for p in problems if p["severity"] == "error"],
    }


_SEEN_RSS = [0]


def _max_rss() -> int:
    import resource

    kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return kb // 1024


def summary(results: list[dict]) -> list[str]:
    lines = []
    for label, pick in (("dev", lambda r: not r["held"]), ("held-out", lambda r: r["held"]), ("all", lambda r: True)):
        rs = [r for r in results if pick(r)]
        good = [r for r in rs if r["kind"] == "good"]
        faults = [r for r in rs if r["kind"] == "fault"]
        lines.append(
            f"{label}: good passing clean {sum(r['ok'] for r in good)}/{len(good)}, faults caught "
            f"{sum(r['ok'] for r in faults)}/{len(faults)} (named by the expected rule {sum(r['named'] for r in faults)}), "
            f"internal errors {sum(r['internal'] for r in rs)}, processes left {sum(bool(r['left']) for r in rs)}, "
            f"written outside {sum(bool(r['written']) for r in rs)}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grpolab", default=str(ROOT / ".venv" / "bin" / "grpolab"))
    parser.add_argument("--only", nargs="*")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--held", action="store_true")
    group.add_argument("--dev", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--json", help="write every case's result to this file")
    args = parser.parse_args()
    cases = [
        c
        for c in CASES
        if (not args.only or c.name in args.only) and (not args.held or c.held) and (not args.dev or not c.held)
    ]
    results = []
    with tempfile.TemporaryDirectory(prefix="grpolab-dryrun-") as tmp:
        for case in cases:
            r = run_case(case, args.grpolab, Path(tmp))
            results.append(r)
            mark = "ok  " if r["ok"] else "MISS"
            extra = f" errors={r['errors']}" if r["errors"] else ""
            extra += f" warnings={r['warnings']}" if r["warnings"] else ""
            extra += " INTERNAL" if r["internal"] else ""
            extra += f" LEFT={len(r['left'])}" if r["left"] else ""
            extra += f" WROTE={r['written']}" if r["written"] else ""
            print(
                f"{mark} {case.kind:5} {'H' if case.held else ' '} {case.name:28} rc={r['rc']} {r['seconds']:6.2f}s{extra}"
            )
            if args.verbose and (not r["ok"] or r["internal"]):
                for m in r["messages"] + r["stderr"]:
                    print("      ", m[:300])
    print("\n".join(summary(results)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
