"""Preflight's per-node checks and report, without Ray: the real check functions on fakes at the boundary only
(a toolkit install-info file, an `npu-smi` script, parquet files, a model directory, a bound port)."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures_preflight"))
from preflight_fakes import (  # noqa: E402
    NPU_SMI_910B,
    write_dist,
    write_model,
    write_npu_smi,
    write_parquet,
    write_toolkit,
)

from grpolab.preflight import node  # noqa: E402
from grpolab.preflight.node import devices, files, limits, packages  # noqa: E402
from grpolab.preflight.node import env as env_checks  # noqa: E402
from grpolab.preflight.remote import device_rows  # noqa: E402
from grpolab.preflight.report import FAIL, OK, SKIP, WARN, PreflightReport, Row  # noqa: E402
from grpolab.preflight.spec import node_spec, required_env  # noqa: E402
from grpolab.recipe.loader import load_recipe  # noqa: E402


def base_spec(**changes) -> dict:
    spec = node_spec(load_recipe("qwen3_30b_a3b"))
    spec.update(changes)
    return spec


# ---------------------------------------------------------------------------------------------- report


def test_report_table_failures_first_and_json():
    rows = [
        Row("a", "local", OK, "fine"),
        Row("b", "cluster", SKIP, "n/a"),
        Row("c", "n1", FAIL, "broken", "do x"),
        Row("d", "n2", WARN, "odd", "do y"),
    ]
    report = PreflightReport("r", rows, nodes=["n1", "n2"])
    lines = report.table().splitlines()
    assert lines[2].startswith("FAIL") and "fix: do x" in lines[3]
    assert [ln.split()[0] for ln in lines[2:] if ln[:1].isupper()][:4] == ["FAIL", "WARN", "OK", "SKIP"]
    data = json.loads(report.to_json())
    assert data["failed"] is True and data["counts"] == {"ok": 1, "warn": 1, "fail": 1, "skip": 1}
    assert set(data["rows"][0]) == {"check", "node", "status", "detail", "fix"}
    with pytest.raises(ValueError):
        Row("x", "local", "bad", "")


def test_table_folds_identical_node_rows():
    rows = [Row("env", f"n{i}", OK, "same") for i in range(3)] + [Row("cann", "n0", FAIL, "old", "upgrade")]
    report = PreflightReport("r", rows, nodes=["n0", "n1", "n2"])
    assert "all 3 nodes" in report.table()
    assert "all 3 nodes" not in report.table(fold=False)
    assert report.select(check="env", status=OK) == rows[:3]


# ---------------------------------------------------------------------------------------------- device runtime


def test_cann_version_from_install_info(tmp_path):
    write_toolkit(tmp_path / "tk", "8.5.0")
    assert devices.cann_version({"ASCEND_TOOLKIT_HOME": str(tmp_path / "tk")})[0] == "8.5.0"
    # set_env.sh points ASCEND_TOOLKIT_HOME at .../latest itself
    assert devices.cann_version({"ASCEND_TOOLKIT_HOME": str(tmp_path / "tk" / "latest")})[0] == "8.5.0"
    write_toolkit(tmp_path / "old", "8.0.RC2", nested=False)
    spec = {"stack": {"cann": "8.5.0"}}
    row = devices.check_cann(spec, {"ASCEND_HOME_PATH": str(tmp_path / "old")})
    assert row["status"] == FAIL and "8.0.RC2 is older" in row["detail"] and row["fix"]
    assert devices.check_cann(spec, {"ASCEND_TOOLKIT_HOME": str(tmp_path / "tk")})["status"] == OK
    write_toolkit(tmp_path / "new", "9.1.0")
    assert devices.check_cann(spec, {"ASCEND_TOOLKIT_HOME": str(tmp_path / "new")})["status"] == WARN
    missing = devices.check_cann(spec, {"ASCEND_TOOLKIT_HOME": str(tmp_path / "none")})
    assert missing["status"] == FAIL and "no CANN toolkit" in missing["detail"] and "set_env.sh" in missing["fix"]


def test_npu_smi_parsed_and_run_from_path(tmp_path):
    assert devices.parse_npu_smi(NPU_SMI_910B) == ("910B3", 2)
    assert devices.parse_npu_smi("no table") == (None, 0)
    write_npu_smi(tmp_path / "bin")
    row = devices.check_npu_smi({}, {"PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin"})
    assert row["status"] == OK and "910B3" in row["detail"]
    assert devices.check_npu_smi({}, {"PATH": str(tmp_path / "empty")})["status"] == SKIP


def test_device_checks_do_not_apply_to_cpu_and_gpu_checks_skip_on_npu(tmp_path):
    cpu = devices.check_devices({"device": "cpu", "engine": "trl", "devices_per_node": 1, "stack": {}}, {})
    assert [r["status"] for r in cpu] == [SKIP] and "cpu" in cpu[0]["detail"]
    npu = devices.check_devices(
        {"device": "npu", "devices_per_node": 16, "stack": {}},
        {"PATH": str(tmp_path), "ASCEND_TOOLKIT_HOME": str(tmp_path)},
    )
    by = {r["check"]: r for r in npu}
    assert by["cuda"]["status"] == SKIP and "npu" in by["cuda"]["detail"]
    assert by["torch_npu"]["status"] == FAIL and by["torch_npu"]["fix"]  # no torch_npu on a CPU machine


# ---------------------------------------------------------------------------------------------- env, stack


def test_job_env_expands_like_ray_and_required_vars():
    env = env_checks.job_env({"PATH": "/a", "X": "node"}, {"PATH": "${PATH}:/b", "Y": "${NOPE}z"})
    assert env["PATH"] == "/a:/b" and env["Y"] == "z" and env["X"] == "node"
    names = [v for v, _, _ in required_env(load_recipe("glm5_2"))]
    assert {"HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"} <= set(names)
    assert required_env(load_recipe("tiny")) == []


def test_env_conflict_and_short_visible_devices():
    spec = base_spec(nnodes=1)
    node_env = {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "HCCL_CONNECT_TIMEOUT": "60", "HCCL_EXEC_TIMEOUT": "60"}
    spec["env"] = {"HCCL_CONNECT_TIMEOUT": "1500"}
    rows = env_checks.check_env(spec, node_env, env_checks.job_env(node_env, spec["env"]))
    by = {r["check"]: r for r in rows}
    assert by["env.ASCEND_RT_VISIBLE_DEVICES"]["status"] == FAIL
    assert "lists 8 device(s)" in by["env.ASCEND_RT_VISIBLE_DEVICES"]["detail"]
    assert by["env.HCCL_CONNECT_TIMEOUT"]["status"] == WARN  # node 60 vs recipe 1500


def test_stack_pin_from_fake_metadata(tmp_path):
    write_dist(tmp_path / "site", "vllm-ascend", "0.22.0")
    spec = base_spec(stack={"vllm-ascend": "0.23.0", "verl": "0.9.1", "cann": "8.5.0"}, required_packages=[])
    env = {"PYTHONPATH": str(tmp_path / "site")}  # the job's PYTHONPATH (recipe env) is honoured
    by = {r["check"]: r for r in packages.check_stack(spec, env)}
    assert by["stack.vllm-ascend"]["status"] == FAIL and "0.22.0" in by["stack.vllm-ascend"]["detail"]
    assert "pip install vllm-ascend==0.23.0" in by["stack.vllm-ascend"]["fix"]
    assert by["stack.verl"]["status"] == OK
    assert "stack.cann" not in by  # CANN is compared by the `cann` row, from the toolkit
    spec["stack"]["vllm-ascend"] = "0.22.0"
    assert {r["check"]: r for r in packages.check_stack(spec, env)}["stack.vllm-ascend"]["status"] == OK


# ---------------------------------------------------------------------------------------------- model, data, disk


def test_model_matches_card_and_weights(tmp_path):
    spec = base_spec()
    spec["model"]["path"] = str(write_model(tmp_path / "good", "qwen3_30b_a3b"))
    assert [r["status"] for r in files.check_model(spec)] == [OK, OK]
    spec["model"]["path"] = str(write_model(tmp_path / "bad", "qwen3_30b_a3b", present=1, num_hidden_layers=36))
    config, weights = files.check_model(spec)
    assert config["status"] == FAIL and "num_layers 36 (card 48)" in config["detail"]
    assert weights["status"] == FAIL and "1 of 2 weight shards" in weights["detail"]
    spec["model"]["path"] = str(tmp_path / "absent")
    (row,) = files.check_model(spec)
    assert row["status"] == FAIL and "does not exist" in row["detail"] and row["fix"]


def test_data_columns_from_parquet_schema(tmp_path):
    spec = base_spec()
    good, no_reward, no_gt = (
        write_parquet(tmp_path / "a.parquet"),
        write_parquet(tmp_path / "b.parquet", False),
        write_parquet(tmp_path / "c.parquet", ground_truth=False),
    )
    spec["data"]["files"] = [
        ("data.train_files", str(good)),
        ("data.val_files", str(no_reward)),
        ("data.val_files", str(no_gt)),
        ("data.val_files", str(tmp_path / "none.parquet")),
    ]
    rows = files.check_data(spec)
    assert [r["status"] for r in rows] == [OK, FAIL, FAIL, FAIL]
    assert "'reward_model'" in rows[1]["detail"] and "ground_truth" in rows[2]["detail"]
    assert all(r["fix"] for r in rows[1:4])


def test_checkpoint_space_and_writability(tmp_path):
    spec = base_spec(nnodes=4)
    free = __import__("shutil").disk_usage(tmp_path).free
    spec["checkpoint"] = {"path": str(tmp_path / "ckpt"), "bytes": 10**6, "estimate": "test"}
    row = files.check_checkpoint(spec)
    assert row["status"] == OK and "created at launch" in row["detail"]
    spec["checkpoint"]["bytes"] = free * 2  # more than the disk, less than 4 shares of it
    assert files.check_checkpoint(spec)["status"] == WARN
    spec["checkpoint"]["bytes"] = free * 40
    assert files.check_checkpoint(spec)["status"] == FAIL
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        spec["checkpoint"] = {"path": str(ro), "bytes": 1, "estimate": "test"}
        assert files.check_checkpoint(spec)["status"] == FAIL


def test_port_ranges_and_taken_port():
    assert limits.parse_port_ranges("60000-60002,60010") == [60000, 60001, 60002, 60010]
    assert limits.parse_port_ranges("auto") == []
    with pytest.raises(ValueError):
        limits.parse_port_ranges("70000-70001")
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = held.getsockname()[1]
        spec = {"device": "npu"}
        rows = limits.check_ports(spec, {"HCCL_HOST_SOCKET_PORT_RANGE": f"{port}-{port}"})
        assert rows[0]["status"] == FAIL and str(port) in rows[0]["detail"] and rows[0]["fix"]
        assert rows[1]["status"] == SKIP  # HCCL_NPU_SOCKET_PORT_RANGE not set
    assert limits.check_ports({"device": "cpu"}, {})[0]["status"] == SKIP


def test_node_checks_never_raise_for_a_broken_check(monkeypatch):
    spec = node_spec(load_recipe("tiny"))
    result = node.node_checks(spec)
    assert result["rows"] and all(r["status"] != FAIL for r in result["rows"]), result["rows"]
    bad = dict(spec, checkpoint=None)  # a malformed spec: that check reports itself failed, the rest still run
    rows = node.node_checks(bad)["rows"]
    assert any(
        r["check"] == "checkpoint" and r["status"] == FAIL and "check itself failed" in r["detail"] for r in rows
    )
    assert any(r["check"] == "env" for r in rows)


def test_no_heavy_imports():
    """Importing preflight must not import torch, torch_npu, vllm or ray."""
    import subprocess

    code = (
        "import sys, grpolab.preflight, grpolab.preflight.node, grpolab.cli.preflight; "
        "print([m for m in ('torch', 'torch_npu', 'vllm', 'ray') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def _node(node_id: str, resources: dict, head: bool = False) -> dict:
    """One entry as ray.nodes() returns it (only the fields preflight reads)."""
    res = dict(resources, **({"node:__internal_head__": 1.0} if head else {}))
    return {"NodeID": node_id * 8, "NodeManagerAddress": "10.0.0.1", "Alive": True, "Resources": res}


def test_device_rows_name_short_nodes_and_tolerate_a_cpu_head():
    recipe = load_recipe("glm5_2", ["cluster.nnodes=2"])
    nodes = [_node("a", {"CPU": 8}, head=True), _node("b", {"NPU": 16.0}), _node("c", {"NPU": 16.0})]
    rows = {(r.check, r.node): r for r in device_rows(recipe, nodes)}
    assert rows[("nodes", "cluster")].status == OK
    assert rows[("devices", "10.0.0.1/aaaaaaaa (head)")].status == WARN  # an unused CPU-only head
    short = device_rows(recipe, [_node("b", {"NPU": 16.0}), _node("d", {"NPU": 8.0})])
    by = {(r.check, r.node): r for r in short}
    assert (
        by[("devices", "10.0.0.1/dddddddd")].status == FAIL and "8 NPU" in by[("devices", "10.0.0.1/dddddddd")].detail
    )
    assert by[("nodes", "cluster")].status == FAIL and "--resources='{\"NPU\": 16}'" in by[("nodes", "cluster")].fix
    gpu = device_rows(load_recipe("qwen3_8b"), [_node("e", {"CPU": 2})])
    assert gpu[0].status == FAIL and "--num-gpus=8" in gpu[0].fix
    cpu = device_rows(load_recipe("tiny"), [_node("f", {"CPU": 2}, head=True)])
    assert cpu[0].status == OK and cpu[1].status == SKIP and "cpu" in cpu[1].detail


# ---------------------------------------------------------------------------------------------- issue 19/20 cases


def test_a_secret_differing_between_node_and_recipe_is_named_never_shown():
    spec = node_spec(load_recipe("tiny", ["env.HF_TOKEN=hf_recipe_value_5678", "env.MY_SETTING=on-recipe"]))
    node_env = {"HF_TOKEN": "hf_node_value_1234", "MY_SETTING": "on-node", "PATH": "/usr/bin"}
    rows = env_checks.check_env(spec, node_env, env_checks.job_env(node_env, spec["env"]))
    by = {r["check"]: r for r in rows}
    secret = by["env.HF_TOKEN"]
    assert secret["status"] == WARN and "HF_TOKEN=***redacted***" in secret["detail"]
    assert "hf_recipe_value_5678" not in str(rows) and "hf_node_value_1234" not in str(rows)
    assert "'on-node'" in by["env.MY_SETTING"]["detail"]  # a plain value is still shown: it helps


def test_no_row_of_a_node_carries_a_secret_however_it_got_there(tmp_path, monkeypatch):
    """The per-node task redacts the job env's secrets from every row (here: a model path that holds a token)."""
    token = "hf_in_a_path_0123456789"
    spec = base_spec(nnodes=1)
    spec["model"]["path"] = str(tmp_path / token)  # does not exist: its row prints the path
    spec["env"] = {"HF_TOKEN": token}
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_node_own_secret_0123")
    spec["checkpoint"]["path"] = str(tmp_path / "ghp_node_own_secret_0123")
    rows = node.node_checks(spec)["rows"]
    text = json.dumps(rows)
    assert token not in text and "ghp_node_own_secret_0123" not in text
    assert any(r["check"] == "model" and "***redacted***" in r["detail"] for r in rows)


