"""Shared test set-up: an isolated runs/ directory, the embedded Ray head on test ports, CLI helpers.

The embedded head for tests advertises fake NPU resources ({"NPU": 16}) so that a verl recipe can be
submitted to it and fail for the real reason (no NPU stack here). It is started once, on ports of its own,
and stopped at the end of the session. Tests of the user's own paths (the README's commands, tests/test_head.py)
do not use it: they start from no head at all, on ports of their own (`no_head`).

The suite runs on two pytest-xdist workers (pyproject's addopts). They share the one test head (whichever needs
it first starts it, under the head's own lock; the controlling process stops it once every worker is done: one
head start and one idle head fewer than a head per worker). Each worker has its own user head, on ports offset by
the worker's number, since those tests start, kill and stop it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# before grpolab.jobs.cluster is imported anywhere: the test head must not collide with a developer's own head.
# GRPOLAB_TEST_PORT_OFFSET moves every port of a suite, so that two checkouts can run their suites side by side.
SUITE_OFFSET = int(os.environ.get("GRPOLAB_TEST_PORT_OFFSET", "0"))
os.environ["GRPOLAB_RAY_PORT"] = str(6579 + SUITE_OFFSET)
os.environ["GRPOLAB_DASHBOARD_PORT"] = str(8465 + SUITE_OFFSET)
# the user heads are the xdist worker's own (gw0, gw1, ...; no xdist: 0)
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
OFFSET = SUITE_OFFSET + 10 * WORKER
os.environ.setdefault("GRPOLAB_RAY_RESOURCES", '{"NPU": 16}')
os.environ.setdefault("WANDB_MODE", "disabled")
# one OpenMP thread per process: the two workers already keep both cores busy, and a 2-thread tiny trainer beside
# another process spins on its barrier (alone it is 1.3x faster with 2 threads, for 1.6x the CPU)
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
# what the suite builds and remembers (tiny models, verl's compose verdicts) stays in the checkout (.cache/ is ignored),
# never in the user's ~/.cache: a fresh clone starts cold, as CI does, and a suite never reads another's leftovers
os.environ.setdefault("GRPOLAB_CACHE", str(ROOT / ".cache" / "tests"))
PYTHON = sys.executable


# tiny's overrides for a run of seconds (a 5-step warm-up, 4 GRPO steps, validation at 2 and 4): what
# the tests submit when they test the way from a command to a finished run, not what tiny learns
SHORT_TINY = ("trainer.total_steps=4", "trainer.test_freq=2", "local.warmup_steps=5")


@pytest.fixture
def short_tiny() -> list[str]:
    """SHORT_TINY as a list of overrides: `load_recipe("tiny", short_tiny)`, a notebook's `overrides`, or `--set`
    arguments."""
    return list(SHORT_TINY)


@pytest.fixture
def stage_notebooks():
    """`stage_notebooks(folder, code)`: run.ipynb's four stage notebooks (grpolab.notebook.STAGES) written into a new
    folder, each a tagged parameters cell (model, overrides) and then `code`, for nb.Stages(..., notebooks=folder)."""
    import nbformat

    from grpolab import notebook as nb

    def write(folder: Path, code: str) -> Path:
        folder.mkdir()
        for stage in nb.STAGES:
            book = nbformat.v4.new_notebook()
            params = nbformat.v4.new_code_cell('model = "tiny"\noverrides = []')
            params.metadata["tags"] = ["parameters"]
            book.cells = [params, nbformat.v4.new_code_cell(code)]
            book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
            nbformat.write(book, str(folder / f"{stage}.ipynb"))
        return folder

    return write


@pytest.fixture(autouse=True)
def _isolated_runs(tmp_path, monkeypatch):
    """Every test writes runs under a runs/ directory of its own, never the project's."""
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("GRPOLAB_RUNS", str(runs))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return runs


@pytest.fixture
def runs_root(_isolated_runs):
    """This test's runs/ directory (GRPOLAB_RUNS points at it)."""
    return _isolated_runs


