"""Where an attempt of a run runs on its Ray cluster: the nodes, the nodes left out, and the CPU trainer's worker.

Used by the job's own driver (grpolab.heal.supervise), which is a Ray driver of the run's cluster:

    connect()                         ray.init() of the job's own cluster (the job's RAY_ADDRESS)
    alive_nodes() -> [Node]           the cluster's live nodes, with what they hold
    nodes_at(address, nodes)          the nodes a diagnosis's node (an ip or a host name) names
    Fence(node)                       holds every resource of a node, so that nothing of the next attempt (verl's
                                      placement groups, our own trainer) is placed there: a node left out
    RayProcess(command, env, cwd, exclude)   the CPU trainer of train.engine trl in a Ray actor on a node that is
                                      not left out; Popen's interface (its output as lines, poll, wait, signals),
                                      so the driver follows it as it follows a local process

A verl run's own driver (main_ppo) runs beside the job's driver and places verl's workers itself; a node left out
is kept from it by the fence. Our own trainer is placed by Ray's label selector on the node id as well. Every actor
here lives as long as the job's driver: Ray ends them with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import subprocess
import threading
from dataclasses import dataclass, field

NODE_ID = "ray.io/node-id"  # the label Ray gives every node
NOT_PLACED = ("memory", "object_store_memory")  # what a node holds that no placement asks for by name
FENCE_WAIT_S = 60.0
PLACE_SAY_S = 30.0  # a trainer not placed within this says so in the job's log (and goes on waiting) ...
PLACE_WAIT_S = 900.0  # ... this long at most: then the attempt could not start
ASK_TIMEOUT_S = 30.0  # a question to the cluster (its nodes) not answered in this is a cluster gone
ANSWER_TIMEOUT_S = 20.0  # a node that runs no task in this is gone


@dataclass(frozen=True)
class Node:
    node_id: str
    address: str  # its ip, as Ray knows it
    hostname: str
    resources: dict[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How a person tells the node apart: its address, and the start of its id (several nodes of a simulated
        cluster share one address)."""
        return f"{self.address} ({self.node_id[:8]})"

    def placeable(self) -> dict[str, float]:
        """The resources a placement can ask for: CPUs, devices, custom resources (not memory, not node:<ip>)."""
        return {
            k: v
            for k, v in self.resources.items()
            if v > 0 and k not in NOT_PLACED and not k.startswith(("node:", "accelerator_type:"))
        }


def connect():
    """ray.init() of the cluster this job runs on: Ray gives a job's driver its RAY_ADDRESS (never "auto", which
    would join whatever cluster this machine last started); the ray module. RuntimeError without one."""
    address = os.environ.get("RAY_ADDRESS")
    if not address:
        raise RuntimeError("RAY_ADDRESS is not set: this process is not a Ray job")
    # lazy: ray (only the job's driver is a Ray driver; seconds to import)
    import ray

    if not ray.is_initialized():
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    return ray


class ClusterGone(RuntimeError):
    """The Ray cluster did not answer in time (its head gone): nothing can be placed on it."""


def alive_nodes(timeout: float = ASK_TIMEOUT_S) -> list[Node]:
    """The live nodes; ClusterGone when the cluster does not answer within `timeout` (a call to a dead head would
    wait for as long as Ray retries it)."""
    # lazy: ray (only the job's driver is a Ray driver; seconds to import)
    import ray

    box: dict = {}

    def ask() -> None:
        with contextlib.suppress(Exception):
            box["nodes"] = ray.nodes()

    asking = threading.Thread(target=ask, daemon=True, name="grpolab-ask-nodes")
    asking.start()
    asking.join(timeout)
    if "nodes" not in box:
        raise ClusterGone(f"the Ray cluster did not answer within {timeout:g} s (its head is gone?)")
    return [
        Node(n["NodeID"], n.get("NodeManagerAddress", ""), n.get("NodeManagerHostname", ""), dict(n["Resources"]))
        for n in box["nodes"]
        if n.get("Alive")
    ]


def this_node() -> str:
    """The node id of this process (the job's driver)."""
    # lazy: ray (only the job's driver is a Ray driver; seconds to import)
    import ray

    return ray.get_runtime_context().get_node_id()


def nodes_at(where: str | None, nodes: list[Node]) -> list[Node]:
    """The nodes a diagnosis names (`10.0.0.7`, a host name, a node id or its start)."""
    if not where:
        return []
    return [n for n in nodes if where in (n.address, n.hostname) or (len(where) >= 8 and n.node_id.startswith(where))]


def usable(nodes: list[Node], device: str, per_node: int) -> list[Node]:
    """The nodes that hold what one node of the recipe needs: cluster.devices_per_node of its device (a CPU
    recipe: a CPU)."""
    key = {"npu": "NPU", "cuda": "GPU"}.get(device, "CPU")
    want = per_node if key != "CPU" else 1
    return [n for n in nodes if n.resources.get(key, 0) >= want]


class Fence:
    """An actor pinned to a node that holds all of the node's placeable resources: nothing else can be placed
    there while it lives (the node is left out). `ready` says whether it got them within FENCE_WAIT_S (a node whose
    resources the failed attempt still holds frees them when its workers end)."""

    def __init__(self, node: Node) -> None:
        # lazy: ray (only the job's driver is a Ray driver; seconds to import)
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # lazy: ray (as above)

        self.node = node
        held = node.placeable()
        cpus, gpus = held.pop("CPU", 0), held.pop("GPU", 0)
        self.actor = (
            ray.remote(_Holder)
            .options(
                num_cpus=cpus,
                num_gpus=gpus,
                resources=held,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            )
            .remote()
        )
        try:
            ray.get(self.actor.ready.remote(), timeout=FENCE_WAIT_S)
            self.ready = True
        except Exception:  # GetTimeoutError: still waiting for the node's resources; it takes them when freed
            self.ready = False

    def release(self) -> None:
        # lazy: ray (only the job's driver is a Ray driver; seconds to import)
        import ray

        with contextlib.suppress(Exception):
            ray.kill(self.actor)


