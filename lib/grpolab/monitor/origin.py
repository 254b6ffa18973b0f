"""Who a log line is from and when: the rank, the node, the pid, the time, and for a collective the operation,
its group, its sequence number and the remote rank it waited for.

The formats read (all from public logs, tests/data/failures): torchrun's `[rank3]:` prefix, a Ray actor's
`[rank=107]` name; NCCL's
`[PG ID 3 PG GUID ... Rank 1]` (a rank within that process group) and `[Rank 1]` (the default group: global),
`WorkNCCL(SeqNum=..., OpType=...)`, `dump signal due to a collective timeout from rank 13`; HCCL/CANN's
`(PID:2969, Device:0, RankID:101)`, `remote rank: [24]`, `tag[AllReduce_...]`, `group:[group_name_1654]`; Ray's
`(WorkerDict pid=31962, ip=10.0.0.5)` prefix and `ray::X() (pid=..., ip=...)`; Ray's multi-line `ip: A` / `pid: N`
blocks; timestamps of glog (`[E804 23:05:54.81]`), CANN (`2025-10-11-15:09:34.713.335`), ISO and vLLM
(`ERROR 06-09 17:58:55`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grpolab.monitor.cause import LABEL
from grpolab.monitor.firstsaid import CANN_CODE

# torchrun's `[rank3]:` prefix, and a Ray actor named by its global rank: `(MegatronPolicyWorker[rank=107] pid=..)`
_TORCHRUN = re.compile(r"\[rank(\d+)\]:|\w\[rank=(\d+)\][ \t]+pid=")
_RANK_ID = re.compile(r"\bRank ?ID:? ?(\d+)\b", re.IGNORECASE)  # CANN's (PID:.., Device:.., RankID:..); -1: none
_PG_RANK = re.compile(r"\[PG (?:ID )?(\d+)(?: PG GUID ([^\s\]]+))?(?:\([^)\]]*\))? Rank (\d+)\]")
_RANK = re.compile(r"\[Rank (\d+)\]|\bRank (\d+): ")
# torchrun's failure summary (`rank: 3 (local_rank: 3)`), HCCL's `rank[0]` / `userRank[3]`: the reporting rank
_RANK_OTHER = re.compile(
    r"\b(?:local_)?rank: ?(\d+)\b|\b(?:user_?|local_?user)?rank\[(\d+)\]|\(\w+ rank=(\d+) pid=|\bon rank=(\d+)\b",
    re.IGNORECASE,
)  # also vLLM's `(VllmWorker rank=0 pid=234357)` prefix, HCCL's `rank:1, rankSize:4`, NeMo RL's `... on rank=8.`
_REMOTE = re.compile(
    r"(?P<signal>dump signal due to a collective timeout from +rank ?)(?P<a>\d+)|remote rank ?(?:id)?:? ?\[?(?P<b>\d+)"
    r"|\brank (?P<c>\d+) (?:is|was|did|has) (?:not responding|stuck|slow|dead|not sen|timed)"
    r"|\bdst_rank\[(?P<d>\d+)\]",  # HCCL's createLink para: ... dst_rank[0]-...-remote_ip_addr[A]
    re.IGNORECASE,
)
_RAY_PID_IP = re.compile(r"\bpid=(\d+)(?:[^()\n]{0,200}?\bip=(\d{1,3}(?:\.\d{1,3}){3}|[\w\-]+))?")
# (also Ray's structured event, `{"custom_fields":{"ip":"156.176.0.154",...},"label":"RAY_NODE_REMOVED",...}`)
_NODE = re.compile(
    # (Ray's node marked dead: `The node with node id: 5d0d... and address: 192.168.10.175 and node name: ...`)
    r"\b(?:ip[:=] ?|IP: |IP address: \[?|node IP:? |node(?:_ip)?: |host(?:name)?: |ip\[|(?<=\")ip\": ?\"|and address: )"
    r"(\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w\-]*\d[\w\-.]*)",
)
# NCCL's own prefix, `node5:240:240 [6] misc/socket.cc:533 NCCL WARN ...`: host:pid:tid [device]
_NCCL_HOST = re.compile(  # (behind a time a logger or a post put before it: `[2025-04-06 22:31:56] host:1:2 [0] `)
    r"^[ \t]*(?:\([^()\n]{0,300}\)[ \t]*)*(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?[ \t]+)?"
    r"(?:\([^()\n]{0,300}\)[ \t]*)*"
    r"([A-Za-z0-9][\w.\-]{0,80}):\d+:\d+ \[\d+\] "
)
# UCX's crash prefix `[host:pid:thread:tid] Caught signal 11 (...)`: the host that crashed
_UCX_HOST = re.compile(r"^[ \t]*(?:\([^()\n]{0,300}\)[ \t]*)*\[([A-Za-z0-9][\w.\-]{0,80}):\d+ ?:\d+:\d+\] ")
# pdsh's prefix (DeepSpeed's multi-node launcher, `pdsh -w`): `worker-1: Traceback ...`, `10.0.0.2: [rank8]: ...`; a
# host name with a hyphen and a digit, or an ip (not a message's `Step1: ` or a type's `torch.distributed.X: `)
_PDSH_HOST = re.compile(r"^([A-Za-z]\w*-[\w\-]*\d[\w\-.]*|\d{1,3}(?:\.\d{1,3}){3}): (?=\S| {2,}File )")
# torch's desync report (TORCH_NCCL_DESYNC_DEBUG): the rank that did not join the collective the others wait in
_DESYNC = re.compile(r"ranks that caused the desync are:")
_DESYNC_RANK = re.compile(
    r"^[ \t]*(?:\[rank\d+\]:)?[ \t]*(?:- )?\[(\d+)\] (?:finished|joined|didn't|did not|is|was|has)\b"
)
_LABEL = re.compile(rf"^ {{0,4}}(?={LABEL}\S)(\d+)")  # srun --label's `93: ` (grpolab.monitor.cause.LABEL): the rank
# SGLang's scheduler prefix, `[2025-02-24 14:09:34 TP14]`, `[... DP0 TP3]`, `[... PP1 TP2 EP2]`: its tensor-parallel rank
_SGLANG_TP = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: DP\d+)?(?: PP\d+)? TP(\d+)(?: EP\d+)?\]")
_REMOTE_EXIT = re.compile(r"remote process exit|ncclRemoteError", re.IGNORECASE)
_PEER = re.compile(r"\b(?:from|to|with) peer (\d{1,3}(?:\.\d{1,3}){3})\b", re.IGNORECASE)
# HCCL's report of an abnormal device (its heartbeat lost): the device it names, not the Discoverer that saw it
_CLUSTER = re.compile(r"Cluster Exception Location\[IP/ID\]:\[(\d{1,3}(?:\.\d{1,3}){3})/\d+\]")
_REMOTE_IP = re.compile(r"remote_ip(?:_addr)?\[(\d{1,3}(?:\.\d{1,3}){3})\]", re.IGNORECASE)
_LINK_ROW = re.compile(r"\|[ \t]*(\d{1,3}(?:\.\d{1,3}){3})\((\d+)\)[ \t]*\|")  # HCCL LINK_ERROR_INFO: dest(rank)
_WORKER_PID = re.compile(r"\bWorker PID: (\d+)")  # Ray's "A worker died ..." names the dead worker
RAY_TASK = re.compile(r"ray::[\w.:\-]+\(\) \(pid=(\d+), ip=([\w.\-]+)")  # a relayed error's actor: its pid, node
_DIED = re.compile(r"actor died|died unexpectedly|ActorDiedError|RayActorError|is dead because", re.IGNORECASE)
_PREFIXES = re.compile(r"^[ \t]*(?:\([^()\n]{0,300}\) ?)+")  # Ray's `(Actor pid=N, ip=A)` before a relayed line
# (unindented too: a post that lost the block's indentation)
_BLOCK_PID = re.compile(r"^\s*pid: (\d+)\s*$")
_BLOCK_IP = re.compile(r"^\s*ip: (\S+)\s*$")
# torchelastic's failure summary (`Root Cause (first observed failure):`): the failed rank's host and rank, one a line
_BLOCK_HOST = re.compile(r"^\s+host\s*: (\S+)\s*$")
_BLOCK_RANK = re.compile(r"^\s+rank\s*: (\d+)\b")
_SEQ = re.compile(r"SeqNum=(\d+)|work sequence id: (\d+)")
_OPTYPE = re.compile(r"OpType=(\w+)")
_HCCL_TAG = re.compile(r"tag\[([A-Za-z]+?)_")
_HCCL_OP = re.compile(
    r"\bHccl(Allreduce|AllGather|Allgather|ReduceScatter|Broadcast|AlltoAll\w{0,40}|Send|Recv|Reduce)\b"
)
_HCCL_GROUP = re.compile(r"group:\[([^\]\s]+)\]")
_TIMES = (
    # glog: [E804 23:05:54.816499929 ...] (month, day)
    re.compile(r"\[[EWIF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2}(?:\.\d+)?)"),
    # CANN: 2025-10-11-15:09:34.713.335; ISO: 2026-01-23 17:02:54[,.]206
    re.compile(r"\d{4}-(\d{2})-(\d{2})[- T](\d{2}):(\d{2}):(\d{2}(?:[.,]\d+)?)"),
    # vLLM: ERROR 06-09 17:58:55
    re.compile(r"\b(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) (\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})"),
)


@dataclass
class Where:
    """What one line says about where it came from (None: the line does not say)."""

    rank: int | None = None
    node: str | None = None
    pid: int | None = None
    time: tuple | None = None  # (month, day, hour, minute, second): the year is rarely printed
    remote: int | None = None  # the rank it waited for / that signalled the timeout
    remote_node: str | None = None  # that rank's node, where the line names it
    # the node a communicator lost (NCCL: a remote process exited): the origin, not the one reporting it
    peer: str | None = None
    signalled: bool = False  # the remote rank signalled the timeout (NCCL's dump signal), not one waited for
    seq: int | None = None
    op: str | None = None
    group: str | None = None


def where(
    line: str, file_rank: int | None = None, after: list[str] | None = None, before: list[str] | None = None
) -> Where:
    """Where `line` came from; `after` / `before`: the lines around it (Ray prints an actor's pid and ip in a block
    near its error, and `ray::Actor.method() (pid=.., ip=..)` above or below the traceback it relays)."""
    w = Where()
    if m := _TORCHRUN.search(line):
        w.rank = int(m.group(1) or m.group(2))
    pg = _PG_RANK.search(line)
    if w.rank is None and (m := _RANK_ID.search(line)) and m.group(1) != "-1":
        w.rank = int(m.group(1))
    if w.rank is None and pg and pg.group(1) == "0":  # the default group's rank is the global rank
        w.rank = int(pg.group(3))
    if w.rank is None and not pg and (m := _RANK.search(line)):
        w.rank = int(m.group(1) or m.group(2))
    if w.rank is None and (m := _RANK_OTHER.search(line)):
        w.rank = int(next(g for g in m.groups() if g is not None))
    if w.rank is None and (m := _SGLANG_TP.search(line)):
        w.rank = int(m.group(1))
    if w.rank is None and (m := _LABEL.match(line)):
        w.rank = int(m.group(1))
    if w.rank is None:
        w.rank = file_rank
    # CANN's error record (`EL0004: ... Failed to allocate memory.`) under its header line, which names the rank
    # (`[ERROR] 2024-08-28-16:15:00 (PID:15597, Device:2, RankID:2) ERR00100 PTA call acl api failed`)
    if w.rank is None and before and CANN_CODE.match(line.lstrip()) and (m := _RANK_ID.search(before[-1])):
        w.rank = int(m.group(1)) if m.group(1) != "-1" else None
    if w.rank is None and before and (code := CANN_CODE.search(line)) and code.group(0) in before[-1]:
        if above := _TORCHRUN.search(before[-1]):  # CANN's detail of an error code a rank's line above named first
            w.rank = int(above.group(1) or above.group(2))
    if w.rank is None and before and after:  # a line without a prefix inside one rank's output (a traceback's end)
        above, below = _TORCHRUN.search(before[-1]), _TORCHRUN.search(after[0])
        if above and below and above.groups() == below.groups():
            w.rank = int(above.group(1) or above.group(2))
    if w.rank is None and before and (above := _TORCHRUN.search(before[-1])) and 'File "' in before[-1]:
        below = _TORCHRUN.search(after[0]) if after else None  # the error line that ends a rank's traceback
        if below is None or below.groups() == above.groups():
            w.rank = int(above.group(1) or above.group(2))
    if w.rank is None and before and not line[:1].isspace() and (head := _traceback_head(before)):
        w.rank = where(head).rank  # a traceback's exception line: the rank its header names (SGLang's `[.. TP1]`)
    if w.rank is None and pg:  # only a rank within a process group: better than none
        w.rank = int(pg.group(3))
    if pg:
        guid = pg.group(2) or ""
        name = re.search(r"\(([^()]+)\)", guid)  # "0(default_pg)": the group's name
        label = name.group(1) if name else guid if len(guid) < 24 else ""
        w.group = f"PG {pg.group(1)}" + (f" ({label})" if label else "")
    if m := _REMOTE.search(line):
        w.remote = int(m.group("a") or m.group("b") or m.group("c") or m.group("d"))
        w.signalled = bool(m.group("signal"))
        if node := _REMOTE_IP.search(line):
            w.remote_node = node.group(1)
    if _REMOTE_EXIT.search(line):  # NCCL's net plugin names the peer under it: `Got completion from peer A<port>`
        w.peer = next((m.group(1) for text in list(after or ())[:4] if (m := _PEER.search(text))), None)
    if w.peer is None and (m := next(filter(None, map(_CLUSTER.search, [line, *list(after or ())[:6]])), None)):
        w.peer = m.group(1)
    if w.remote is None:  # torch's desync report under the watchdog's line: the rank that lagged, died or mismatched
        report = [line, *list(after or ())[:8]]
        at = next((i for i, text in enumerate(report) if _DESYNC.search(text)), None)
        if at is not None and (m := next(filter(None, map(_DESYNC_RANK.match, report[at + 1 : at + 3])), None)):
            w.remote = int(m.group(1))
    if (m := _LINK_ROW.search(line)) and w.remote is None:
        w.remote, w.remote_node = int(m.group(2)), m.group(1)
    if dead := _WORKER_PID.search(line):
        w.pid = int(dead.group(1))
    elif m := _RAY_PID_IP.search(line):
        w.pid, w.node = int(m.group(1)), m.group(2)
    if w.node is None and (
        m := _NODE.search(line) or _NCCL_HOST.match(line) or _UCX_HOST.match(line) or _PDSH_HOST.match(line)
    ):
        w.node = m.group(1)
    near = list(after or ())[:8] + list(reversed(list(before or ())[-8:]))
    # Ray's block (class_name, actor_id, pid, ip) below or above the error, behind the reporting actor's own prefix
    # when another actor relays it: the block names the actor that died, the prefix only the one that saw it
    died = _DIED.search(line) is not None
    block = [_PREFIXES.sub("", text, count=1) for text in list(after or ())[:8]]
    for text in block + [_PREFIXES.sub("", t, count=1) for t in reversed(list(before or ())[-8:])]:
        if (w.pid is None or died) and (b := _BLOCK_PID.match(text)):
            w.pid = int(b.group(1))
        if (w.node is None or died) and (b := _BLOCK_IP.match(text)):
            w.node = b.group(1)
            died = False  # the nearest block only
        if w.node is None and (b := _BLOCK_HOST.match(text)):
            w.node = b.group(1)
        if w.rank is None and (b := _BLOCK_RANK.match(text)):
            w.rank = int(b.group(1))
    if w.node is None:  # the actor a relayed error came from: `ray::WorkerDict.f() (pid=P, ip=A)` nearby
        w.node = next((b.group(2) for text in near if (b := RAY_TASK.search(text))), None)
    if w.node is None:  # a hard-wrapped line continues on the next ones
        w.node = next((b.group(1) for text in list(after or ())[:2] if (b := _NODE.search(text))), None)
    if m := _SEQ.search(line):
        w.seq = int(m.group(1) or m.group(2))
    if m := _OPTYPE.search(line) or _HCCL_TAG.search(line) or _HCCL_OP.search(line):
        w.op = m.group(1)
    if m := _HCCL_GROUP.search(line):
        w.group = m.group(1)
    if m := next(filter(None, (pattern.search(line) for pattern in _TIMES)), None):
        w.time = tuple(float(g.replace(",", ".")) for g in m.groups())
    return w


def ray_pids(line: str) -> list[tuple[int, str | None]]:
    """Every (pid, ip) a line names in Ray's form (`pid=N, ip=A`), for mapping a pid to its node."""
    return [(int(m.group(1)), m.group(2)) for m in _RAY_PID_IP.finditer(line)]