def test_preflight_report_has_no_secret_from_a_set_override(tmp_path):
    """The driver's rows and the report (table and JSON) with a secret given by --set, Ray unreachable."""
    secret = "hf_from_the_command_line_42"
    report = run_preflight_here(["env.HF_TOKEN=" + secret])
    assert report.failed and secret not in report.to_json() and secret not in report.table()
    # a recipe that does not load: its schema row would echo the bad value, which is the secret again
    broken = run_preflight_here(["env.HF_TOKEN=" + secret, "trainer.total_steps=" + secret])
    (row,) = broken.select(check="recipe")
    assert row.status == FAIL and "trainer.total_steps" in row.detail and "***redacted***" in row.detail
    assert secret not in broken.to_json() and secret not in broken.table()


def run_preflight_here(overrides):
    from grpolab.preflight import run_preflight

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing answers there
    return run_preflight("tiny", address=f"127.0.0.1:{port}", progress=None, overrides=overrides)


def test_pins_and_installed_versions_are_read_by_the_one_parser(tmp_path):
    """stack.installed reads a job's PYTHONPATH (with the commit a VCS install records); CANN's pin goes through
    parse_pin (`v8.5.0@abc1234` is release 8.5.0; `8.5.0@not-hex` is refused by name)."""
    from grpolab.recipe import stack

    write_dist(tmp_path / "site", "vllm-ascend", "0.23.1.dev12+gdc55ef82a")
    info = tmp_path / "site" / "vllm_ascend-0.23.1.dev12+gdc55ef82a.dist-info" / "direct_url.json"
    info.write_text(json.dumps({"url": "https://x", "vcs_info": {"vcs": "git", "commit_id": "dc55ef82a0"}}))
    assert stack.installed("vllm_ascend") == (None, None)
    assert stack.installed("vllm_ascend", [str(tmp_path / "site")]) == ("0.23.1.dev12+gdc55ef82a", "dc55ef82a0")
    assert packages.installed("vllm-ascend", {"PYTHONPATH": str(tmp_path / "site")})[1] == "dc55ef82a0"
    write_toolkit(tmp_path / "tk", "8.5.0")
    here = {"ASCEND_TOOLKIT_HOME": str(tmp_path / "tk")}
    assert devices.check_cann({"stack": {"cann": "v8.5.0@abc1234"}}, here)["status"] == OK
    bad = devices.check_cann({"stack": {"cann": "8.5.0@not-hex"}}, here)
    assert bad["status"] == FAIL and "stack.cann" in bad["detail"] and "hex commit" in bad["detail"]


