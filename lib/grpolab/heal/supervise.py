"""The run's own driver on its Ray cluster: `python -m grpolab.heal.supervise RUN_DIR -- COMMAND ...`.

On the embedded head every run's Ray job is this driver (grpolab.jobs.launch submits it), so it lives on the
cluster, in the session Ray gives a job: a notebook kernel that is shut down or a terminal that is closed does not
reach it. It wraps each attempt of the run with the job's wrapper (grpolab.jobs.job_entry: secrets, the log kept
in the run directory, the job's own record, `grpolab stop`), and when an attempt fails:

1. diagnoses the attempt's own part of the log (grpolab.monitor.diagnose: the cause id, the origin node and rank),
   with the last step the run logged;
2. decides by the recipe's trainer.restarts (grpolab.heal.policy): a transient cause restarts, anything else stops
   the run with the diagnosis as its final word;
3. plans the restart as `grpolab resume` plans a resume (grpolab.jobs.resume.plan_restart: the latest complete
   checkpoint; refused when there is none, the data changed, nothing is left to train) and renders it through the
   one gate (grpolab.rules.gate), in the same run directory: the run keeps its id and its record;
4. leaves out the origin node when the cause is one of trainer.restarts.exclude_on (grpolab.jobs.placement: a
   fence holds the node's resources, our own trainer is kept off it by Ray's label selector), checks that the
   nodes left still hold cluster.nnodes (else waits for nodes or stops, by trainer.restarts.too_small, saying
   whether the layout would pass the checks on fewer nodes), waits the back-off, and starts the next attempt.

Every attempt and decision goes to RUN/lineage.json (grpolab.jobs.lineage) and, as a line, to the job's log. The
curves continue: a restart's metrics (verl's file logger truncates its file when it starts) are written to
RUN/attempts/N/metrics.jsonl and appended to RUN/metrics.jsonl as they come, steps from the checkpoint on (the
monitor merges a step logged again, the later value winning). Per-node telemetry runs beside the attempts
(grpolab.jobs.telemetry, every trainer.telemetry_s).

The CPU trainer (train.engine trl) runs in a Ray actor placed by Ray (grpolab.jobs.placement.RayProcess); verl's
own driver (main_ppo) runs as a process beside this one and places verl's workers itself. Without a Ray cluster to
connect to (the wrapper run by hand), attempts run here, without telemetry or left-out nodes.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from pathlib import Path

from grpolab import run_folder
from grpolab.heal.policy import Decision, Failed, decide
from grpolab.jobs import lineage as L
from grpolab.jobs import placement
from grpolab.jobs.job_entry import Wrapper
from grpolab.jobs.resume import ResumeRefused, plan_restart
from grpolab.jobs.runs import Run, read_tail
from grpolab.jobs.telemetry import Samplers
from grpolab.problems import errors
from grpolab.recipe.loader import load_recipe, to_yaml
from grpolab.recipe.secrets import redaction
from grpolab.rules.gate import gated_launch

WAIT_POLL_S = 5.0  # how often `too_small: wait` looks at the cluster again
JOIN_EVERY_S = 0.5  # how often a restart's metrics are appended to metrics.jsonl


def _say(wrapper: Wrapper, text: str) -> None:
    """A line of the driver's own in the job's log (both copies)."""
    wrapper.write(f"grpolab: {text}\n".encode())


def last_step(run: Run) -> int | None:
    """The highest step among the last lines of metrics.jsonl (None before the first)."""
    steps = []
    for line in read_tail(run.metrics_file, 20):
        with contextlib.suppress(ValueError, TypeError, KeyError):
            steps.append(int(json.loads(line)["step"]))
    return max(steps) if steps else None


def diagnose_from(log: Path, offset: int, extra: str = ""):
    """The diagnosis of the log from `offset` on (one attempt's part of it), and of `extra` (Ray's words)."""
    # lazy: orjson and the diagnosis (hyperscan and numpy, later) load only when an attempt failed
    from grpolab.monitor.diagnose import Scan

    scan = Scan()
    with contextlib.suppress(OSError), open(log, "rb") as handle:
        handle.seek(offset)
        scan.feed_file(log, None, handle)
    if extra:
        scan.feed_text(extra, "<ray>", counted=False)
    return scan.result()


def known_causes() -> set[str]:
    # lazy: orjson, with the cause registry (only a failed attempt's decision names it)
    from grpolab.monitor.causes import BY_ID, SILENT, UNKNOWN

    return {*BY_ID, UNKNOWN, *SILENT}


class MetricsJoin:
    """Appends the whole lines a restart's trainer writes to its own metrics file onto the run's metrics.jsonl, as
    they come (and what is left when it stops)."""

    def __init__(self, source: Path, target: Path) -> None:
        self.source, self.target, self.offset = source, target, 0
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="grpolab-metrics-join")
        self._thread.start()

    def _loop(self) -> None:
        while not self._halt.wait(JOIN_EVERY_S):
            self.drain()

    def drain(self) -> None:
        try:
            with open(self.source, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return
        whole = data[: data.rfind(b"\n") + 1]
        if whole:
            with open(self.target, "ab") as out:
                out.write(whole)
            self.offset += len(whole)

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(timeout=5)
        self.drain()


class Supervisor:
    def __init__(self, run_dir: Path, command: list[str], wrapper: Wrapper) -> None:
        self.run, self.command, self.wrapper = Run(run_dir), command, wrapper
        self.recipe = load_recipe(self.run.recipe_file)
        self.policy = self.recipe.trainer.restarts
        self.ray = None
        self.excluded: dict[str, placement.Node] = {}  # node id -> node, left out for the rest of the run
        self.gone: set[str] = set()  # node ids of nodes that vanished: kept off, they are not there
        self.fences: dict[str, placement.Fence] = {}
        self.lineage: dict = {"run_id": self.run.run_id, "policy": self.policy.model_dump(), "attempts": []}

    # ------------------------------------------------------------------------------------------ the loop
    def run_all(self) -> tuple[int, bool]:
        """Every attempt until one succeeds, is stopped, or the policy stops the run; (exit code, deleted)."""
        self._connect()
        samplers = None
        if self.ray is not None and self.recipe.trainer.telemetry_s > 0:
            samplers = Samplers(self.run.path, self.recipe.trainer.telemetry_s).start()
        try:
            return self._attempts()
        finally:
            if samplers is not None:
                samplers.stop()
            for fence in self.fences.values():
                fence.release()

    def _connect(self) -> None:
        try:
            self.ray = placement.connect()
        except Exception as exc:  # run by hand, or the head went away: attempts run here, nothing is placed
            _say(self.wrapper, f"no Ray cluster to place attempts on ({type(exc).__name__}): they run on this node")

    def _attempts(self) -> tuple[int, bool]:
        command, env, resumed = self.command, self.wrapper.env, None
        number = 1
        while True:
            attempt = {"number": number, "started": time.time(), "decision": L.RUNNING, "resumed_from": resumed}
            attempt["excluded"] = [{"node_id": n.node_id, "node": n.label} for n in self.excluded.values()]
            attempt["log_offset"] = self._log_size()
            self._record(attempt)
            join = None
            if number > 1:
                own = run_folder.attempt_dir(self.run.path, number) / run_folder.METRICS
                join = MetricsJoin(own, self.run.metrics_file)
            try:
                proc = self._start(command, env)
            except Exception as exc:  # the trainer's worker could not be placed or started
                if join is not None:
                    join.stop()
                _say(self.wrapper, f"attempt {number} could not start: {type(exc).__name__}: {exc}")
                code, deleted, error = 1, False, f"{type(exc).__name__}: {exc}"
            else:
                attempt["trainer"] = self._where(proc)
                self._record(attempt)
                code, deleted = self.wrapper.follow(proc)
                error = getattr(proc, "error", None)
                if join is not None:
                    join.stop()
            attempt.update(ended=time.time(), exit_code=code)
            if deleted:
                return code, True
            if self.wrapper.stopped is not None:
                attempt.update(decision=L.STOPPED, why="grpolab stop")
                self._record(attempt)
                return code, False
            if code == 0:
                attempt.update(decision=L.SUCCEEDED)
                self._record(attempt)
                return 0, False
            if code < 0:  # a process of this node ended by a signal: say which, the diagnosis reads it
                name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
                _say(
                    self.wrapper, f"attempt {number}: the trainer (pid {proc.pid}) was ended by signal {-code} ({name})"
                )
            decision, plan, following = self._decide(attempt, error)
            if not decision.restart:
                attempt.update(decision=L.STOP, why=decision.why)
                self._record(attempt)
                _say(
                    self.wrapper,
                    f"attempt {number} failed ({attempt.get('cause') or 'no cause found'}): {decision.why}",
                )
                return code, False
            attempt.update(
                decision=L.RESTART, why=decision.why, restart=decision.number, of=decision.of, wait_s=decision.wait_s
            )
            self._record(attempt)
            _say(
                self.wrapper,
                f"attempt {number} failed ({attempt['cause']}{_at(attempt)}): restart {decision.number} of "
                f"{decision.of} from the checkpoint of step {plan.checkpoint.step}"
                + (f" in {decision.wait_s:g} s" if decision.wait_s else ""),
            )
            if not self._pause(decision.wait_s):
                attempt.update(decision=L.STOPPED, why="grpolab stop during the back-off")
                self._record(attempt)
                return code, False
            number += 1
            command, env = following
            resumed = {"step": plan.checkpoint.step, "checkpoint": str(plan.checkpoint.path)}

    # ------------------------------------------------------------------------------------------ deciding
    def _decide(self, attempt: dict, error: str | None) -> tuple[Decision, object, tuple | None]:
        """Diagnose the attempt, decide by the policy, then check that the restart can be made (a checkpoint to
        resume from, the same data, a launch the gate passes, nodes enough): the decision, and when it restarts the
        resume plan and the next attempt's (command, env)."""
        failure = diagnose_from(self.run.job_log, attempt["log_offset"]) if self.wrapper.log is not None else None
        if failure is None and error:
            failure = diagnose_from(Path("/dev/null"), 0, error)
        node = failure.node if failure is not None else None
        trainer = attempt.get("trainer") or {}
        placed = self.ray is not None and not self.recipe.engine.verl  # our own trainer, one process on one node
        if placed and trainer.get("node_id") and node in (None, trainer.get("address")):
            # the trainer's own output (or Ray's words about its worker): the origin is the node it ran on, by id
            # (the nodes of a simulated cluster share one address)
            node, origin = trainer.get("address"), trainer["node_id"]
        else:
            origin = node
        attempt.update(step=last_step(self.run), node=node)
        if failure is not None:
            attempt.update(
                cause=failure.cause, rank=failure.rank, message=failure.message, fix=failure.fix, lines=failure.lines
            )
        earlier = self.lineage["attempts"][:-1]
        failed = Failed(attempt.get("cause"), node, attempt["step"], attempt["ended"])
        decision = decide(self.policy, failed, earlier, known_causes())
        if not decision.restart:
            return decision, None, None
        try:
            plan = plan_restart(self.run)
            following = self._restart_command(plan, attempt["number"] + 1)
        except ResumeRefused as exc:
            return Decision(False, f"{decision.why}, but the run cannot resume: {exc}"), None, None
        if self.ray is not None:
            try:
                if decision.exclude:
                    self._exclude(origin, f"{attempt['cause']} on node {node}")
                gone = self._gone(attempt, error)
                if gone:
                    attempt["gone"] = gone
                short = self._wait_for_nodes()
            except placement.ClusterGone as exc:
                short = str(exc)
            if short:
                return Decision(False, f"{decision.why}, but {short}"), None, None
        return decision, plan, following

    def _exclude(self, where: str, why: str) -> None:
        for node in placement.nodes_at(where, placement.alive_nodes()):
            if node.node_id in self.excluded:
                continue
            self.excluded[node.node_id] = node
            fence = placement.Fence(node)
            self.fences[node.node_id] = fence
            held = "its resources held" if fence.ready else "its resources held as they are freed"
            _say(self.wrapper, f"node {node.label} is left out of the next attempts ({why}; {held})")

    def _gone(self, attempt: dict, error: str | None) -> str | None:
        """The node the attempt's trainer ran on, when it is gone: no longer alive in Ray's table, or, when Ray's
        words ended the attempt, running no task (Ray marks a vanished node dead only once its health checks
        fail). The next attempts keep off it (it is not left out by the policy: it is not there)."""
        where = attempt.get("trainer") or {}
        node_id = where.get("node_id")
        if not node_id or node_id == placement.this_node():
            return None
        alive = node_id in {n.node_id for n in placement.alive_nodes()}
        if alive and (not error or placement.answers(node_id)):
            return None
        self.gone.add(node_id)
        _say(self.wrapper, f"the node the trainer ran on ({where.get('address')}, {node_id[:8]}) is gone")
        return f"{where.get('address')} ({node_id[:8]})"

    def _usable(self) -> list[placement.Node]:
        """The live nodes not left out that hold what a node of the recipe needs."""
        nodes = [n for n in placement.alive_nodes() if n.node_id not in self.excluded]
        cluster = self.recipe.cluster
        return placement.usable(nodes, cluster.device, cluster.devices_per_node)

    def _wait_for_nodes(self) -> str | None:
        """None when the usable nodes left are cluster.nnodes or more; else, after waiting (too_small: wait) in vain
        or at once (stop), why not."""
        cluster = self.recipe.cluster
        deadline = time.time() + (self.policy.wait_s if self.policy.too_small == "wait" else 0)
        said = False
        while True:
            left = len(self._usable())
            if left >= cluster.nnodes:
                return None
            if not said:
                waiting = (
                    f"; waiting up to {self.policy.wait_s:g} s for nodes (trainer.restarts.too_small: wait)"
                    if self.policy.too_small == "wait"
                    else ""
                )
                _say(self.wrapper, f"{left} usable node(s) left, cluster.nnodes is {cluster.nnodes}{waiting}")
                said = True
            if time.time() >= deadline or self.wrapper.stopped is not None:
                break
            time.sleep(WAIT_POLL_S)
        return (
            f"{left} usable node(s) are left and the recipe needs cluster.nnodes {cluster.nnodes} "
            f"({self._smaller(left)})"
        )

    def _smaller(self, nodes: int) -> str:
        """Whether the recipe's layout passes the checks on `nodes` nodes (the one gate), in a few words."""
        if nodes < 1:
            return "no node to run on"
        try:
            smaller = load_recipe(self.run.recipe_file, [f"cluster.nnodes={nodes}"])
            found = errors(gated_launch(smaller, run_dir=None)[0])
        except Exception as exc:  # an unusable recipe on fewer nodes is a no as well
            return f"on {nodes} node(s) the recipe does not load: {exc}"
        if found:
            p = found[0]
            return f"on {nodes} node(s) the layout fails the checks: {p.rule} {p.key}: {p.message}"
        return (
            f"on {nodes} node(s) the layout passes the checks: resume by hand with "
            f"`grpolab resume {self.run.run_id} --set cluster.nnodes={nodes}` if its checkpoint can take it"
        )

    def _pause(self, seconds: float) -> bool:
        """Wait the back-off; False when `grpolab stop` came meanwhile."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.wrapper.stopped is not None:
                return False
            time.sleep(min(0.5, deadline - time.time()))
        return self.wrapper.stopped is None

    # ------------------------------------------------------------------------------------------ attempts
    def _restart_command(self, plan, number: int) -> tuple[list[str], dict[str, str]]:
        """The next attempt's command, rendered by the one gate from the resume plan's recipe for this run
        directory, and its env: its metrics go to RUN/attempts/N/metrics.jsonl (joined to metrics.jsonl)."""
        folder = run_folder.attempt_dir(self.run.path, number)
        folder.mkdir(parents=True, exist_ok=True)
        recipe = plan.recipe
        problems, launch = gated_launch(recipe, run_dir=str(self.run.path))
        if errors(problems):
            found = "; ".join(f"{p.rule} {p.key}: {p.message}" for p in errors(problems))
            raise ResumeRefused(f"the resumed recipe fails the checks: {found}")
        argv = launch.argv(sys.executable)
        if not recipe.engine.verl:  # the engine's own trainer reads its recipe from a file: this attempt's
            own = folder / run_folder.RECIPE
            own.write_text(to_yaml(recipe, env=redaction(recipe).env(recipe.env)))
            argv += ["--recipe", str(own)]
        env = {**self.wrapper.env, "VERL_FILE_LOGGER_PATH": str(folder / run_folder.METRICS)}
        return argv, env

    def _start(self, command: list[str], env: dict[str, str]):
        if self.ray is not None and not self.recipe.engine.verl:
            say = lambda text: _say(self.wrapper, text)  # noqa: E731
            return placement.RayProcess(command, env, str(self.run.path), [*self.excluded, *self.gone], say)
        return self.wrapper.spawn(command, env)

    def _where(self, proc) -> dict:
        node_id = getattr(proc, "node_id", None)
        if node_id is None and self.ray is not None:
            node_id = placement.this_node()
        try:
            nodes = placement.alive_nodes() if node_id else []
        except placement.ClusterGone:
            nodes = []
        address = next((n.address for n in nodes if n.node_id == node_id), None)
        return {
            "node_id": node_id,
            "address": address,
            "pid": proc.pid,
            "worker_pid": getattr(proc, "worker_pid", None),
        }

    def _log_size(self) -> int:
        try:
            return self.run.job_log.stat().st_size
        except OSError:
            return 0

    def _record(self, attempt: dict) -> None:
        attempts = self.lineage["attempts"]
        if not attempts or attempts[-1] is not attempt:
            attempts.append(attempt)
        try:
            L.write(self.run.path, self.lineage)
        except OSError as exc:  # a full disk: the run goes on, its log says what happened
            _say(self.wrapper, f"could not write {run_folder.lineage_file(self.run.path)}: {exc.strerror or exc}")


def _at(attempt: dict) -> str:
    return (f" on node {attempt['node']}" if attempt.get("node") else "") + (
        f" at step {attempt['step']}" if attempt.get("step") is not None else ""
    )


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m grpolab.heal.supervise RUN_DIR -- COMMAND [ARGS ...]", file=sys.stderr)
        return 2
    wrapper = Wrapper(Path(argv[0]))
    if not wrapper.begin():
        return 1
    try:
        supervisor = Supervisor(Path(argv[0]), argv[2:], wrapper)
    except Exception as exc:  # the run's recipe.yaml cannot be read: one attempt, no restarts
        _say(wrapper, f"no restarts: the run's recipe cannot be read ({type(exc).__name__}: {exc})")
        return wrapper.end(*wrapper.follow(wrapper.spawn(argv[2:])))
    return wrapper.end(*supervisor.run_all())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