# ---------------------------------------------------------------------------------------------- the origin said
# (`hits`: the diagnosis's matched lines, each with its `where`, a Where, and `order`, the order read)
def origin_first(hits: list) -> list:
    """The hits, the one that shows the origin first: a line naming the rank others waited for, then the lowest
    collective sequence number (the rank furthest behind; compared only when every numbered line waits in the same
    kind of collective: each process group counts its own), then the earliest time, then the first read."""
    by_seq = len({h.where.op for h in hits if h.where.seq is not None}) == 1

    def seq(h) -> float:
        return h.where.seq if by_seq and h.where.seq is not None else float("inf")

    by_time = sum(h.where.time is not None for h in hits) > 1  # one time stamp says nothing across ranks
    return sorted(
        hits, key=lambda h: (h.where.remote is None, seq(h), (h.where.time or (99,)) if by_time else (), h.order)
    )


_NEAR = 12  # lines after a rank-less origin in which the same failure's rank is looked for (one process's report)


def _traceback_head(before: list[str]) -> str | None:
    """The header line (`... Traceback (most recent call last):`) of the traceback whose frames `before` ends with,
    where no other line than its frames and their code lies between."""
    for text in reversed(before):
        if "Traceback (most recent call last)" in text:
            return text
        if not text[:1].isspace():
            return None
    return None


