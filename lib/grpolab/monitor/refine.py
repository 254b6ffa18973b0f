"""Which cause a log's evidence names where two of the registry's causes read the same failure (grpolab.monitor.diagnose
keeps each cause's lines, `hits`, and asks this before it decides): a device's wait that failed while a collective
timed out is the timeout; NCCL's errors first reported by a watchdog are a running collective's, not the set-up's; an
unexpected keyword one library passes to another is a version mismatch, not a config key.

    refine(hits)      hits: cause id -> its lines read (each with .line, .before, .order, .cause), changed in place
"""

from __future__ import annotations

import re
from operator import attrgetter

import grpolab.monitor.libraries as lb
from grpolab.monitor.cause import LABEL

_FRAME = re.compile(rf'^\s*(?:{LABEL})?\s*(?:\[rank\d+\]:\s*)?File "([^"]+)", line \d+')
_CONFIG_CLASS = re.compile(r"(?<!\w)\w{0,80}Config\.__init__\(\) got an unexpected keyword")
# a device's wait that failed (CANN's 507048: an internal task timed out), whatever the wait was on
_WAITED = re.compile(
    r"Synchroni[sz]e\w{0,20}WithTimeout|npuSynchronize|SynchronizeStream|SynchronizeDevice|error code is 507048\b"
)
_WATCHDOG, _order = re.compile(r"watchdog", re.IGNORECASE), attrgetter("order")


def refine(hits: dict[str, list]) -> None:
    """A library passing an argument that another library's installed version does not take
    (`EngineArgs.__init__() got an unexpected keyword argument`, called from site-packages) is a version mismatch
    (import-error), not a rejected config key; a *Config class's rejection stays a config key."""
    if (
        hits.get("comm-timeout")
        and hits.get("device-fault")
        and all(_WAITED.search(h.line) for h in hits["device-fault"])
    ):  # a device's wait (a stream or device synchronisation) that failed while a collective timed out: the timeout
        hits.pop("device-fault")
    if hits.get("comm-timeout") and hits.get("comm-init") and _WATCHDOG.search(min(hits["comm-init"], key=_order).line):
        hits.pop("comm-init")  # NCCL's errors first reported by a watchdog: a running collective's, not the set-up's
    ports = {h.line for h in hits.get("port-in-use", [])}  # a raylet out of ports cannot register a worker: the ports
    if ports and hits.get("startup-timeout") and all(h.line in ports for h in hits["startup-timeout"]):
        hits.pop("startup-timeout")
    moved = []
    for h in hits.get("config-key", []):
        if "unexpected keyword" in h.line and not _CONFIG_CLASS.search(h.line):
            frames = [m.group(1) for b in h.before if (m := _FRAME.match(b))]
            if frames and lb.library_of(frames[-1]) not in (lb.USER, lb.STDLIB):  # a library passed it
                moved.append(h)
    if moved:
        hits["config-key"] = [h for h in hits["config-key"] if h not in moved]
        for h in moved:
            h.cause = "import-error"
        hits["import-error"] = moved + hits.get("import-error", [])
