"""Runs a user's reward on the dry run's calls: the script grpolab.verl.reward_run starts (inside the import's isolation
where this machine has it). Standard library only, since it runs before and beside the user's code.

    python reward_runner.py JOB.json

One supervisor process forks a worker that loads the reward and makes the calls; the supervisor never runs user
code. It reads the worker's two pipes: the calls' records (a `begin` before each call, its result after) and the
reward's own output (stdout and stderr: counted, its first OUTPUT_FILE_BYTES kept in a file, its head and tail in
the summary; nothing else of it is held). It ends a call that runs past `per_call_s` and a worker that crashes
(a signal, os._exit, a MemoryError that kills it) and starts a new worker at the next call, at most MAX_RESTARTS
times; it stops everything at `deadline_s`. The worker has a data-size limit (`memory_mb`, RLIMIT_DATA: what the
reward allocates, not the libraries it maps), no core dumps, and files it writes capped at FILE_BYTES. At the end
every process the worker started is killed: its process group, and (the supervisor is a child subreaper) every
orphan that re-parented to the supervisor, daemons included.

The worker calls the reward as the job's manager does: keyword arguments (`kwargs` of each call, then the
recipe's reward.kwargs over them), in an executor thread where the manager uses `run_in_executor` (verl 0.9.1's
naive, dapo, gdpo, rate_limited: a `signal`-based timeout fails there as it fails on the cluster), an async reward
awaited on an event loop in that thread. Its result is read as verl reads it: a dict must have `score` (its other
keys are recorded: verl stacks them across rows); a score is taken when verl's torch.tensor(scores) takes it
(bool, int, float, Decimal, Fraction, a numpy scalar of a real kind, a one-element torch tensor), refused
otherwise (None, a str, a list, a numpy array, complex), with NaN and inf named.

Calls come in three stages: `probe` rows, each with the empty answer and the right and the wrong one in every
format; `long` answers (the right one behind `long_chars` characters of reasoning); then every other row with the
empty answer and the right and wrong one in the formats where the probe rows told right from wrong (all of them
when none did). After `enough_s` of calls in the last stage the rest are skipped.
"""

import sys

del sys.path[0]  # this file's folder: nothing beside it may shadow a module of the standard library

import asyncio  # noqa: E402
import concurrent.futures  # noqa: E402
import ctypes  # noqa: E402
import decimal  # noqa: E402
import fractions  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import numbers  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

MAX_RESTARTS = 4
OUTPUT_FILE_BYTES = 1 << 20  # the reward's output kept in the scratch folder's output.log
SHOWN_BYTES = 2048  # of it, the head and the tail in the summary
FILE_BYTES = 64 << 20  # a file the reward writes may grow to this (RLIMIT_FSIZE; writes past it fail with EFBIG)
TEXT = 400  # an exception's text is cut to this
FILLER = "Let me work through this step by step, checking each intermediate result carefully. "


def _text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()[:TEXT]


# ------------------------------------------------------------------------------------------------- the worker


def _load(job):
    if job["file"]:
        folder = os.path.dirname(os.path.abspath(job["file"]))
        if folder not in sys.path:
            sys.path.append(folder)  # its helpers import, and none shadows the standard library
        name = f"custom_module_{abs(hash(os.path.abspath(job['file'])))}"
        spec = importlib.util.spec_from_file_location(name, job["file"])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, job["name"])
    # verl's own dispatch without verl/__init__ (which imports torch: seconds): its packages as bare namespaces
    root = job["verl_root"]
    for package, folder in (("verl", root), ("verl.utils", os.path.join(root, "utils"))):
        stub = types.ModuleType(package)
        stub.__path__ = [folder]
        sys.modules[package] = stub
    # lazy: verl (its reward dispatch, loaded only when the recipe uses verl's built-in reward)
    from verl.utils.reward_score import default_compute_score

    return default_compute_score


