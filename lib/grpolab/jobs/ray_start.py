"""Ray's own `ray start`, without the Ray Client server, for the embedded head:
`python -m grpolab.jobs.ray_start start --head ...` (grpolab.jobs.cluster runs it; the arguments are `ray`'s).

`ray start` starts a Ray Client server whenever grpc is importable (a proxy listening on the machine's address, about
3 s of CPU at every head start and more while idle), and it refuses a port of 0 to turn it off. Nothing here connects
through Ray Client: drivers (preflight) use the GCS address and jobs the dashboard's Jobs API. So this tells
`ray start` what it would see without the `ray[client]` extra, which is how Ray itself skips that server; the rest is
Ray's command as it is. Should a Ray release drop the function, the head starts as before, server included.
"""

from __future__ import annotations

import sys


def main() -> int | None:
    # lazy: ray (the head's start-up script, run as `python -m`; Ray loads only when it runs)
    from ray.scripts import scripts

    if hasattr(scripts, "get_ray_client_dependency_error"):
        scripts.get_ray_client_dependency_error = lambda: ImportError("no Ray Client server for the embedded head")
    sys.argv[0] = "ray"
    return scripts.main()


if __name__ == "__main__":
    sys.exit(main())
