"""The job's own wrapper: runs a run's real entrypoint and keeps the run's record without Ray.

The embedded head submits `python -m grpolab.jobs.job_entry RUN_DIR -- COMMAND ...` as the Ray job. The wrapper
- takes the run's secrets from RUN_DIR/.secrets.json (grpolab.jobs.secrets: read, then deleted), so secrets reach
  the trainer's environment without passing through Ray's runtime_env (which Ray logs and returns from its Jobs
  API);
- writes RUN_DIR/job.json at start (pid, host, start time) and at the end (exit code, end time, whether it was
  stopped), so a run's final state and times are known even when its Ray head is gone (grpolab.jobs.state
  reconciles);
- copies the command's output, line by line, both to its own stdout (Ray's job log) and to RUN_DIR/logs/job.log,
  so the log survives the head; a full disk stops the copy to the file, never the run;
- stops the command when the run directory is deleted (`rm -rf runs/ID`): whatever the trainer wrote next would
  recreate a folder without a record, so it removes what the job recreated there.
Its exit status is the command's (1 when the run directory was deleted).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from grpolab import owned, run_folder
from grpolab.jobs import secrets
from grpolab.jobs.retention import Keeper
from grpolab.recipe.files import atomic_write, json_object

# Ray colours its log lines; records, monitors and notebooks want plain text (the one pattern, used by all of them)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
WATCH_EVERY_S = 1.0  # how often the wrapper checks that its run directory still exists
KILL_AFTER_S = 15.0  # a command that ignores SIGTERM this long after its run directory was deleted is killed


def _say(text: str) -> None:
    """A line of the wrapper's own in Ray's job log."""
    with contextlib.suppress(OSError):
        sys.stdout.buffer.write(f"grpolab.jobs.job_entry: {text}\n".encode())
        sys.stdout.buffer.flush()


def _write_record(run_dir: Path, **fields) -> None:
    """Merge fields into RUN_DIR/job.json (a temp file, then a rename); a full disk or a deleted run directory
    loses the record, never the run (Ray still knows the job's end)."""
    path = run_folder.job_file(run_dir)
    try:
        atomic_write(path, json.dumps({**json_object(path), **fields}, indent=2) + "\n")
    except OSError as exc:
        _say(f"could not write {path}: {exc.strerror or exc}")


class _Watch:
    """Notices the run directory being deleted (its inode has no links left) and stops the command."""

    def __init__(self, run_dir: Path, proc: subprocess.Popen) -> None:
        self.run_dir, self.proc = run_dir, proc
        self.inode = os.stat(run_dir).st_ino
        self.fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
        self.deleted = threading.Event()
        threading.Thread(target=self._loop, daemon=True, name="grpolab-run-dir-watch").start()

    def _gone(self) -> bool:
        try:
            return os.fstat(self.fd).st_nlink == 0
        except OSError:
            return True

    def _loop(self) -> None:
        while self.proc.poll() is None:
            if self._gone():
                self.deleted.set()
                _say(f"the run directory {self.run_dir} was deleted: stopping the job (its record is gone)")
                with contextlib.suppress(ProcessLookupError):
                    self.proc.terminate()
                try:
                    self.proc.wait(timeout=KILL_AFTER_S)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        self.proc.kill()
                return
            time.sleep(WATCH_EVERY_S)

    def clean_up(self) -> bool:
        """After the command ended: whether the run directory was deleted (then a folder the job recreated at its
        path, a new inode without a run record, is removed, so no record-less run folder is left behind)."""
        if not self.deleted.is_set() and self._gone():  # deleted as the command ended, before the next look
            self.deleted.set()
            _say(f"the run directory {self.run_dir} was deleted while the job ended")
        os.close(self.fd)
        if not self.deleted.is_set():
            return False
        try:
            recreated = self.run_dir.is_dir() and os.stat(self.run_dir).st_ino != self.inode
        except OSError:
            return True
        if recreated and not run_folder.status_file(self.run_dir).exists():
            owned.remove_tree(self.run_dir, proof=(run_folder.LOGS, run_folder.METRICS, run_folder.CHECKPOINT))
            _say(f"removed {self.run_dir}, which the job had recreated after the run directory was deleted")
        return True


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m grpolab.jobs.job_entry RUN_DIR -- COMMAND [ARGS ...]", file=sys.stderr)
        return 2
    run_dir, command = Path(argv[0]), argv[2:]
    # a secret the recipe reads from the environment (`${NAME}`) that the launching shell lacked: from this node's,
    # as Ray expands its runtime_env (`${NAME}` only: a `$` inside a password stays)
    handed = {
        k: _REF.sub(lambda m: os.environ.get(m.group(1), m.group(0)), v) for k, v in secrets.take(run_dir).items()
    }
    env = {**os.environ, **handed}
    if not run_folder.status_file(run_dir).is_file():  # deleted before the job started: recreate nothing
        _say(f"the run directory {run_dir} (or its record) is gone: nothing to run")
        return 1
    with contextlib.suppress(OSError):
        run_folder.logs_dir(run_dir).mkdir(exist_ok=True)
    stopped = {"signal": None}

    # cwd: the run directory, so that whatever the trainer writes beside itself (Hydra's outputs/, say) stays in the run
    proc = subprocess.Popen(command, env=env, cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
    watch = _Watch(run_dir, proc)
    _write_record(run_dir, pid=os.getpid(), child_pid=proc.pid, host=socket.gethostname(), started=time.time())

    def on_signal(signum, _frame):  # `grpolab stop` / Ray's stop_job: record it, pass it on, keep copying output
        stopped["signal"] = signum
        _write_record(run_dir, stopped=True, signal=signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    keeper = Keeper.for_run(run_dir)  # trainer.keep_best_metric / the local trainer's keep_ckpts: pruned after saves
    try:
        log = open(run_folder.job_log(run_dir), "ab", buffering=0)
    except OSError as exc:
        log = None
        _say(f"cannot keep the log in the run directory: {exc.strerror or exc}")
    for line in iter(proc.stdout.readline, b""):
        # Ray's side of the log may be gone (its head died): the run directory's copy goes on
        with contextlib.suppress(OSError):
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        if log is not None:
            try:
                log.write(ANSI.sub("", line.decode("utf-8", errors="replace")).encode())
            except OSError as exc:  # a full disk: Ray's copy of the log goes on
                log = None
                _say(f"stopped copying the log to the run directory: {exc.strerror or exc}")
    code = proc.wait()
    if keeper is not None:
        keeper.stop()
    deleted = watch.clean_up()
    if log is not None:
        with contextlib.suppress(OSError):
            log.close()
    if deleted:
        return 1
    _write_record(run_dir, exit_code=code, ended=time.time(), stopped=stopped["signal"] is not None)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
