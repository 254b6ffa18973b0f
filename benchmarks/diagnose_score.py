"""Score `grpolab diagnose` on a folder of failure cases (tests/data/failures' YAML format, one case a file): each
case's log piped into `grpolab diagnose - --json` as a whole process, as a user would, and compared with what its
thread says. Prints the figures written into tests/data/failures/README.md before and after a change:

- cause right: the cause id (`expect.cause`, an id of the cause registry);
- family right: the family (`expect.family`: the kind of failure a thread names, tests/data/failures/README.md) against
  the answer's `family` (a checkout without one: its cause id);
- first error: for every case that shows a failure, a non-empty first error (the JSON's `first_error`), and where
  the case names it (`expect.first_error`) that text in it (a substring, caseless; both without the prefix of who
  printed the line and Ray's repeat count: grpolab.monitor.firsterror.plain);
- rank / node right: where the case names them;
- exit 0 on a failed log: a case that shows a failure answered "no failure" (must be none).

    .venv/bin/python benchmarks/diagnose_score.py tests/data/failures
    .venv/bin/python benchmarks/diagnose_score.py FOLDER --grpolab /work/main/.venv/bin/grpolab   # another checkout
    .venv/bin/python benchmarks/diagnose_score.py FOLDER --misses                                 # each miss, why
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from grpolab.monitor.firsterror import plain

GRPOLAB = str(Path(sys.executable).with_name("grpolab"))


def expected(case: dict) -> dict:
    return dict(case.get("expect") or {})


def diagnose(grpolab: str, log: str) -> tuple[int, dict | None, str | None]:
    """(exit status, the failure, the family) of `grpolab diagnose - --json` on `log`."""
    proc = subprocess.run([grpolab, "diagnose", "-", "--json"], input=log.encode(), capture_output=True, timeout=300)
    try:
        document = json.loads(proc.stdout)
        failure = document["failure"]
    except (ValueError, KeyError, TypeError):
        return proc.returncode, {"cause": f"<exit {proc.returncode}: {proc.stderr.decode()[-200:]}>"}, None
    family = document.get("family") or (failure or {}).get("family") or (failure or {}).get("cause") or "none"
    return proc.returncode, failure, family


def score(path: Path, grpolab: str) -> dict:
    case = yaml.safe_load(path.read_text())
    expect = expected(case)
    code, failure, family = diagnose(grpolab, case["log"])
    found = (failure or {}).get("cause", "none") if failure else "none"
    first = str((failure or {}).get("first_error") or "")
    said = " ".join([first, (failure or {}).get("message", "")] + list((failure or {}).get("lines", [])))
    row = {
        "case": path.stem,
        "want": expect["cause"],
        "got": found,
        "cause": found == expect["cause"],
        "family_want": expect.get("family"),
        "family_got": family,
        "failed": expect["cause"] != "none",
        # a first error is owed where the case names one (or, without `first_error`, where it shows a failure)
        "owed": bool(expect["first_error"]) if "first_error" in expect else expect["cause"] != "none",
        "exit0": expect["cause"] != "none" and code == 0,
        "first": bool(first.strip()),
        "first_text": first,
        "message": (failure or {}).get("message", ""),
    }
    if expect.get("family"):
        row["family"] = family == expect["family"]
    if expect.get("first_error"):
        # the error's own text: a case may quote its line with the prefix of who printed it (Ray's, vLLM's,
        # torchrun's) and Ray's repeat count, which the answer says apart (its rank and node)
        want = plain(str(expect["first_error"])).lower()
        row["first_match"] = want in first.lower()
        row["first_shown"] = want in said.lower()  # anywhere in the answer: message, evidence
        row["first_want"] = expect["first_error"]
    if "rank" in expect:
        row["rank"] = (failure or {}).get("rank") == expect["rank"]
        row["rank_want"], row["rank_got"] = expect["rank"], (failure or {}).get("rank")
    if "node" in expect:
        row["node"] = (failure or {}).get("node") == str(expect["node"]) or str(expect["node"]) in (failure or {}).get(
            "message", ""
        )
        row["node_want"], row["node_got"] = expect["node"], (failure or {}).get("node")
    return row


def _share(rows: list[dict], key: str, where=lambda r: True) -> str:
    sel = [r for r in rows if key in r and where(r)]
    right = sum(bool(r[key]) for r in sel)
    return f"{right}/{len(sel)}" + (f" ({100 * right / len(sel):.0f} %)" if sel else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--grpolab", default=GRPOLAB, help="the grpolab command to measure (another checkout's)")
    parser.add_argument("--misses", action="store_true", help="list every case that misses, and why")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    paths = sorted(args.folder.glob("*.yaml"))
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda p: score(p, args.grpolab), paths))
    print(f"cases: {len(rows)} ({sum(r['failed'] for r in rows)} show a failure)")
    print(f"cause right: {_share(rows, 'cause')}")
    print(f"family right: {_share(rows, 'family')}")
    print(f"first error non-empty (cases that have one): {_share(rows, 'first', lambda r: r['owed'])}")
    print(f"first error names the thread's (substring): {_share(rows, 'first_match')}")
    print(f"  ... anywhere in the answer: {_share(rows, 'first_shown')}")
    print(f"rank right: {_share(rows, 'rank')}")
    print(f"node right: {_share(rows, 'node')}")
    print(f"exit 0 on a failed log: {sum(r['exit0'] for r in rows)}")
    if args.misses:
        for r in rows:
            bad = [k for k in ("cause", "family", "first_match", "rank", "node") if k in r and not r[k]]
            if r["owed"] and not r["first"]:
                bad.append("first")
            if bad:
                print(f"\n- {r['case']}: {', '.join(bad)}: want {r['want']}, got {r['got']}", end="")
                print(f" (family want {r['family_want']}, got {r['family_got']})" if r["family_want"] else "")
                if "first_want" in r:
                    print(f"    first want: {r['first_want']!r}\n    first got:  {r['first_text'][:200]!r}")
                for k in ("rank", "node"):
                    if k in r and not r[k]:
                        print(f"    {k} want {r[k + '_want']}, got {r[k + '_got']}")
                print(f"    message: {r['message'][:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
