"""Issue 46's inputs against `grpolab data` and `grpolab data prepare`, built in code: each case sets up a folder,
runs one command and is judged by the bar every verb is held to: no traceback, no hang (60 s), no exit 0 on
nonsense, nothing written outside the named paths, no user file replaced, no secret printed, no raw terminal
escape, resident memory under 4 GB (measured in a memory cgroup of its own where this machine has one: the peak of
every process the command started, the reward's included).

    python tests/data/dryrun/hostile.py [--grpolab PATH] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from shapes import gsm8k_row  # noqa: E402

ROOT = HERE.parents[2]
GB = 2**30
KEY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"  # made up, shaped like a PEM body
PEM = f"-----BEGIN PRIVATE KEY-----\n{KEY}\n-----END PRIVATE KEY-----\n"
SIG = "def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):\n"
GOOD = SIG + "    return 1.0 if str(ground_truth) in solution_str else 0.0\n"


def _parquet(path: Path, rows: list) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def _recipe(d: Path, train: Path | str, reward: str | None = None, extra=()) -> list[str]:
    (d / "recipe.yaml").write_text("defaults: [base]\n")
    sets = [f"data.train_files={train}", f"data.val_files={train}", "train.engine=fsdp"]
    if reward is not None:
        (d / "reward.py").write_text(reward)
        sets.append(f"reward.function={d / 'reward.py'}:compute_score")
    return ["data", str(d / "recipe.yaml"), *[f"--set={s}" for s in [*sets, *extra]], "--no-tokenizer"]


# each case: (name, setup(folder) -> (argv, the exits allowed, the paths the command may write), what it checks)
def c_out_over_source(d):
    src = d / "raw"
    src.mkdir()
    _parquet(src / "train.parquet", [{"question": f"q{i}", "answer": f"work #### {i}"} for i in range(20)])
    return ["data", "prepare", str(src / "train.parquet"), "--out", str(src), "--preset", "gsm8k"], {2}, []


def c_out_over_existing(d):
    (d / "src.jsonl").write_text("".join(json.dumps({"question": "q", "answer": "#### 1"}) + "\n" for _ in range(5)))
    (d / "out").mkdir()
    (d / "out" / "train.parquet").write_bytes(b"the user's own parquet")
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, []


def c_split_dotdot(d):
    (d / "src.jsonl").write_text(json.dumps({"question": "q", "answer": "#### 1"}) + "\n")
    return (
        ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k", "--split", "../x"],
        {2},
        ["out"],
    )


def c_split_absolute(d):
    (d / "src.jsonl").write_text(json.dumps({"question": "q", "answer": "#### 1"}) + "\n")
    return (
        [
            "data",
            "prepare",
            str(d / "src.jsonl"),
            "--out",
            str(d / "out"),
            "--preset",
            "gsm8k",
            "--split",
            str(d / "abs"),
        ],
        {2},
        ["out"],
    )


def c_dataset_dict_split(d):
    import pyarrow as pa

    src = d / "ds"
    (src / "train").mkdir(parents=True)
    (src / "dataset_dict.json").write_text(json.dumps({"splits": ["../../escaped"]}))
    table = pa.Table.from_pylist([{"question": "q", "answer": "#### 1"}])
    (d / "escaped").mkdir()
    with (
        pa.OSFile(str(d / "escaped" / "data-00000-of-00001.arrow"), "wb") as sink,
        pa.ipc.new_stream(sink, table.schema) as w,
    ):
        w.write_table(table)
    (d / "escaped" / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}))
    return ["data", "prepare", str(src), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, ["out"]


def c_out_symlink(d):
    (d / "src.jsonl").write_text(json.dumps({"question": "q", "answer": "#### 1"}) + "\n")
    (d / "system").mkdir()  # stands for /etc
    (d / "link").symlink_to(d / "system")
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "link"), "--preset", "gsm8k"], {2}, []


def c_out_symlink_etc(d):
    (d / "src.jsonl").write_text(json.dumps({"question": "q", "answer": "#### 1"}) + "\n")
    (d / "etc").symlink_to("/etc")
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "etc"), "--preset", "gsm8k"], {2}, []


def c_half_written(d):
    lines = [json.dumps({"question": f"q{i}", "answer": f"#### {i}"}) for i in range(9000)] + ["{broken"]
    (d / "src.jsonl").write_text("\n".join(lines) + "\n")
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, ["out"]


def c_prepare_fifo(d):
    os.mkfifo(d / "src.jsonl")
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, ["out"]


def c_data_fifo(d):
    os.mkfifo(d / "train.jsonl")
    return _recipe(d, d / "train.jsonl"), {1, 2}, []


def c_dev_zero(d):
    (d / "train.jsonl").symlink_to("/dev/zero")
    return _recipe(d, d / "train.jsonl"), {1, 2}, []


def c_prepare_dev_zero(d):
    (d / "src.jsonl").symlink_to("/dev/zero")
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, ["out"]


def _wide(d):
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {f"c{i}": pa.array([i % 7, i % 5], pa.int8()) for i in range(100_000)}
    pq.write_table(pa.table(cols), d / "wide.parquet")


def c_wide_parquet(d):
    _wide(d)
    return _recipe(d, d / "wide.parquet"), {1, 2}, []


def c_prepare_wide_parquet(d):
    _wide(d)
    return ["data", "prepare", str(d / "wide.parquet"), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, ["out"]


def _long_row(d):
    with open(d / "train.jsonl", "wb") as fh:
        fh.write(json.dumps(gsm8k_row(0)).encode() + b"\n")
        fh.write(b'{"question": "')
        block = b"a" * (64 * 2**20)
        for _ in range(32):
            fh.write(block)
        fh.write(b'", "answer": "#### 1"}\n')


def c_long_row(d):
    _long_row(d)
    return _recipe(d, d / "train.jsonl"), {1, 2}, []


def c_prepare_long_row(d):
    _long_row(d)
    return ["data", "prepare", str(d / "train.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k"], {0, 2}, ["out"]


def c_prints_1gb(d):
    _parquet(d / "train.parquet", [gsm8k_row(i) for i in range(4)])
    reward = "import sys\n" + SIG + "    for _ in range(1024):\n        sys.stdout.write('y' * 2**20)\n    return 0.0\n"
    return _recipe(d, d / "train.parquet", reward), {1}, []


def c_allocates_20gb(d):
    _parquet(d / "train.parquet", [gsm8k_row(i) for i in range(4)])
    reward = SIG + "    block = b'z' * (20 * 2**30)\n    return float(len(block) > 0)\n"
    return _recipe(d, d / "train.parquet", reward), {1}, []


def c_bom_jsonl_data(d):
    (d / "train.jsonl").write_text(
        "\ufeff" + "".join(json.dumps(gsm8k_row(i)) + "\n" for i in range(10)), encoding="utf-8"
    )
    return _recipe(d, d / "train.jsonl", GOOD), {0}, []


def c_bom_json_data(d):
    (d / "train.json").write_text("\ufeff" + json.dumps([gsm8k_row(i) for i in range(10)]), encoding="utf-8")
    return _recipe(d, d / "train.json", GOOD), {0}, []


def c_bom_prepare(d):
    (d / "src.jsonl").write_text(
        "\ufeff" + "".join(json.dumps({"question": "q", "answer": "#### 3"}) + "\n" for _ in range(5)), encoding="utf-8"
    )
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k"], {0}, ["out"]


def c_bom_json_prepare(d):
    (d / "src.json").write_text("\ufeff" + json.dumps([{"question": "q", "answer": "#### 3"}] * 5), encoding="utf-8")
    return ["data", "prepare", str(d / "src.json"), "--out", str(d / "out"), "--preset", "gsm8k"], {0}, ["out"]


def c_deep_data(d):
    deep = "[" * 100_000 + "]" * 100_000
    (d / "train.jsonl").write_text(json.dumps(gsm8k_row(0)) + "\n" + '{"prompt": ' + deep + "}\n")
    return _recipe(d, d / "train.jsonl"), {1, 2}, []


def c_deep_prepare(d):
    deep = "[" * 100_000 + "]" * 100_000
    (d / "src.jsonl").write_text('{"question": "q", "answer": ' + deep + "}\n")
    return ["data", "prepare", str(d / "src.jsonl"), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, ["out"]


def c_deep_json_data(d):
    (d / "train.json").write_text("[" * 100_000 + "]" * 100_000)
    return _recipe(d, d / "train.json"), {1, 2}, []


def c_broken_late_data(d):
    (d / "train.jsonl").write_text("".join(json.dumps(gsm8k_row(i)) + "\n" for i in range(5000)) + "{broken\n")
    return _recipe(d, d / "train.jsonl", GOOD), {1, 2}, []


def c_ragged_csv(d):
    (d / "src.csv").write_text("question,answer\nq1,#### 1\nq2,#### 2,extra,cells\nq3\n")
    return ["data", "prepare", str(d / "src.csv"), "--out", str(d / "out"), "--preset", "gsm8k"], {2}, ["out"]


def c_os_exit_zero(d):
    _parquet(d / "train.parquet", [gsm8k_row(i) for i in range(6)])
    return _recipe(d, d / "train.parquet", "import os\n" + SIG + "    os._exit(0)\n"), {1}, []


def c_inspect_helper(d):
    _parquet(d / "train.parquet", [gsm8k_row(i) for i in range(6)])
    (d / "inspect.py").write_text("raise ImportError('the user helper named inspect')\n")
    return _recipe(d, d / "train.parquet", GOOD), {0}, []


def c_secret_exception(d):
    _parquet(d / "train.parquet", [gsm8k_row(i) for i in range(6)])
    (d / "id_rsa").write_text(PEM)
    reward = f"KEY = open({str(d / 'id_rsa')!r}).read()\n" + SIG + "    raise ValueError('cannot sign with ' + KEY)\n"
    return _recipe(d, d / "train.parquet", reward), {1}, []


def c_secret_stderr(d):
    _parquet(d / "train.parquet", [gsm8k_row(i) for i in range(6)])
    (d / "id_rsa").write_text(PEM)
    reward = (
        f"import sys\nsys.stderr.write('token loaded: ' + open({str(d / 'id_rsa')!r}).read().splitlines()[1] + '\\n')\n"
        "import os\nos._exit(3)\n" + SIG + "    return 0.0\n"
    )
    return _recipe(d, d / "train.parquet", reward), {1}, []


def c_escape_exception(d):
    _parquet(d / "train.parquet", [gsm8k_row(i) for i in range(6)])
    reward = SIG + "    raise ValueError('\\x1b]0;pwned\\x07\\x1b[2J')\n"
    return _recipe(d, d / "train.parquet", reward), {1}, []


CASES = {name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("c_")}
SECRETS = (KEY,)


class Peak:
    """The peak resident memory of a process tree, from a memory cgroup of its own (cgroup v1 or v2) where this
    machine lets us make one; else None."""

    def __init__(self) -> None:
        self.path = None
        self.peak = 0
        self._stop = threading.Event()
        for base in self._bases():
            try:
                path = base / f"grpolab-hostile-{os.getpid()}-{time.monotonic_ns()}"
                path.mkdir()
                self.path = path
                break
            except OSError:
                continue

    @staticmethod
    def _bases():
        for line in open("/proc/self/cgroup"):
            parts = line.strip().split(":")
            if parts[1] == "memory":
                yield Path("/sys/fs/cgroup/memory") / parts[2].lstrip("/")
            if parts[0] == "0" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
                yield Path("/sys/fs/cgroup") / parts[2].lstrip("/")

    def limit(self, nbytes: int) -> None:
        for name in ("memory.limit_in_bytes", "memory.max"):
            if self.path and (self.path / name).exists():
                (self.path / name).write_text(str(nbytes))

    def join(self, pid: int) -> None:
        if self.path:
            (self.path / "cgroup.procs").write_text(str(pid))
            threading.Thread(target=self._poll, daemon=True).start()

    def _poll(self) -> None:
        stat = self.path / "memory.stat"
        while not self._stop.is_set():
            try:
                fields = dict(line.split() for line in stat.read_text().splitlines())
                rss = int(fields.get("total_rss", fields.get("anon", 0))) + int(fields.get("total_rss_huge", 0))
                self.peak = max(self.peak, rss)
            except (OSError, ValueError):
                pass
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        time.sleep(0.1)
        if self.path:
            for _ in range(50):
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for p in folder.rglob("*"):
        if p.is_symlink() or not p.is_file():
            out[str(p)] = "link" if p.is_symlink() else "other"
            continue
        try:
            out[str(p)] = (
                hashlib.sha256(p.read_bytes()).hexdigest() if p.stat().st_size < 2**28 else str(p.stat().st_mtime_ns)
            )
        except OSError:
            out[str(p)] = "?"
    return out


def run_case(name: str, grpolab: str, top: Path, limit_gb: float = 6) -> dict:
    d = top / name
    d.mkdir()
    argv, exits, writable = CASES[name](d)
    before = _snapshot(d)
    peak = Peak()
    peak.limit(int(limit_gb * GB))
    start = time.monotonic()
    proc = subprocess.Popen([grpolab, *argv], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak.join(proc.pid)
    try:
        out, err = proc.communicate(timeout=60)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = "hang"
    seconds = time.monotonic() - start
    time.sleep(0.2)
    peak.close()
    after = _snapshot(d)
    if name == "out_symlink_etc" and os.path.lexists("/etc/train.parquet"):
        after["/etc/train.parquet"] = "written"
    allowed = [str(d / w) for w in writable]
    changed = sorted(
        p.removeprefix(str(d) + "/")
        for p in set(before) | set(after)
        if before.get(p) != after.get(p) and not any(p == a or p.startswith(a + "/") for a in allowed)
    )
    text = (out + err).decode(errors="replace")
    problems = []
    if rc == "hang":
        problems.append("hang")
    elif rc not in exits:
        problems.append(f"exit {rc} (wanted {sorted(exits)})")
    if "Traceback" in text:
        problems.append("traceback")
    if changed:
        problems.append(f"changed {changed[:3]}")
    if any(s in text for s in SECRETS):
        problems.append("secret printed")
    if "\x1b" in text:
        problems.append("raw escape")
    if peak.peak > 4 * GB:
        problems.append(f"memory {peak.peak / GB:.1f} GB")
    if rc not in exits and isinstance(rc, int) and rc < 0:
        problems.append(f"killed by signal {-rc} (memory limit {limit_gb} GB?)")
    last = text.strip().splitlines()[-1][:200] if text.strip() else ""
    return {
        "name": name,
        "ok": not problems,
        "problems": problems,
        "rc": rc,
        "s": round(seconds, 1),
        "peak_mb": peak.peak // 2**20 if peak.path else None,
        "last": last,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grpolab", default=str(ROOT / ".venv" / "bin" / "grpolab"))
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    names = [n for n in CASES if not args.only or n in args.only]
    results = []
    with tempfile.TemporaryDirectory(prefix="grpolab-hostile-", dir="/tmp") as tmp:
        for name in names:
            r = run_case(name, args.grpolab, Path(tmp))
            results.append(r)
            print(
                f"{'ok  ' if r['ok'] else 'FAIL'} {name:24} rc={r['rc']} {r['s']:5.1f}s peak={r['peak_mb']} MB "
                f"{'; '.join(r['problems'])}\n      {r['last']}",
                flush=True,
            )
    print(f"clean {sum(r['ok'] for r in results)}/{len(results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
