"""The job's own wrapper: runs a run's real entrypoint and keeps the run's record without Ray.

The embedded head submits `python -m grpolab.jobs.job_entry RUN_DIR -- COMMAND ...` as the Ray job. The wrapper
- reads the run's secrets from RUN_DIR/.secrets.json (mode 0600, written by launch.submit) and deletes the file,
  so secrets reach the trainer's environment without passing through Ray's runtime_env (which Ray logs and
  returns from its Jobs API);
- writes RUN_DIR/job.json at start (pid, host) and at the end (exit code, end time, whether it was stopped),
  so a run's final state is known even when its Ray head is gone (`launch.refresh_status` reconciles);
- copies the command's output, line by line, both to its own stdout (Ray's job log) and to RUN_DIR/logs/job.log,
  so the log survives the head.
Its exit status is the command's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from grpolab.jobs.retention import Keeper

# Ray colours its log lines; records, monitors and notebooks want plain text (the one pattern, used by all of them)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SECRETS_FILE = ".secrets.json"
RECORD_FILE = "job.json"


def _write_record(run_dir: Path, **fields) -> None:
    path = run_dir / RECORD_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {}
    record.update(fields)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, path)


def _secrets(run_dir: Path) -> dict[str, str]:
    path = run_dir / SECRETS_FILE
    try:
        values = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    finally:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    return {str(k): str(v) for k, v in values.items()}


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m grpolab.jobs.job_entry RUN_DIR -- COMMAND [ARGS ...]", file=sys.stderr)
        return 2
    run_dir = Path(argv[0])
    command = argv[2:]
    env = {**os.environ, **_secrets(run_dir)}
    (run_dir / "logs").mkdir(exist_ok=True)
    stopped = {"signal": None}

    # cwd: the run directory, so that whatever the trainer writes beside itself (Hydra's outputs/, say) stays in the run
    proc = subprocess.Popen(command, env=env, cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
    _write_record(run_dir, pid=os.getpid(), child_pid=proc.pid, host=socket.gethostname(), started=time.time())

    def on_signal(signum, _frame):  # `grpolab stop` / Ray's stop_job: record it, pass it on, keep copying output
        stopped["signal"] = signum
        _write_record(run_dir, stopped=True, signal=signum)
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    keeper = Keeper.for_run(run_dir)  # trainer.keep_best_metric / the local trainer's keep_ckpts: pruned after saves
    with open(run_dir / "logs" / "job.log", "ab", buffering=0) as log:
        for line in iter(proc.stdout.readline, b""):
            try:
                sys.stdout.buffer.write(line)
                sys.stdout.buffer.flush()
            except (BrokenPipeError, OSError):
                pass  # Ray's side of the log is gone (its head died): the run directory's copy goes on
            log.write(ANSI.sub("", line.decode("utf-8", errors="replace")).encode())
    code = proc.wait()
    if keeper is not None:
        keeper.stop()
    _write_record(run_dir, exit_code=code, ended=time.time(), stopped=stopped["signal"] is not None)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