class _Holder:
    def ready(self) -> bool:
        return True


def _here() -> str:
    # lazy: ray (only the job's driver is a Ray driver; seconds to import)
    import ray

    return ray.get_runtime_context().get_node_id()


def answers(node_id: str, timeout: float = ANSWER_TIMEOUT_S) -> bool:
    """Whether a node runs a task now (a node whose raylet is gone still counts as alive in Ray's table for a while:
    its health checks take that long to fail)."""
    # lazy: ray (only the job's driver is a Ray driver; seconds to import)
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(_here).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False), max_retries=0
    )
    try:
        return ray.get(task.remote(), timeout=timeout) == node_id
    except Exception:  # GetTimeoutError, the node died under it, it cannot be scheduled: no answer
        return False


class _Worker:
    """The Ray actor that runs one attempt's command on its node: the command's output back as a stream of lines,
    its signals passed on, and the command killed with the worker (PR_SET_PDEATHSIG) when the worker dies."""

    def start(self, command: list[str], env: dict[str, str], cwd: str) -> dict:
        # lazy: ray (only the job's driver is a Ray driver; seconds to import)
        import ray

        self.proc = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            bufsize=0,
            preexec_fn=_die_with_parent,
        )
        context = ray.get_runtime_context()
        return {"pid": self.proc.pid, "worker_pid": os.getpid(), "node_id": context.get_node_id()}

    def lines(self):
        """The command's output, a chunk of whole lines at a time; then ("exit", code)."""
        for line in iter(self.proc.stdout.readline, b""):  # noqa: UP028 (Ray drives a generator by next(), not send())
            yield line
        yield ("exit", self.proc.wait())

    def send_signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signum)


def _die_with_parent() -> None:
    """In the command's process, before it runs: die (SIGKILL) when the Ray worker that started it dies."""
    PR_SET_PDEATHSIG = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class RayProcess:
    """The command in a Ray actor (a worker of its own, on a node not left out), with Popen's interface: `stdout`
    (readline), `poll()`, `wait()`, `send_signal()`, `terminate()`, `kill()`, `pid`. When the worker dies (killed,
    its node gone), its output ends, `returncode` is 1, and `error` holds Ray's own words (which name the worker's
    pid and its node's address: the diagnosis reads them from the log)."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: str, exclude: list[str] = (), say=None) -> None:
        # lazy: ray (only the job's driver is a Ray driver; seconds to import)
        import ray

        # one CPU: a CPU trainer takes a node's CPU as verl's workers take its devices (Ray places it where one is free)
        options: dict = {"num_cpus": 1, "max_concurrency": 4, "max_restarts": 0}
        if exclude:
            options["label_selector"] = {NODE_ID: f"!in({','.join(exclude)})"}
        self.actor = ray.remote(_Worker).options(**options).remote()
        self.error: str | None = None
        self.returncode: int | None = None
        ref = self.actor.start.remote(list(command), dict(env), cwd)
        ready, _ = ray.wait([ref], timeout=PLACE_SAY_S)
        if not ready and say is not None:  # every CPU of the nodes it may use is taken: it waits for one
            say("the trainer waits for a free CPU on a node of the cluster (`ray status` shows what holds them)")
        try:
            started = ray.get(ref, timeout=PLACE_WAIT_S - PLACE_SAY_S)
        except Exception:
            self.kill()
            raise
        self.pid, self.worker_pid, self.node_id = started["pid"], started["worker_pid"], started["node_id"]
        self._lines: queue.Queue = queue.Queue(maxsize=1000)
        self._done = threading.Event()
        self.stdout = self  # readline() below: the caller reads it as Popen's stdout
        threading.Thread(target=self._pump, daemon=True, name="grpolab-attempt-output").start()

    def _pump(self) -> None:
        # lazy: ray (only the job's driver is a Ray driver; seconds to import)
        import ray

        code = 1
        try:
            for ref in self.actor.lines.remote():
                item = ray.get(ref)
                if isinstance(item, tuple):
                    code = item[1]
                else:
                    self._lines.put(item)
        except Exception as exc:  # ActorDiedError (the worker killed, its node gone) and its kin
            self.error = f"{type(exc).__name__}: {exc}"
            self.kill()  # "unavailable" may be a worker still running: it must not train beside the next attempt
            text = "".join(f"{line}\n" for line in self.error.splitlines())
            self._lines.put(text.encode("utf-8", "replace"))
            code = 1
        else:  # the command ended: its worker frees the node's CPU now (a fence leaving this node out waits for it)
            self.kill()
        self.returncode = code
        self._done.set()
        self._lines.put(b"")

    def readline(self) -> bytes:
        return self._lines.get()

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired("ray actor", timeout)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """Passed on without waiting (it is called from a signal handler: `grpolab stop`)."""
        with contextlib.suppress(Exception):
            self.actor.send_signal.remote(signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        # lazy: ray (only the job's driver is a Ray driver; seconds to import)
        import ray

        with contextlib.suppress(Exception):
            ray.kill(self.actor)