@pytest.fixture
def finished_run(_isolated_runs):
    """`finished_run(run_id, records, **status)`: a run of `tiny` under this test's runs/ whose metrics.jsonl holds
    `records` (grpolab.monitor.synthetic's), recorded as ended (SUCCEEDED unless `state=` says otherwise)."""
    from grpolab.jobs.runs import create_run
    from grpolab.monitor import synthetic

    def make(run_id: str, records, **status):
        run = create_run("tiny", run_id=run_id)
        synthetic.write_jsonl(run.metrics_file, records)
        run.write_status(**{"state": "SUCCEEDED", **status})
        return run

    return make


@pytest.fixture
def monitor_cli(monkeypatch):
    """grpolab.cli.main in-process with only the monitor's verbs registered: the dispatcher and exit codes are the
    real ones, and the monitor's tests do not depend on the other verbs' modules."""
    import grpolab.cli

    monkeypatch.setattr(grpolab.cli, "VERBS", {"monitor": "monitor", "compare": "compare"})
    return grpolab.cli.main


@pytest.fixture(scope="session")
def ray_head():
    """The suite's embedded local Ray head: started by the first test that needs it, on whichever worker, shared by
    the workers, stopped by pytest_sessionfinish in the controlling process."""
    from grpolab.jobs import cluster

    return cluster.ensure_local_head(progress=lambda *_: None)


def pytest_sessionfinish(session):
    """The controlling process (or the only one, without xdist) stops the test head once every worker is done. A
    `--collect-only` ran no test: the head on these ports, if any, is another session's (a suite running beside it)."""
    if os.environ.get("PYTEST_XDIST_WORKER") or session.config.option.collectonly:
        return
    env = dict(os.environ)  # the test head's ports, set above
    if _head_may_run(env):
        stop_head(env)


