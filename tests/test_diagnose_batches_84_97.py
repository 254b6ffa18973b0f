"""`grpolab diagnose` on what held-out batches 84-97 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: a log as a page or an editor left it (typographic quotes, no-break spaces) and as a
terminal wrapped it (tmux, screen: every long line cut at the width), Kubernetes' OOMKilled, an exit code of -9, Ray's
compiled-graph channel that timed out, SGLang's rank waiting for the others to load, a name imported from a package
that is only a folder, a refused keyword said without its type, torch's memory pool refusing expandable segments, FP8's
shape requirement, CANN refusing the visible device, and a module without a name inside a reward library; and of
batches 90-93, unsloth's check of a template's generation prompt, a driver older than the wheel's CUDA, an attention
backend refused, a relation said with `<`, a reward module without the function named, a build or link that failed,
a Rust component's panic and glog behind Monarch's `[-]`; and of batches 94-97, an engine's registry without the chat
template named, a server's health endpoint that nothing answers, TensorRT-LLM's bracketed error level and its
executor without memory, uv's failed build and its unsolvable dependencies, the CUDA core dump's fault, a string
where a tensor was due, and a reward model's training script (no reward function). The real logs are the corpus's; the made-up lines are the
other side of each rule."""

from __future__ import annotations

import re

import pytest
import yaml

from grpolab.monitor.diagnose import diagnose_text
from grpolab.monitor.logread import wrapping
from tests.test_diagnose import _log, _said
from tests.test_diagnose_corpus import CASES


def _answer(text: str):
    failure = diagnose_text(text)
    return (failure.cause, failure.family, failure.rank, failure.node) if failure else None


# ---------------------------------------------------------------------------------------- a page's punctuation
def _typeset(log: str) -> str:
    """The log as a blog's editor or a page's renderer leaves it: typographic quotes, runs of spaces kept with
    no-break spaces."""
    log = re.sub(r"'([^'\n]*)'", "\u2018\\1\u2019", log).replace("'", "\u2019")
    log = re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", log)
    return log.replace("  ", "\u00a0 ")


def test_a_log_with_a_pages_quotes_and_spaces_gets_the_answer_of_the_log_itself():
    changed = []
    for path in CASES[
        ::3
    ]:  # a sample across the corpus (before logread.typographic: 229 of the 1575 cases' answers changed)
        log = yaml.safe_load(path.read_text())["log"]
        if _answer(_typeset(log)) != _answer(log):
            changed.append(path.stem)
    assert changed == []


def test_a_pages_quotes_are_read_as_the_consoles():
    said = diagnose_text("AttributeError: \u2018NoneType\u2019 object has no attribute \u2018shape\u2019\n")
    assert said is not None and "'NoneType'" in said.first_error
    # a Chinese post's full-width colon after the exception's type (vllm-ascend-1987: `【BUG】：RuntimeError: NPU out ...`)
    assert _said("AssertionError\uff1aTorch not compiled with CUDA enabled\n") == _said(
        "AssertionError: Torch not compiled with CUDA enabled\n"
    )


# ---------------------------------------------------------------------------------------- a terminal's wrap
def _wrapped(log: str, width: int) -> str:
    return "\n".join(line[i : i + width] for line in log.splitlines() for i in range(0, max(len(line), 1), width))


# the corpus's logs that their posters copied from a terminal that wrapped them (each cut mid-word at one width)
WRAPPED = {
    "ai-agent-book-docs-sftvsrl-virl-save-every-none",
    "openrlhf-265",
    "prime-rl-1119",
    "simplerl-reason-38",
    "torchtitan-1335",  # (batch 123: a PR's log wrapped at 121)
    "verifiers-586",
    "verl-1224",
    "verl-1759",
    "verl-1986",
    "vllm-1160",
    "vllm-ascend-3114",
    "vllm-ascend-9994",  # (batch 120: a PR's pydantic error wrapped at 70)
    "wmpo-3",
}
# wrapped at 120 columns, the logs whose answer still changes: a cut that falls where a record could start
WRAP_LEFT = {
    "openrlhf-265",  # wrapped twice (at 149 as posted, then at 120): the second width is not the widest line
    "openrlhf-621",  # cuts right after `shape: torch.` (a sentence's end, read as one) and before `(`
    "vllm-ascend-1955",  # HCCL's record cut before its `[1], listen on ip[...]`: a bracket starts a record
    # its records end in a typed `^M` (a carriage return as the page shows it): as posted the checkpoint's words of a
    # dump run into its error (a BEYOND answer); without the `^M`, or wrapped and joined again, unknown
    "vllm-ascend-13185",
    # DeepSpeed's echo of a rank's argv, one line of 2000 characters: cut at 120 and joined again it is no longer the
    # list it was, and `'--load_checkpoint'` reads as words (a BEYOND answer either way: the title names the memory)
    "openrlhf-519",
}