def _number(value):
    """(float, "") when verl's torch.tensor(scores) takes value as one score, else (None, why not)."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    if isinstance(value, (bool, numbers.Real, decimal.Decimal, fractions.Fraction)) and module != "numpy":
        return float(value), ""
    if module == "numpy":
        if kind.__name__ == "ndarray":
            return None, "a numpy array (torch.tensor of a batch of them fails: use float(x) or x.item())"
        char = getattr(getattr(value, "dtype", None), "kind", "")
        if char in "biuf" and char:
            return float(value), ""
        return None, f"a numpy {kind.__name__}"
    if module == "torch" and hasattr(value, "numel"):
        if value.numel() == 1 and not value.is_complex():
            return float(value.item()), ""
        return None, f"a torch tensor of {value.numel()} elements (verl needs one number per answer)"
    if isinstance(value, complex):
        return None, "a complex number"
    if value is None:
        return None, "None"
    return None, f"{repr(value)[:80]} ({kind.__name__})"


def _signature(value):
    """How a dict's extra value stacks across rows (numpy.array of them): its kind and, for a sequence, length."""
    if isinstance(value, (list, tuple)):
        return f"list[{len(value)}]"
    if isinstance(value, (bool, int, float, str)) or value is None:
        return "scalar"
    return type(value).__name__


def _read(result):
    """What verl's manager makes of a result: {score, bad, keys, extras}."""
    out = {}
    if isinstance(result, dict):
        out["keys"] = sorted(str(k) for k in result)
        out["extras"] = {str(k): _signature(v) for k, v in result.items() if k != "score"}
        if "score" not in result:
            out["bad"] = "a dict without 'score' (verl reads result['score']: KeyError)"
            return out
        result = result["score"]
    score, why = _number(result)
    if score is None:
        out["bad"] = why
    elif not math.isfinite(score):
        out["bad"] = repr(score)
    else:
        out["score"] = score
    return out


