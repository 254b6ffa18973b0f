"""`grpolab diagnose` on what held-out batches 21-26 taught (tests/data/failures/README.md), each rule against its
neighbour that must not change: a loading bar is no work done (a trainer's bar is), a missing submodule is a version
mismatch (a missing package is not), httpx's refusal and a bracketed level are error lines (a bracketed warning is
not), a reward called against its signature is the reward's (another function's is not), and JSON's NaN of a loss is
the loss's. The real logs are the corpus's; the made-up lines are the other side of each rule."""

from __future__ import annotations

import io
import json
import sys

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log, _said


def _family(text: str, monkeypatch, capsys) -> str:
    """The family `grpolab diagnose - --json` says of a log without a failure (healthy-run or warning-only)."""
    import grpolab.cli

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert grpolab.cli.main(["diagnose", "-", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["failure"] is None
    return out["family"]


WARNED = "/x/torchvision/io/image.py:13: UserWarning: Failed to load image Python extension\n  warn(\n"


@pytest.mark.parametrize(
    ("bar", "family"),
    [
        ("Loading weights: 100%|##########| 339/339 [00:02<00:00, 137.54it/s]", "warning-only"),
        ("Loading checkpoint shards: 100%|##########| 4/4 [00:11<00:00,  2.89s/it]", "warning-only"),
        ("Map: 100%|##########| 70/70 [00:00<00:00, 1999.12 examples/s]", "warning-only"),
        ("  5%|#         | 5/100 [00:10<03:10,  2.00s/it]", "healthy-run"),  # HF Trainer's bar: no description
        ("(WorkerDict pid=1)  5%|#         | 5/100 [00:10<03:10,  2.00s/it]", "healthy-run"),
        ("Epoch 1:   5%|#         | 5/100 [00:10<03:10,  2.00s/it]", "healthy-run"),
        ("Training Progress:  12%|#         | 12/100 [01:00<07:20,  5.00s/it]", "healthy-run"),
    ],
)
def test_a_bar_of_loading_is_no_work_done_and_a_trainers_bar_is(bar, family, monkeypatch, capsys):
    assert _family(WARNED + bar + "\n", monkeypatch, capsys) == family


def test_a_missing_submodule_is_a_version_mismatch_and_a_missing_package_is_not():
    # verl-3842: Python names the first part of a dotted import it cannot find: vllm is there, its v1.engine.utils not
    assert _said(_log("verl-3842")) == ("import-error", "version-mismatch")
    assert _said("ModuleNotFoundError: No module named 'vllm'\n") == ("import-error", "missing-dependency")
    # ms-swift-9261: transformers' lazy import, its real error on the next line without a type
    assert _said(_log("ms-swift-9261")) == ("import-error", "missing-dependency")


def test_httpx_refusals_and_bracketed_levels_are_error_lines_and_a_bracketed_warning_is_not():
    assert _said(_log("slime-1148")) == ("startup-timeout", "startup-timeout")  # no healthy engine behind the router
    assert _said("Client error '404 Not Found' for url 'http://127.0.0.1:8000/v1/completions'\n") is not None
    assert _said(_log("verl-3150")) == ("reward-missing", "reward-missing")  # `[Error] Task failed: Can't pickle`
    assert _said("[Error] Task failed: connection reset by the server\n") == ("unknown", "unknown")
    assert _said("[Warning] Task retried: connection reset by the server\n") is None
    assert _said(_log("grpo-zero-1")) == ("data-error", "data-error")  # pyarrow.lib.ArrowInvalid: a type by module


def test_a_reward_called_against_its_signature_is_the_rewards_and_another_functions_call_is_not():
    failure = diagnose_text(_log("qwen-vl-series-finetune-234"))
    assert (failure.cause, failure.family, failure.key) == ("reward-missing", "reward-missing", "reward.function")
    assert "compute_score(data_source, solution_str, ground_truth" in failure.fix and "**kwargs" in failure.fix
    said = _said("TypeError: generate() got an unexpected keyword argument 'logprobs_mode'\n")
    assert said is not None and said[0] != "reward-missing"


def test_a_nan_loss_in_json_or_verls_step_line_is_the_losss_and_a_finite_one_is_not():
    assert _said(_log("ms-swift-4465")) == ("nan-loss", "nan-loss")  # `"kl": NaN` in a JSON log dict
    assert _said(_log("verl-498")) == ("nan-loss", "nan-loss")  # `critic/vf_loss:nan` in verl's step line
    assert _said('{"loss": -0.037, "grad_norm": 0.006, "kl": 0.0012, "reward": 1.55}\n') is None
    assert _said("step:1 - critic/vf_loss:0.512 - critic/grad_norm:3.100 - actor/pg_loss:-0.013\n") is None


def test_ascend_shapes_of_batch_25_and_their_neighbours():
    # HCCL's store exchange as NCCL's: a communicator not set up
    assert _said(_log("vllm-ascend-5135")) == ("comm-init", "comm-init")
    # a Ray node without the NPU resource (vLLM's `Current node has no NPU available. current_node_resource=...`)
    assert _said(_log("vllm-ascend-3114")) == ("no-device", "ray-resources")
    # the device count failed because CANN refused ASCEND_RT_VISIBLE_DEVICES: the setting, not the query
    assert _said(_log("gpustack-3352")) == ("no-device", "device-visibility")
    query = (
        "RuntimeError: init:torch_npu NPU function error: aclrtGetDeviceCount(&device_count), error code is 207004\n"
    )
    assert _said(query) == ("no-device", "device-query")
    assert _said(_log("vllm-ascend-11990")) == ("unknown", "cuda-graph-capture")  # NPUGraph's capture_begin
    assert _said(_log("vllm-ascend-2725")) == ("import-error", "version-mismatch")  # kernels of another chip
    # out of memory while the engine loads its model (`Error executing method 'load_model'`) is its start-up's; the
    # same line after a training step is training's
    assert _said(_log("vllm-ascend-2378")) == ("device-oom", "rollout-startup-oom")
    oom = "RuntimeError: NPU out of memory. Tried to allocate 450.00 MiB (NPU 3; 60.96 GiB total capacity)\n"
    assert _said("step:3 - actor/pg_loss:0.1 - actor/grad_norm:0.5\n" + oom) == ("device-oom", "device-oom")


def test_a_plain_lookup_error_in_an_engines_code_is_a_bug_of_its_code_and_a_rows_or_a_parameters_is_not():
    assert _said(_log("slime-1514")) == ("unknown", "trainer-bug")  # `KeyError: 'weight_version'` in SGLang's code

    def raised(path: str, error: str) -> tuple[str, str] | None:
        frame = f'  File "/usr/lib/python3.12/site-packages/{path}", line 9, in f\n    x = y[k]\n'
        return _said(f"Traceback (most recent call last):\n{frame}{error}\n")

    assert raised("vllm/v1/core/sched/scheduler.py", "KeyError: 7") == ("unknown", "trainer-bug")
    # a parameter's name the receiving side does not know: the weight sync's name map, not a bug of the engine
    name = "KeyError: 'model.layers.0.mlp.gate_proj.weight'"
    assert raised("vllm/model_executor/models/qwen2.py", name) == ("weight-sync", "weight-sync")
    assert _said(_log("ms-swift-2399")) == ("data-error", "data-error")  # a row without its column, in datasets


# what a log collector puts before every line: kubectl's and docker's `--timestamps`, docker compose's column
FRAMED = {
    "kubectl --timestamps": lambda line: "2026-03-01T08:15:42.123456789Z " + line,
    "docker compose": lambda line: "trainer-1  | " + line,
}


@pytest.mark.parametrize("how", sorted(FRAMED))
def test_a_log_a_collector_framed_gets_the_answer_of_the_log_itself(how):
    import yaml

    from grpolab.monitor.logread import posted
    from tests.test_diagnose_corpus import CASES

    def said(text: str):
        failure = diagnose_text(text)
        return (failure.cause, failure.family, failure.rank, failure.node, failure.first_error) if failure else None

    changed = []
    for path in CASES[::6]:  # a sample across the corpus, rank and node included
        log = yaml.safe_load(path.read_text())["log"]
        if how == "docker compose" and len([line for line in log.splitlines() if line.strip()]) < 2:
            continue  # one line `name  | text` is as likely a table's: a column is told by two lines or more
        if posted(log.encode()):
            continue  # a page's quote (`> `) comes outside a collector's frame, not inside it
        if said("".join(FRAMED[how](line) for line in log.splitlines(True))) != said(log):
            changed.append(path.stem)
    assert changed == []


def test_a_table_of_steps_is_no_collectors_column_and_one_framed_line_in_many_frames_nothing():
    # a notebook's table (`1 | -0.28 | ... | nan |`): the rows are the log, not a compose column before it
    assert _said(_log("open-r1-704")) == ("nan-loss", "nan-loss")
    # one line in ten with a column is the line's own text: nothing is stripped; nine in ten make the column
    from grpolab.monitor.logread import framing

    assert framing(("INFO step 1 done\n" * 9 + "trainer-1  | Traceback (most recent call last):\n").encode()) is None
    assert framing(("trainer-1  | INFO step 1 done\n" * 9 + "Traceback (most recent call last):\n").encode())


# srun --label's `3: ` stays in the line (grpolab.monitor.origin reads the task's rank from it); the patterns read
# past it. Logs whose answer it still changes, each for a pattern anchored where the label now stands:
SRUN_LEFT = {
    "l1-21",  # a line quoted whole (`"omegaconf.errors.ConfigAttributeError: ...`): its label before the quote
    "verl-841",  # the same, quoted with `'` (`'RuntimeError: Expected there to be 1 prompt updates ...`)
    "vllm-1465",  # a page's `> ` quote of one line: the label before the quote, so the quote is not read as a page's
    # a line quoted whole, as l1-21's (`"ValueError: No supported config format found in ..."`, `"openai_harmony...`)
    "hf-llama-3.1-nemotron-70b-instruct-discussion-3",
    "vllm-ascend-docs-gpt-oss-harmony-vocab",
}


def test_a_log_srun_labelled_gets_the_cause_and_family_of_the_log_itself():
    import yaml

    from tests.test_diagnose_corpus import CASES

    changed = set()
    for path in CASES:
        log = yaml.safe_load(path.read_text())["log"]
        if _said("".join("3: " + line for line in log.splitlines(True))) != _said(log):
            changed.add(path.stem)
    assert changed == SRUN_LEFT


def test_batch_27_28_shapes_and_their_neighbours():
    # `No module named 'vllm._version'` continuing a RuntimeWarning is no failure (it had read as an import error)
    import grpolab.monitor.diagnose as dg

    scan = dg.Scan()
    scan.feed_text(_log("logic-rl-7"))
    assert scan.result() is None and scan.family() == "warning-only"
    assert _said("ModuleNotFoundError: No module named 'vllm._version'\n")[0] == "import-error"  # raised, it is one
    # torch's dispatch refusing a plain tensor beside a DTensor in the framework's code: a bug of that code; the same
    # refusal on the weight sync's stack stays the sync's
    assert _said(_log("verl-5633")) == ("unknown", "trainer-bug")
    assert _said(_log("seg-zero-105")) == ("weight-sync", "weight-sync")
    # a weight of no elements loaded into a parameter: a shard sent without its gather; a shape that differs is not
    assert _said(_log("r1-v-132")) == ("weight-sync", "weight-sync")
    other = "AssertionError: Attempted to load weight (torch.Size([640, 3])) into parameter (torch.Size([1280, 3]))\n"
    assert _said(other) != ("weight-sync", "weight-sync")


@pytest.mark.parametrize(
    "path, library",
    [
        ("/root/slime/slime/ray/rollout.py", "slime"),  # a trainer's subpackage named after a library: the trainer's
        ("/home/u/OpenRLHF/openrlhf/trainer/ray/vllm_engine.py", "openrlhf"),
        ("/app/verl/utils/megatron/optimizer.py", "verl"),
        ("/workspace/verl/Megatron-LM/megatron/core/transformer.py", "megatron"),  # a checkout inside: the library's
        ("/workspace/verl/vllm/vllm/engine/llm_engine.py", "vllm"),
        ("/usr/lib/python3/dist-packages/ray/_private/worker.py", "ray"),
        ("/opt/vllm/vllm/v1/engine/core.py", "vllm"),
    ],
)
def test_the_library_of_a_frame_is_the_trainers_for_its_own_subpackages(path, library):
    from grpolab.monitor.libraries import library_of

    assert library_of(path) == library


def test_a_failure_inside_a_save_is_the_saves_and_one_under_a_frame_only_named_save_is_not():
    def raised_in(function: str, path: str) -> str:
        return (
            "Traceback (most recent call last):\n"
            '  File "/opt/app/train.py", line 10, in main\n    step()\n'
            f'  File "{path}", line 20, in {function}\n    raise ValueError("bad")\n'
            "ValueError: The generation config instance is invalid\n"
        )

    save = raised_in("save_pretrained", "/usr/lib/python3.11/site-packages/transformers/modeling_utils.py")
    assert _said(save) == ("checkpoint-save", "checkpoint-save")
    hooks = raised_in("saved_tensors_hooks", "/usr/lib/python3.11/site-packages/torch/autograd/graph.py")
    assert _said(hooks)[1] != "checkpoint-save"