def test_the_corpus_logs_a_terminal_wrapped_are_read_as_wrapped_and_no_other():
    found = {path.stem for path in CASES if wrapping(yaml.safe_load(path.read_text())["log"].encode())}
    assert found == WRAPPED, found ^ WRAPPED


def test_a_log_a_terminal_wrapped_gets_the_answer_of_the_log_itself():
    changed, read = set(), 0
    for path in CASES[::2]:
        log = yaml.safe_load(path.read_text())["log"]
        wrapped = _wrapped(log, 120)
        if wrapped == log.rstrip("\n") or not wrapping(wrapped.encode()):
            continue  # no line over the width, or too few cut lines to tell a wrap from a log's own lines
        read += 1
        if _said(wrapped) != _said(log):
            changed.add(path.stem)
    assert read > 200  # (most logs with long lines: unwrapping does work here)
    assert changed <= WRAP_LEFT, changed - WRAP_LEFT


def test_a_wrapped_error_line_is_read_whole_and_a_bar_at_the_width_or_a_format_of_one_width_is_no_cut():
    # a terminal 100 columns wide cut the NCCL timeout and its traceback's frames mid-word
    log = _wrapped(_log("verl-1224"), 100)
    assert wrapping(log.encode()) == 100 and _said(log) == _said(_log("verl-1224"))
    # DeepSpeed-Chat's fixed-width throughput records, then its metrics line: records of one format, no cut
    assert wrapping(_log("deepspeedexamples-444").encode()) is None
    # a progress bar padded to the width, then an error line: the error line starts its own line
    bar = "Loading: 100%|" + "#" * 60 + "| 4/4 [00:01<00:00]"
    width = len(bar)
    text = "\n".join(
        [bar, "RuntimeError: CUDA error: an illegal memory access was encountered", "x" * (width - 3)] + [bar] * 3
    )
    assert _said(text + "\n") == ("device-fault", "device-fault")
    # rich's panels pad every line with spaces to the width: no cut
    padded = "\n".join(f"| {word:<76}|" if i % 2 else f"{word:<80}  " for i, word in enumerate("abcdefgh"))
    assert wrapping(padded.encode()) is None


# ---------------------------------------------------------------------------------------- the rules
@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("kuberay-4287", ("host-oom", "host-oom")),  # Kubernetes' `reason: OOMKilled` beside `exitCode: 137`
        ("kuberay-2735", ("host-oom", "host-oom")),
        ("sglang-15235", ("killed", "killed")),  # SGLang's launcher: `Exit code: -9`
        ("ray-53845", ("comm-timeout", "comm-timeout")),  # RayChannelTimeoutError of vLLM's Ray compiled graph
        ("ray-59249", ("comm-timeout", "comm-timeout")),
        ("sglang-39128", ("startup-timeout", "startup-timeout")),  # TP rank 0 loaded, the other ranks did not
        ("vllm-ascend-5497", ("import-error", "missing-dependency")),  # `(unknown location)`: vllm only a folder
        ("vllm-ascend-361", ("import-error", "version-mismatch")),  # `got an unexpected keyword` without TypeError
        ("nemo-rl-2471", ("unknown", "memory-saver-offload")),  # expandable segments in vLLM's memory pool
        ("transformerengine-1422", ("engine-config", "engine-config")),  # FP8's shapes divisible by 8 and 16
        ("transformerengine-1571", ("engine-config", "engine-config")),
        ("vllm-ascend-167", ("no-device", "device-visibility")),  # CANN: `Set visible device failed`
        ("verifiers-393", ("import-error", "version-mismatch")),  # module 'verifiers' has no attribute, in its env
        # batches 90-93
        ("unsloth-1404", ("chat-template", "chat-template")),  # `does not have a {% if add_generation_prompt %}`
        ("unsloth-1868", ("chat-template", "chat-template")),
        ("cnblogs-marsggbo-17966269", ("import-error", "version-mismatch")),  # the driver older than torch's CUDA
        ("rldecisionagent-docs-vl-invalid-attention-backend", ("engine-config", "engine-config")),
        ("rldecisionagent-docs-vl-flashinfer-backend-unsupported", ("engine-config", "engine-config")),
        ("roll-docs-qa-batch-size-lt-chunks", ("batch-divisible", "batch-divisible")),  # `batch_size 32 < chunks 64`
        ("thinkprune-4", ("reward-missing", "reward-missing")),  # a reward module without the function named
        ("ascend-pytorch-docs-install-faq-libgfortran", ("import-error", "build-missing-extension")),  # the linker
        ("monarch-1813", ("unknown", "unknown")),  # glog's E record behind hyperactor's `[-]`
        ("torchforge-630", ("unknown", "unknown")),  # a Rust thread's panic
        # batches 94-97
        ("lmdeploy-1319", ("chat-template", "chat-template")),  # `please specify chat template`
        ("lmdeploy-3498", ("chat-template", "chat-template")),  # `chat template 'qwen3' is not registered`
        ("lmdeploy-4102", ("chat-template", "chat-template")),  # `You are using base template to handle chat task`
        ("axolotl-2528", ("startup-timeout", "startup-timeout")),  # nothing answers `/health/`
        ("tensorrt-llm-5872", ("device-oom", "rollout-startup-oom")),  # `[E] ... insufficient GPU memory`
        ("skyrl-1382", ("import-error", "build-missing-extension")),  # uv's `× Failed to download and build`
        ("skyrl-428", ("device-fault", "device-fault")),  # `CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS`
        ("trl-590", ("data-error", "data-error")),  # `new(): invalid data type 'numpy.str_'`
        ("colossalai-2834", ("unknown", "unknown")),  # raised under train_reward_model.py: no reward function's
    ],
)
def test_batch_84_97_rules_on_real_logs(case, said):
    assert _said(_log(case)) == said


