"""Every `grpolab preflight` command the README shows, run as a user types it, with its placeholders filled in.

RECIPE is `tiny`; HEAD and A are a running Ray cluster reached by its dashboard address (http://HOST:PORT, what
`grpolab run --ray-address` takes), with its token given the way the README tells remote-cluster users
(RAY_AUTH_MODE=token, RAY_AUTH_TOKEN_PATH): the tests' embedded head plays that cluster. Then the same commands
against an address where nothing answers: that is the point there, and it must fail within seconds, saying so.
"""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILLED = (  # README placeholder -> what the test types
    ("[--set k=v ...]", "--set trainer.total_steps=3"),
    ("[--ray-address A]", "--ray-address {address}"),
    ("[--json]", "--json"),
    ("RECIPE", "tiny"),
    ("http://HEAD:8265", "{address}"),
)


def readme_preflight_commands() -> list[str]:
    """Each `grpolab preflight ...` the README shows, in code blocks or inline code, as written there."""
    text = (ROOT / "README.md").read_text()
    found = re.findall(r"grpolab preflight [^`\n#]*", text)
    return list(dict.fromkeys(c.strip() for c in found))


def fill(command: str, address: str) -> list[str]:
    for placeholder, value in FILLED:
        command = command.replace(placeholder, value)
    assert not re.search(r"\[|\]|\bA\b|HEAD|RECIPE", command), f"a placeholder this test cannot fill: {command}"
    return command.format(address=address).split()[1:]  # after `grpolab`: the verb and its arguments


def test_the_readme_shows_preflight_with_a_dashboard_address():
    commands = readme_preflight_commands()
    assert any("--ray-address http://HEAD:8265" in c for c in commands), commands
    assert all(fill(c, "http://127.0.0.1:1") for c in commands)


@pytest.fixture
def token_env(ray_head):
    """A user of that cluster: its token the way Ray reads it (README, "A remote cluster")."""
    from grpolab.jobs import cluster

    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(cluster.token_file())}


@pytest.mark.parametrize("command", readme_preflight_commands())
def test_readme_preflight_command_against_a_running_cluster(command, ray_head, token_env, cli):
    proc = cli(*fill(command, ray_head.dashboard), timeout=300, env=token_env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    if "--json" in command:
        report = json.loads(proc.stdout)
        ray_row = next(r for r in report["rows"] if r["check"] == "ray")
        assert not report["failed"] and report["nodes"] and report["address"]
    else:
        assert "passed" in proc.stdout.splitlines()[-1]
        lines = proc.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if " ray " in line)
        wrapped = [lines[at]]  # the table wraps a long detail onto indented lines below its row
        for line in lines[at + 1 :]:
            if not line.startswith(" ") or not line.strip():
                break
            wrapped.append(line.strip())
        ray_row = {"status": "ok", "detail": " ".join(wrapped)}
    assert ray_row["status"] == "ok" and "reachable" in ray_row["detail"]


@pytest.mark.parametrize("command", readme_preflight_commands())
def test_readme_preflight_command_against_an_address_where_nothing_answers(command, cli):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    t0 = time.monotonic()
    proc = cli(*fill(command, f"http://127.0.0.1:{port}"), timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out and time.monotonic() - t0 < 30, out[-3000:]
    shown = " ".join(proc.stdout.split())  # the table wraps long details
    assert f"no Ray dashboard answers at http://127.0.0.1:{port}" in shown
    assert "pass --ray-address http://HEAD:8265" in shown  # the fix names the address form the README uses
