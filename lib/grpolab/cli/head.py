"""`grpolab head [status|start|stop] [--json]`: the embedded local Ray head.

`status` (the default) says whether it runs, where, and how to stop it; `start` starts it (a launch does so by
itself); `stop` stops that head only (every process of its session, the jobs running on it included), never
another Ray cluster of this machine. Exit status 0; 1 when the head cannot start (an error on stderr, and with
--json the error document).
"""

from __future__ import annotations

from grpolab.cli.common import print_json
from grpolab.jobs import cluster


def register(sub) -> None:
    p = sub.add_parser("head", help="the embedded local Ray head: status (default), start, stop")
    p.add_argument("action", nargs="?", default="status", choices=("status", "start", "stop"))
    p.add_argument("--json", action="store_true", help="print the head's status as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.action == "start":  # a ClusterError (a foreign server on the port, ...) goes to the CLI's boundary
        cluster.ensure_local_head(progress=(lambda *_: None) if args.json else print)
    elif args.action == "stop":
        running = cluster.head_alive()
        count = cluster.stop_local_head()
        if not args.json:
            print(
                f"stopped the embedded Ray head ({count} processes)"
                if count or running
                else "the embedded Ray head was not running; nothing to stop"
            )
    status = cluster.head_status()
    if args.json:
        print_json(status)
    elif args.action != "stop":
        print(cluster.describe_head(status))
    return 0
