"""The job's own wrapper: runs a run's real entrypoint and keeps the run's record without Ray.

On the embedded head the Ray job is the run's driver, `python -m grpolab.heal.supervise RUN_DIR -- COMMAND ...`,
which runs each attempt of the run through this wrapper (`Wrapper`); `python -m grpolab.jobs.job_entry RUN_DIR --
COMMAND ...` is the same wrapper around one command, without restarts. The wrapper
- takes the run's secrets from RUN_DIR/.secrets.json (grpolab.jobs.secrets: read, then deleted), so secrets reach
  the trainer's environment without passing through Ray's runtime_env (which Ray logs and returns from its Jobs
  API);
- writes RUN_DIR/job.json at start (pid, host, start time) and at the end (exit code, end time, whether it was
  stopped), so a run's final state and times are known even when its Ray head is gone (grpolab.jobs.state
  reconciles);
- copies the command's output, line by line, both to its own stdout (Ray's job log) and to RUN_DIR/logs/job.log,
  so the log survives the head; a full disk stops the copy to the file, never the run;
- gives the command RUN_DIR/tmp as its temp dir (grpolab.paths.scratch_env) and removes it when the job ends;
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

from grpolab import owned, paths, run_folder
from grpolab.jobs import secrets
from grpolab.jobs.retention import Keeper
from grpolab.recipe.files import atomic_write, json_object

# Ray colours its log lines; records, monitors and notebooks want plain text (the one pattern, used by all of them).
# A log pasted into an issue has lost the escape character and keeps the rest of a colour (`[33m(raylet) ...`)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\[(?:\d{1,3};){0,4}\d{1,3}m")
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


def take_env(run_dir: Path) -> dict[str, str]:
    """The command's environment: this process's, with the run's secrets (RUN_DIR/.secrets.json: read, then deleted).
    A secret the recipe reads from the environment (`${NAME}`) that the launching shell lacked: from this node's,
    as Ray expands its runtime_env (`${NAME}` only: a `$` inside a password stays)."""
    handed = {
        k: _REF.sub(lambda m: os.environ.get(m.group(1), m.group(0)), v) for k, v in secrets.take(run_dir).items()
    }
    return paths.scratch_env(run_folder.tmp_dir(run_dir).resolve(), {**os.environ, **handed})


class Wrapper:
    """The job's side of a run, shared by every attempt of it: the env with its secrets, the log kept in the run
    directory, the job's own record (job.json), `grpolab stop`'s signal passed on, checkpoint pruning. `follow`
    runs one command to its end; grpolab.heal.supervise follows several, one per attempt."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.env = take_env(run_dir)
        self.stopped: int | None = None  # the signal `grpolab stop` / Ray's stop_job sent
        self.proc = None  # the command that runs now (Popen, or anything with its interface)
        self.log = None
        self.keeper = None

    def begin(self) -> bool:
        """Open the log, write the job's start record, take over SIGTERM and SIGINT; False (nothing to run) when
        the run directory or its record was deleted before the job started."""
        if not run_folder.status_file(self.run_dir).is_file():  # deleted before the job started: recreate nothing
            _say(f"the run directory {self.run_dir} (or its record) is gone: nothing to run")
            return False
        with contextlib.suppress(OSError):
            run_folder.logs_dir(self.run_dir).mkdir(exist_ok=True)
        if self.env["TMPDIR"] == str(run_folder.tmp_dir(self.run_dir).resolve()):
            with contextlib.suppress(OSError):  # none: the trainer's tempfile falls back to /tmp, as before
                owned.make_folder(run_folder.tmp_dir(self.run_dir))
        try:
            self.log = open(run_folder.job_log(self.run_dir), "ab", buffering=0)
        except OSError as exc:
            _say(f"cannot keep the log in the run directory: {exc.strerror or exc}")
        _write_record(self.run_dir, pid=os.getpid(), host=socket.gethostname(), started=time.time())
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self.keeper = Keeper.for_run(self.run_dir)  # keep_best_metric / the local trainer's keep_ckpts
        return True

    def _on_signal(self, signum, _frame) -> None:  # `grpolab stop` / Ray's stop_job: record it, pass it on
        self.stopped = signum
        _write_record(self.run_dir, stopped=True, signal=signum)
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signum)

    def spawn(self, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        """The command as a process of this node, in the run directory (whatever the trainer writes beside itself,
        Hydra's outputs/ say, stays in the run)."""
        return subprocess.Popen(
            command, env=env or self.env, cwd=self.run_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0
        )

    def write(self, line: bytes) -> None:
        """A line to Ray's job log (this process's stdout) and to the run's copy of it."""
        # Ray's side of the log may be gone (its head died): the run directory's copy goes on
        with contextlib.suppress(OSError):
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        if self.log is not None:
            try:
                self.log.write(ANSI.sub("", line.decode("utf-8", errors="replace")).encode())
            except OSError as exc:  # a full disk: Ray's copy of the log goes on
                self.log = None
                _say(f"stopped copying the log to the run directory: {exc.strerror or exc}")

    def follow(self, proc) -> tuple[int, bool]:
        """Copy the command's output to both logs until it ends, stopping it when the run directory is deleted.
        (its exit code, whether the run directory was deleted)."""
        self.proc = proc
        if self.stopped is not None:  # stopped while the command was being started
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(self.stopped)
        watch = _Watch(self.run_dir, proc)
        _write_record(self.run_dir, child_pid=proc.pid)
        for line in iter(proc.stdout.readline, b""):
            self.write(line)
        code = proc.wait()
        return code, watch.clean_up()

    def end(self, code: int, deleted: bool) -> int:
        """Write the job's end record; the job's exit status (1 when the run directory was deleted)."""
        if self.keeper is not None:
            self.keeper.stop()
        owned.remove_tree(run_folder.tmp_dir(self.run_dir))
        if self.log is not None:
            with contextlib.suppress(OSError):
                self.log.close()
        if deleted:
            return 1
        _write_record(self.run_dir, exit_code=code, ended=time.time(), stopped=self.stopped is not None)
        return code if code >= 0 else 128 - code


def main(argv: list[str]) -> int:
    """One command, no restarts (grpolab.heal.supervise is the job's driver on the embedded head; this wraps a
    command by hand: `python -m grpolab.jobs.job_entry RUN_DIR -- COMMAND ...`)."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m grpolab.jobs.job_entry RUN_DIR -- COMMAND [ARGS ...]", file=sys.stderr)
        return 2
    wrapper = Wrapper(Path(argv[0]))
    if not wrapper.begin():
        return 1
    return wrapper.end(*wrapper.follow(wrapper.spawn(argv[2:])))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
