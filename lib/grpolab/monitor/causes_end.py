"""The causes that follow from another failure or end a job from outside: start-up timeouts, kills and dead
workers. The last part of the cause registry (grpolab.monitor.causes), in the order of origin: they come after
every cause that starts a failure, because a failed job prints them after its own error."""

from __future__ import annotations

from grpolab.monitor.cause import Cause
from grpolab.monitor.signs import LAUNCHER_KILLING, NODE_STOPPED, RAYLET_REGISTER

CAUSES: tuple[Cause, ...] = (
    Cause(
        "startup-timeout",
        "something did not come up in time: an inference engine, a Ray actor or a placement group",
        "look for the error of the part that did not start (the lines above it); give large models more time "
        "(trainer.timeout_s: 1800 and HCCL_CONNECT_TIMEOUT on NPU) and check the cluster has the resources the "
        "placement group asks for (`ray status`)",
        (
            r"Placement group creation timed out|placement group[^\n]{0,80}(?:timed out|timeout)",
            r"GetTimeoutError",
            r"Timed out waiting for[^\n]+",
            # Ray's start of a local node (`Timed out after 60 seconds while waiting for node to startup.`)
            r"Timed out after [\d.]+ ?s\w{0,6} while waiting for (?:the )?(?:node|raylet|server|engine|worker|actor)",
            r"(?:engine|server|actor|worker|core)[^\n]{0,80}(?:did not|failed to) (?:start|become ready|respond|"
            r"come (?:up|online)|get ready)"
            r"[^\n]{0,40}(?:within|in time|timeout|after)",
            r"(?:startup|initiali[sz]ation|health check)[^\n]{0,40}(?:timed out|timeout)",
            r"Timeout (?:while )?waiting for (?:the )?(?:server|engine|worker|actor)",
            # a Ray node or driver that could not reach the head's GCS in time
            r"Failed to connect to GCS at address",
            # a driver's or worker's own process that could not register with its node's raylet
            RAYLET_REGISTER,
            # a rollout server that did not come up (AReaL's launcher: the server's own log says why)
            r"\b(?:server|engine)s? (?:launch|start(?:-?up)?) failed|\b(?:server|engine) failed to launch",
            # a router with no engine behind it that answers yet (sglang-router's 503 while the engines come up)
            r"No (?:available|healthy) (?:workers|engines|servers)\b[^\n]{0,40}(?:circuits? open|unhealthy|ready)",
            # a client that waited for its server to be ready (PyTriton's `Waiting for server to be ready timed out.`)
            r"Waiting for (?:the )?(?:server|engine|worker|actor)s?\b[^\n]{0,40}(?:timed out|timeout)",
            # a server its client could not reach in the time it gives it (ART's `Unable to reach OpenAI-compatible
            # server within 30.0 seconds`)
            r"(?:Unable to reach|could not reach|cannot reach)[^\n]{0,60}\bserver\b[^\n]{0,20} within [\d.]+ ?s",
            # SGLang's rank that loaded its weights while the other ranks of its group did not
            r"could finish the model loading, but there are other ranks",
            # a client's check of its server's health that found nothing listening (TRL's wait for `vllm serve`)
            r"Max retries exceeded with url: /health\b",
        ),
        (
            "unable to reach",
            "register worker",
            "could not reach",
            "cannot reach",
            "timed out",
            "timeout",
            "did not",
            "failed to",
            "launch failed",
            "start failed",
            "startup failed",
            "no available",
            "no healthy",
            "could finish the model loading",
        ),
        ("vllm-project/vllm PR 35616", "vllm-project/vllm-ascend issue 3977", "vllm-project/vllm issue 19543")
        + ("sgl-project/sglang PR 39128",),
        rule="startup-timeout",
        ignorecase=True,
    ),
    Cause(
        "killed",
        "the process was killed from outside (SIGKILL) and the log names no memory cause: a scheduler, a time "
        "limit or a person",
        "check the scheduler's time and memory limits and who stopped the job; if host memory is the suspect, "
        "look at `dmesg` on the node for the kernel's OOM killer",
        (
            r"^{P}Killed$",
            r"\bSIGKILL\b|\bsignal 9\b|\bsignal: killed\b",
            # torchrun's agent stopped from outside (a launcher that saw another process of the job end)
            r"Received \d+ death signal, shutting down workers",
            # Ray's actor whose node was stopped from outside (an autoscaler or a cluster's scheduler scaled it down:
            # `the actor's node was terminated expectedly: received SIGTERM`)
            NODE_STOPPED.pattern,
            # 137 from a shell or a container; -9 from Python's subprocess, SGLang's launcher (`Exit code: -9`)
            r"(?i:exit(?:ed)? (?:with )?(?:code|status))[ :=]*(?:137|-9)\b|\breturn ?code[ :=]*-9\b|exitcode ?: ?-9\b",
            # DeepSpeed's launcher stopping the other ranks once one of them ended
            LAUNCHER_KILLING + r" \d+",
            # Slurm's job past its time limit (`slurmstepd: error: *** JOB 42 ON n1 CANCELLED AT 2026-01-02T03:04:05
            # DUE TO TIME LIMIT ***`)
            r"\bCANCELLED (?:AT \S+ )?DUE TO TIME LIMIT\b",
        ),
        (
            "killed",
            "sigkill",
            "signal",
            "exit",
            "returncode",
            "return code",
            "death signal",
            "received sigterm",
            "due to time limit",
        ),
        ("grpolab's seeded list (shell and torchrun messages)", "sgl-project/sglang issue 15235"),
        # Ray's list of what may have killed a dead actor (also when a post wraps it mid-sentence): advice, not a kill
        unless=(r"potential root causes", r"ray stop --force", r"killed by SIGKILL by OOM killer due to high memory"),
        weak=(LAUNCHER_KILLING,),  # the launcher's clean-up: the cause only if nothing else is
    ),
    Cause(
        "worker-died",
        "a Ray worker or actor died and the log gives no cause of its own: read that worker's own log (named "
        "above by its pid and node)",
        "read the dead worker's own output (`ray logs worker-*<pid>*.out --node-ip NODE` or /tmp/ray/session_latest/"
        "logs on that node): a native crash (segfault), the kernel's OOM killer (`dmesg`) or a lost node leaves "
        "nothing in the driver's log",
        (
            r"A worker died or was killed",
            r"The actor died unexpectedly|The actor died because of an error raised in its creation task",
            r"ActorDiedError|RayActorError|ActorUnavailableError|OwnerDiedError|NodeDiedError|ObjectLostError",
            r"worker process has died|Worker exit type: (?:SYSTEM_ERROR|NODE_DIED|UNEXPECTED)",
            r"Segmentation fault|SIGSEGV|core dumped|Fatal Python error",
            r"(?:node|raylet)[^\n]{0,160}(?:has been marked dead|died|is dead)",
            r"ChildFailedError",
            # a trainer's own scheduler saying one of its worker processes ended (AReaL's WorkerFailedError)
            r"\bWorkerFailedError\b|\bWorker '[^'\n]{1,80}' (?:failed|exited|died) with exit code",
        ),
        (
            "died",
            "actordiederror",
            "rayactorerror",
            "actorunavailableerror",
            "ownerdiederror",
            "nodediederror",
            "objectlosterror",
            "worker exit type",
            "segmentation fault",
            "sigsegv",
            "core dumped",
            "fatal python error",
            "marked dead",
            "is dead",
            "childfailederror",
            "workerfailederror",
            "with exit code",
        ),
        ("Agent-RL/ReCall issue 62", "volcengine/verl issue 4921"),
    ),
)