def test_the_drivers_verl_row_tells_how_to_install_the_pinned_release():
    from grpolab.preflight.driver import driver_rows

    rows = {r.check: r for r in driver_rows(load_recipe("qwen3_8b", ["stack.verl=0.9.0@abcdef1"]))}
    assert rows["verl"].status == WARN and rows["verl"].node == "driver"
    assert "install verl release 0.9.0 at commit abcdef1" in rows["verl"].fix


def test_no_pin_is_split_by_hand_outside_the_pin_parser():
    """Pins are parsed in grpolab.recipe.stack only (issue 20): no `split("@")` / `partition("@")` anywhere else in
    lib/ (tests/test_one_home.py also keeps installed versions read there only)."""
    root = Path(__file__).resolve().parents[1] / "lib" / "grpolab"
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ('split("@")' in line or "split('@')" in line or 'partition("@")' in line) and path.name != "stack.py"
    ]
    assert found == []


def test_special_and_huge_files_on_a_node_are_refused_not_waited_on(tmp_path):
    spec = base_spec()
    model = write_model(tmp_path / "model", "qwen3_30b_a3b")
    (model / "model.safetensors.index.json").unlink()
    os.mkfifo(model / "model.safetensors.index.json")  # a FIFO in the index's place: read, it would hang forever
    spec["model"]["path"] = str(model)
    config, weights = files.check_model(spec)
    assert config["status"] == OK and weights["status"] == OK  # is_file() is false for a FIFO: shards globbed
    (model / "config.json").unlink()
    os.mkfifo(model / "config.json")
    (row,) = files.check_model(spec)
    assert row["status"] == FAIL and "config.json" in row["detail"]
    big = tmp_path / "big"
    write_model(big, "qwen3_30b_a3b")
    with open(big / "config.json", "a") as fh:
        fh.truncate(files.JSON_BYTES + 1)
    spec["model"]["path"] = str(big)
    (row,) = files.check_model(spec)
    assert row["status"] == FAIL and "larger than" in row["detail"]
    toolkit = tmp_path / "tk" / "latest" / "x86"
    toolkit.mkdir(parents=True)
    os.mkfifo(toolkit / "ascend_toolkit_install.info")
    assert devices.cann_version({"ASCEND_TOOLKIT_HOME": str(tmp_path / "tk")}) == (None, "")