def locate(ordered: list, hits: list, later: list, nearby: list, first) -> tuple[int | None, str | None]:
    """The rank and node a failure is said of: its origin's (`ordered[0]`, the hits `ordered` by origin_first), or
    the rank another rank named; where the origin line names neither, the cause's other lines, then the same
    failure's next lines (`later` and `nearby`: the log's error, echo and exit lines), then the first error's node."""
    origin = ordered[0]
    w = origin.where
    rank, node = (w.remote, w.remote_node) if w.remote is not None else (w.rank, w.node)
    if w.remote is not None and node is None:  # the rank another rank named: its node, if its own lines say
        node = next((h.where.node for h in hits if h.where.rank == rank and h.where.node), None)
    if rank is None and w.remote is None:  # the origin line names no rank: the first of the cause's that does
        rank = next((h.where.rank for h in ordered if h.where.rank is not None), None)
    if rank is None and w.remote is None and w.pid is None:  # nor does any: the same failure's next lines
        rank = next(
            (
                h.where.rank
                for h in sorted(later + nearby, key=lambda h: h.number)
                if h.where.rank is not None and h.file == origin.file and 0 < h.number - origin.number <= _NEAR
            ),
            None,
        )
    if node is None and w.remote is None:  # nor a node: the first line of the same rank (or of no rank) that does
        node = next((h.where.node for h in ordered + later if h.where.node and h.where.rank in (rank, None)), None)
    if node is None and first is not None and first.file == origin.file and 0 <= first.number - origin.number < 3:
        node = first.node  # the same error read as the first: the actor a relayed traceback names above it
    return rank, node