def grpolab(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real `grpolab` command line in a subprocess, as a user would."""
    return subprocess.run(
        [str(Path(PYTHON).with_name("grpolab")), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def cli():
    return grpolab


def readme_command(prefix: str) -> list[str]:
    """The README's command line that starts with `prefix`, as argv: a command tests/test_readme.py leaves to the
    test that runs it as written, with more checks than an exit status (its RUN_ELSEWHERE)."""
    import re
    import shlex

    found = re.search(rf"^({re.escape(prefix)}.*?)(  #.*)?$", (ROOT / "README.md").read_text(), flags=re.M)
    assert found, prefix
    return shlex.split(found.group(1))


@pytest.fixture(name="readme_command")
def readme_command_fixture():
    """readme_command itself: `readme_command(prefix)` -> the README's command line that starts with it, as argv."""
    return readme_command


def poll(predicate, timeout: float = 240.0, every: float = 1.0):
    """predicate()'s first true value, asked every `every` seconds; AssertionError after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting")


@pytest.fixture
def wait_for():
    """`wait_for(predicate, timeout=240, every=1)`: the one poll of the tests that watch a real run or head."""
    return poll


USER_PORTS = (6779 + OFFSET, 8779 + OFFSET)  # a user's embedded head, apart from the test head


def stop_head(env: dict[str, str]) -> None:
    """`grpolab head stop` for the head of that environment (the session's own head is untouched)."""
    subprocess.run(
        [str(Path(PYTHON).with_name("grpolab")), "head", "stop"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def user_env() -> dict[str, str]:
    """The environment of a user whose embedded head lives on USER_PORTS (this test's runs/ included)."""
    return {**os.environ, "GRPOLAB_RAY_PORT": str(USER_PORTS[0]), "GRPOLAB_DASHBOARD_PORT": str(USER_PORTS[1])}


@pytest.fixture(scope="session")
def _users_head_stopped_at_the_end():
    yield
    stop_head(user_env())


@pytest.fixture
def no_head(_isolated_runs, _users_head_stopped_at_the_end):
    """A user's machine with no Ray head running: the environment to run their commands in (the embedded head
    they start is on USER_PORTS, and is stopped before and after each test, and at the end of the session: an idle
    head costs about 3 s of CPU a minute)."""
    env = user_env()
    if _head_may_run(env):  # `grpolab head stop` costs a process start: only when there is something to stop
        stop_head(env)
    yield env
    if _head_may_run(env):
        stop_head(env)


def _head_may_run(env: dict[str, str]) -> bool:
    import socket
    import tempfile

    state = Path(tempfile.gettempdir()) / f"grpolab-{os.getuid()}" / f"head-{env['GRPOLAB_RAY_PORT']}" / "head.json"
    with socket.socket() as sock:
        sock.settimeout(0.5)
        listening = sock.connect_ex(("127.0.0.1", int(env["GRPOLAB_DASHBOARD_PORT"]))) == 0
    return listening or state.exists()


def pytest_collection_modifyitems(items):
    """The `slow` tests first, longest first (a stable sort: the rest keep their order). Each worker takes the next
    test when it is free (pyproject's --maxschedchunk 2), so the long ones spread over both workers from the start
    instead of one of them coming last."""

    def seconds(item) -> float:
        slow = item.get_closest_marker("slow")
        return -slow.args[0] if slow else 0.0

    items.sort(key=seconds)


# ---------------------------------------------------------------------------------------------------- verl versions
# the supported verl versions the version matrix checks against: each release's wheel from PyPI (scripts/setup.sh
# downloads them into .cache/verl-wheels) and verl's main at the commit the version table records, of which the suite
# needs only the config folder and the version file: committed as data in tests/data/verl-main (its README names the
# commit; GitHub is not reachable from CI); nothing here installs them: GRPOLAB_VERL_ROOT points check and render at one
VERL_RELEASES = ("0.7.1", "0.8.0", "0.9.0", "0.9.1")
VERL_WHEELS = ROOT / ".cache" / "verl-wheels"
VERL_MAIN = ROOT / "tests" / "data" / "verl-main" / "verl"


def verl_package(version: str) -> Path:
    """The verl package folder of a supported version ("main" for the main snapshot), unpacked once into the suite's
    cache; fails (never skips) naming how to get it."""
    import zipfile

    if version == "main":
        if not (VERL_MAIN / "version" / "version").is_file():
            pytest.fail(
                f"no verl main snapshot in {VERL_MAIN.parent}: its config folder and version file are committed "
                "there (tests/data/verl-main/README.md says from which commit)"
            )
        return VERL_MAIN
    wheels = Path(os.environ.get("GRPOLAB_VERL_WHEELS") or VERL_WHEELS)  # the suite's own test moves it
    wheel = wheels / f"verl-{version}-py3-none-any.whl"
    if not wheel.is_file():
        pytest.fail(
            f"no {wheel.name} in {wheels}: run `.venv/bin/pip download --no-deps verl=={version} -d "
            f"{wheels}` (scripts/setup.sh does it for every supported version)"
        )
    target = Path(os.environ["GRPOLAB_CACHE"]) / "verl" / version
    done = target / ".unpacked"
    if not done.is_file():
        # both xdist workers may unpack a cold cache at once (zipfile's makedirs then races): each unpacks into a
        # folder of its own, and the first to rename it into place wins
        import shutil

        mine = target.with_name(f"{version}.{os.getpid()}.partial")
        shutil.rmtree(mine, ignore_errors=True)
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(mine, [n for n in archive.namelist() if n.startswith("verl/")])
        (mine / ".unpacked").write_text(wheel.name)
        if target.exists() and not done.is_file():  # an interrupted unpack of an older suite
            shutil.rmtree(target, ignore_errors=True)
        try:
            mine.rename(target)
        except OSError:  # the other worker's unpack is in place
            shutil.rmtree(mine, ignore_errors=True)
    return target / "verl"


@pytest.fixture
def verl_packages():
    """verl_package itself: `verl_packages(version)` -> the unpacked package folder."""
    return verl_package


@pytest.fixture
def verl_at(monkeypatch):
    """`verl_at(version)`: check and render for that verl version (GRPOLAB_VERL_ROOT) for the rest of the test."""

    def use(version: str) -> Path:
        package = verl_package(version)
        monkeypatch.setenv("GRPOLAB_VERL_ROOT", str(package))
        return package

    return use