def test_batch_84_97_rules_leave_their_neighbours_alone():
    # an exit status that is no kill: 1 is the process's own error, -1 no signal
    assert _said("ERROR: process exited with code 1\nExit code: 1\n") != ("killed", "killed")
    assert _said('Traceback (most recent call last):\n  File "a.py", line 1\nValueError: x\nExit code: -1\n')[0] != (
        "killed"
    )
    assert _said("Exit Code:    137\n")[0] == "killed"  # 137 without OOMKilled: a kill, not memory
    # a start-up that timed out waiting for its engine stays a start-up's
    assert _said("TimeoutError: Timed out waiting for the engine to start\n")[0] == "startup-timeout"
    # a name the installed package does not have (its file named): the versions', not a missing package
    versions = "ImportError: cannot import name 'Foo' from 'vllm' (/usr/lib/python3/site-packages/vllm/__init__.py)\n"
    assert _said(versions) == ("import-error", "version-mismatch")
    # a keyword spelled as a flag (`enable-auto-tool-choice`) is no version's: no version takes it
    flag = "AsyncEngineArgs.__init__() got an unexpected keyword argument 'enable-auto-tool-choice'\n"
    assert _said(flag) != ("import-error", "version-mismatch")
    # a shape check with no precision setting in it is no engine setting
    assert _said("AssertionError: height divisible by 8 and width divisible by 16 required\n") != (
        "engine-config",
        "engine-config",
    )
    # a reward function's own KeyError in the reward library stays the reward's
    reward = (
        "Traceback (most recent call last):\n"
        '  File "/work/rewards/math_reward.py", line 12, in compute_score\n'
        "    return scores[answer]\n"
        "KeyError: 'boxed'\n"
    )
    assert _said(reward) == ("reward-error", "reward-error")
    # a choice refused without the choices named is no engine's choice; a CUDA driver too old for the runtime stays
    # the device's (the registry's no-device, as the corpus's threads read it)
    assert _said("ValueError: Invalid value: 3\n") != ("engine-config", "engine-config")
    cuda = "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n"
    assert _said(cuda) == ("no-device", "no-device")
    # a build that worked, make with nothing to do, a panic named mid-sentence, glog's warning behind `[-]`: no failure
    assert _said("Successfully built flash-attn\nInstalling collected packages: flash-attn\n") is None
    assert _said("make: Nothing to be done for 'all'.\n") is None
    assert _said("The thread that panicked at startup was restarted\n") is None
    assert _said("[-]W1110 19:18:10.208019 387221 hyperactor/src/mailbox/undeliverable.rs:180] no sink yet\n") is None
    # pip's failed wheel build is a native part that did not build
    wheel = "  ERROR: Failed building wheel for flash-attn\nERROR: Could not build wheels for flash-attn\n"
    assert _said(wheel) == ("import-error", "build-missing-extension")
    # a module without a name that is no reward's: the versions'
    plain = "AttributeError: module 'transformers.utils' has no attribute 'is_flash_attn_available'\n"
    assert _said(plain) == ("import-error", "version-mismatch")
    # a server's other endpoint refused is no start-up's; TensorRT-LLM's [I] level is no error; uv's unsolvable
    # dependencies are the versions'
    refused = "requests.exceptions.ConnectionError: Max retries exceeded with url: /v1/completions (Caused by x)\n"
    assert _said(refused) != ("startup-timeout", "startup-timeout")
    assert _said("[07/08/2025-19:47:15] [TRT-LLM] [RANK 0] [I] Initialized executor on rank 0\n") is None
    assert _said("  × No solution found when resolving dependencies:\n") == ("import-error", "version-mismatch")