def silent_ranks(timed_out: set[int]) -> list[int]:
    """The ranks below the highest that timed out which did not time out, when they are few (a stuck rank never
    enters the collective its peers wait in, so it reports no timeout); [] when the log cannot say."""
    if len(timed_out) < 3:
        return []
    missing = sorted(set(range(max(timed_out) + 1)) - timed_out)
    return missing if 0 < len(missing) <= max(1, len(timed_out) // 4) else []


def ranks_of(hits: list, skip: int | None) -> list[int]:
    return sorted({h.where.rank for h in hits if h.where.rank is not None and h.where.rank != skip})


def naming_collective(first, same: list):
    """`first`, or the line of the same report a few lines below it that names the collective (torch prints "Some
    NCCL operations have failed or timed out" above the watchdog's `WorkNCCL(SeqNum=.., OpType=ALLREDUCE)`)."""
    if first.where.op:
        return first
    below = [h for h in same if h.where.op and h.file == first.file and 0 < h.number - first.number <= 3]
    return min(below, key=lambda h: h.number) if below else first


def origin_sentence(cause, rank, node, w: Where, hits, collective, group) -> list[str]:
    if rank is None and node is None and not w.peer:
        return []
    at = f"rank {rank}" if rank is not None else "a worker"
    if node:
        at += f" on node {node}"
    if w.pid is not None and w.remote is None:
        at += f" (pid {w.pid})"
    if w.peer:  # the node it lost is the origin: the one reporting it is a survivor
        told = f", as {at} reports" if rank is not None or node else ""
        return [f"The node it lost: {w.peer} (a process there exited, or the network to it failed){told}"]
    if cause != "comm-timeout":
        if w.remote is not None:  # a link that could not be made: to this rank, from the one reporting it
            return [f"Rank {w.rank} could not reach {at}" if w.rank is not None else f"The rank not reached: {at}"]
        return [f"First on {at}"]
    waited = ranks_of(hits, rank)
    op = f" in {collective}" if collective else " in a collective"
    if group:
        op += f" of group {group}"
    if w.seq is not None and w.remote is None:
        op += f" (SeqNum {w.seq})"
    if w.remote is not None and not w.signalled:
        out = [f"The rank that stalled: {at}; the others waited for it{op}"]
    elif w.remote is not None:
        out = [f"First to time out: {at}, which signalled the others{op}"]
    else:
        out = [f"First to time out: {at}{op}"]
    if waited:
        shown = ", ".join(map(str, waited[:8])) + (f" and {len(waited) - 8} more" if len(waited) > 8 else "")
        out.append(f"Waiting and timed out: rank{'s' if len(waited) > 1 else ''} {shown}")
    return out


def stalled_sentence(silent: list[int], node: str | None, highest: int) -> str:
    """The rank that stalled, when the ranks that did not time out say it (grpolab.monitor.origin.silent_ranks)."""
    shown = ", ".join(map(str, silent))
    return (
        f"The rank that stalled: rank {silent[0]}"
        + (f" on node {node}" if node else "")
        + f" (of ranks 0-{highest}, {'only it' if len(silent) == 1 else 'ranks ' + shown} did not "
        "time out: it never reached the collective the others waited in)"
    )


def own_log_sentence(pid: int | None, node: str | None) -> str:
    """Where a dead Ray worker's own log is (the driver's log names no cause of its death)."""
    return (
        "Its own log: `ray logs worker"
        + (f" --pid {pid}" if pid else "")
        + (f" --node-ip {node}" if node else "")
        + "` (or worker-*.out under /tmp/ray/session_latest/logs on that node)"
    )