class Worker:
    def __init__(self, job, results_fd):
        self.job, self.fd = job, results_fd
        self.pool = None
        if job["mode"] == "thread":
            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="reward")

    def send(self, record):
        data = (json.dumps(record, default=str) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def _invoke(self, fn, kwargs):
        result = fn(**kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return result

    def call(self, fn, index, row, kind, fmt, answer):
        self.send({"begin": index, "row": row["id"], "kind": kind, "fmt": fmt, "len": len(answer), "t": time.time()})
        kwargs = {**row["kwargs"], "solution_str": answer, **self.job["kwargs"]}
        record = {"i": index, "row": row["id"], "kind": kind, "fmt": fmt, "len": len(answer)}
        start = time.perf_counter()
        try:
            if self.pool is not None:
                result = self.pool.submit(self._invoke, fn, kwargs).result()
            else:
                result = self._invoke(fn, kwargs)
            record["s"] = time.perf_counter() - start
            record.update(_read(result))
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are the reward's faults too
            record["s"] = time.perf_counter() - start
            record["error"] = _text(exc)
            record["error_type"] = type(exc).__name__
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        self.send(record)
        return record


async def _awaited(awaitable):
    return await awaitable


def plan(job, done):
    """The calls, in order, as (stage, row, kind, format index, answer): deterministic given the probe results
    `done` ({index: record}), so that a new worker continues where a crashed one stopped."""
    rows, formats = job["rows"], job["formats"]
    probe = rows[: job["probe"]]
    calls = []
    for row in probe:
        calls.append(("probe", row, "empty", -1, ""))
        for k, fmt in enumerate(formats):
            if row["right"] is not None:
                calls.append(("probe", row, "right", k, fmt.format(row["right"])))
            calls.append(("probe", row, "wrong", k, fmt.format(row["wrong"])))
    best = _best_formats(calls, done, len(formats))
    if best is None:
        return calls, None  # the probe is not finished: the rest is planned when it is
    for row in [r for r in rows if r["right"] is not None][: job["long_rows"]]:
        for k in best[:1]:
            for chars in job["long_chars"]:
                answer = (
                    (FILLER * (chars // len(FILLER) + 1))[: max(0, chars - 40)] + "\n" + formats[k].format(row["right"])
                )
                calls.append(("long", row, "long", k, answer))
    for row in rows[job["probe"] :]:
        calls.append(("rows", row, "empty", -1, ""))
        for k in best:
            if row["right"] is not None:
                calls.append(("rows", row, "right", k, formats[k].format(row["right"])))
            calls.append(("rows", row, "wrong", k, formats[k].format(row["wrong"])))
    return calls, best


def _best_formats(calls, done, count):
    """The formats in which some probe row scored its right answer above its wrong and empty ones; all when none
    did; None while a probe call has no record yet."""
    scores = {}
    for i, (_, row, kind, fmt, _answer) in enumerate(calls):
        if i not in done:
            return None
        scores[(row["id"], kind, fmt)] = done[i].get("score")
    good = []
    for k in range(count):
        for (rid, kind, fmt), score in scores.items():
            if kind != "right" or fmt != k or score is None:
                continue
            others = [scores.get((rid, "wrong", k)), scores.get((rid, "empty", -1))]
            if all(o is not None and score > o for o in others):
                good.append(k)
                break
    return good or list(range(count))


def work(job, start, done, results_fd, output_fd):
    """The worker: its limits, its output to the pipe, the reward loaded, the calls from `start` on."""
    os.setpgid(0, 0)
    limit = job["memory_mb"] << 20
    for which, value in ((resource.RLIMIT_DATA, limit), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, FILE_BYTES)):
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    worker = Worker(job, results_fd)
    begun = time.perf_counter()
    try:
        fn = _load(job)
    except BaseException as exc:  # noqa: BLE001 - a SystemExit at import is a load error too
        worker.send({"load_error": _text(exc), "error_type": type(exc).__name__})
        os._exit(0)
    worker.send({"loaded": time.perf_counter() - begun})
    calls, best = plan(job, done)
    index = start
    spent = 0.0
    while True:
        if index >= len(calls):
            if best is not None:
                break
            calls, best = plan(job, done)  # the probe just finished: plan the rest
            if index >= len(calls):
                break
            continue
        stage, row, kind, fmt, answer = calls[index]
        if stage == "rows" and spent > job["enough_s"]:
            worker.send({"stopped": index, "planned": len(calls)})
            break
        record = worker.call(fn, index, row, kind, fmt, answer)
        done[index] = record
        if stage == "rows":
            spent += record.get("s", 0.0)
        index += 1
    worker.send({"end": index, "planned": len(calls), "formats": best})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ------------------------------------------------------------------------------------------------- the supervisor


class Output:
    """The reward's output: counted, the first OUTPUT_FILE_BYTES written to a file, the head and tail kept."""

    def __init__(self, path):
        self.file = open(path, "wb")
        self.total = 0
        self.head = b""
        self.tail = b""

    def add(self, data):
        if self.total < OUTPUT_FILE_BYTES:
            self.file.write(data[: OUTPUT_FILE_BYTES - self.total])
        if len(self.head) < SHOWN_BYTES:
            self.head += data[: SHOWN_BYTES - len(self.head)]
        self.tail = (self.tail + data)[-SHOWN_BYTES:]
        self.total += len(data)

    def summary(self):
        self.file.close()
        return {
            "bytes": self.total,
            "head": self.head.decode("utf-8", "replace"),
            "tail": self.tail.decode("utf-8", "replace") if self.total > SHOWN_BYTES else "",
        }


def _children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read()
                if int(stat[stat.rindex(b")") + 2 :].split()[1]) == pid:
                    found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _sweep():
    """Kill every process left under the supervisor (its children, and the orphans re-parented to it)."""
    me = os.getpid()
    for _ in range(50):
        left = _children(me)
        if not left:
            return
        for pid in left:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.01)


class Supervisor:
    def __init__(self, job):
        self.job = job
        self.out = open(job["results"], "w")
        self.output = Output(job["output"])
        self.done = {}
        self.crashes = []  # {at: call index or "load", how, row, kind, len}
        self.timed_out = False
        self._begun = None
        self.started = time.monotonic()

    def record(self, record):
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def run(self):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the reward come back here
        except OSError:
            pass
        start = 0
        for _ in range(MAX_RESTARTS + 1):
            end, start = self.one_worker(start)
            if end or self.timed_out or start is None:
                break
        _sweep()
        self.record(
            {
                "summary": True,
                "output": self.output.summary(),
                "crashes": self.crashes,
                "timed_out": self.timed_out,
                "seconds": time.monotonic() - self.started,
            }
        )
        self.out.close()

    def one_worker(self, start):
        """Run one worker from call `start`: (it finished, the call to start the next worker at or None)."""
        results_r, results_w = os.pipe()
        output_r, output_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(results_r)
            os.close(output_r)
            try:
                work(self.job, start, self.done, results_w, output_w)
            finally:
                os._exit(70)
        os.close(results_w)
        os.close(output_w)
        pending = b""
        current = None  # the call under way: its begin record
        loaded = finished = False
        status = reaped_at = None
        open_fds = {results_r, output_r}
        while True:
            if status is None and time.monotonic() - self.started > self.job["deadline_s"]:
                self.timed_out = True
                self._kill(pid)
                status = "killed"
                self._crashed(current, "deadline", loaded)
                break
            if status is None and current is not None and time.time() - current["t"] > self.job["per_call_s"]:
                self._kill(pid)
                status = "killed"
                self._crashed(current, "per-call limit", loaded)
                break
            if open_fds:
                readable = select.select(list(open_fds), [], [], 0.05)[0]
            else:
                readable = []
                time.sleep(0.02)
            for fd in readable:
                data = os.read(fd, 1 << 20)
                if not data:
                    open_fds.discard(fd)
                elif fd == output_r:
                    self.output.add(data)
                else:
                    pending += data
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        kind = self._line(line)
                        if kind == "begin":
                            current = self._begun
                        elif kind == "call":
                            current = None
                        elif kind == "loaded":
                            loaded = True
                        elif kind == "end":
                            finished = True
            if status is None:
                got, code = os.waitpid(pid, os.WNOHANG)
                if got:
                    status, reaped_at = code, time.monotonic()
            # once the worker is gone, what its pipes still hold is read; a child of the reward may keep them open
            if reaped_at is not None and (not open_fds or time.monotonic() - reaped_at > 0.3):
                break
        for fd in (results_r, output_r):
            try:
                os.close(fd)
            except OSError:
                pass
        if status != "killed":
            self._kill(pid)
        if finished or self.timed_out:
            return finished, None
        if status != "killed":
            self._crashed(current, _how(status), loaded)
            if not loaded:
                return False, None  # it dies on import: a new worker would too
        next_start = (current["begin"] + 1) if current else (max(self.done) + 1 if self.done else start)
        return False, next_start

    def _line(self, line):
        """One record from the worker: kept (calls, load), or the call now under way (`begin`)."""
        try:
            item = json.loads(line)
        except ValueError:
            return ""
        if not isinstance(item, dict):
            return ""
        if "begin" in item:
            self._begun = item
            return "begin"
        self.record(item)
        if "i" in item:
            self.done[item["i"]] = item
            return "call"
        if "loaded" in item:
            return "loaded"
        if "end" in item or "stopped" in item or "load_error" in item:
            return "end"
        return ""

    def _crashed(self, current, how, loaded):
        """The worker ended without finishing: during a call (recorded as that call's result), at load, or between."""
        if current is not None:
            record = {
                "i": current["begin"],
                "row": current["row"],
                "kind": current["kind"],
                "fmt": current["fmt"],
                "len": current["len"],
                "crash": how,
                "s": time.time() - current["t"],
            }
            self.done[current["begin"]] = record
            self.record(record)
        self.crashes.append(
            {"at": current["begin"] if current else ("between calls" if loaded else "load"), "how": how}
        )

    def _kill(self, pid):
        for sender in (os.killpg, os.kill):
            try:
                sender(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _how(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}"
    return f"exit {os.WEXITSTATUS(status)}"


def main():
    with open(sys.argv[1]) as fh:
        job = json.load(fh)
    if os.path.isdir(job["cwd"]):
        os.chdir(job["cwd"])
    Supervisor(job).run()


if __name__ == "__main__":
    main()
