"""The rules of the data and the reward (grpolab.rules.data, grpolab.rules.reward, the dry run of `grpolab data`), as
plain data that grpolab.rules.registry declares with every other rule (kept in a module of their own for the
registry's size, as grpolab.rules.registry_schedule).

Each is a Rule's fields (grpolab.rules.registry.Rule): id, family, side, doc, source, then its options.
"""

from __future__ import annotations

from typing import Any

EITHER = "error or warning"


def _rule(*fields: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """A Rule's positional fields (id, family, side, doc, source) and its options."""
    return fields, options


DATA_RULES = (
    _rule(
        "reward-manager",
        "reward",
        "none",
        "reward.manager is a reward manager the installed verl's trainer resolves by name (the registry it imports "
        "get_reward_manager_cls from, read from verl's files: verl 0.9.1's reward loop has naive, dapo, gdpo, "
        "rate_limited, remote; its older batch and prime are not among them).",
        "verl 0.9.1 trainer/ppo/reward.py and experimental/reward_loop/reward_manager (`Unknown reward manager`)",
    ),
    _rule(
        "reward-function",
        "reward",
        "none",
        "reward.function's file exists (a file on another machine is a warning for a cluster recipe), parses, and "
        "defines the function by that name (read with ast: the file is not run).",
        "verl 0.9.1 utils/import_utils.load_extern_object (FileNotFoundError / AttributeError after the cluster "
        "started)",
        severity_doc=EITHER,
    ),
    _rule(
        "reward-signature",
        "reward",
        "none",
        "The reward function takes the keywords the chosen manager calls it with (data_source, solution_str, "
        "ground_truth, extra_info in verl 0.9.1; read from the manager's own call) plus reward.kwargs, and needs "
        "no other argument.",
        "verl PR 2954 (a reward with a `prompt_str` parameter); verl 0.9.1 reward_loop managers' compute_score call",
    ),
    _rule(
        "data-source",
        "data",
        "none",
        "With verl's built-in reward (reward.function null), every data_source value in the data's sample has one "
        "(the dispatch of verl's default_compute_score, read from the installed verl); checked where the data is "
        "readable here.",
        "verl issue 3450 (`Reward function is not implemented for data_source=`, following the quick start); "
        "inclusionAI/AReaL issue 105",
    ),
    _rule(
        "data-file",
        "data",
        "none",
        "Each data file has a format verl reads (.parquet, .json, .jsonl) and is readable; a file not on this "
        "machine is named by `grpolab data` (preflight reads it on the nodes).",
        "verl 0.9.1 utils/dataset/rl_dataset.py (`Unsupported file format`)",
        severity_doc=EITHER,
    ),
    _rule(
        "data-columns",
        "data",
        "none",
        "The data has every column verl reads: data.prompt_key, and what the reward manager indexes in a row "
        "(data_source, reward_model.ground_truth in verl 0.9.1, read from the manager's code); missing ones are a "
        "KeyError in the first reward call.",
        "NVIDIA-NeMo/RL issue 2783 (data validation after a validation epoch: 30+ minutes lost); verl 0.9.1 "
        "reward_loop managers",
    ),
    _rule(
        "data-prompt",
        "data",
        "none",
        "The prompt column holds chat messages (a list of {role, content}), as verl's dataset and chat template "
        "expect; a plain string is an error.",
        "verl 0.9.1 utils/dataset/rl_dataset.py (_build_messages iterates the messages)",
    ),
    _rule(
        "data-values",
        "data",
        "none",
        "Sampled rows (`grpolab data`: every ground truth) have a ground truth, extra_info a mapping, one type.",
        "verl 0.9.1 utils/dataset/rl_dataset.py (__getitem__: extra_info.get('index')); GRPO Lab issue 45",
        severity_doc=EITHER,
    ),
    _rule(
        "data-images",
        "data",
        "none",
        "Rows with images have one `<image>` in the prompt per image, images verl opens ({bytes, path} or a path) "
        "and a model with a vision tower; `<image>` without an image is named.",
        "verl 0.9.1 utils/dataset/rl_dataset.py (_build_messages' asserts); examples/data_preprocess/geo3k.py",
    ),
    _rule(
        "prompt-length",
        "data",
        "none",
        "`grpolab data`, with the model's tokenizer on disk: prompts (chat template applied) longer than "
        "data.max_prompt_length; an error with truncation `error` and no filter_overlong_prompts, else a warning "
        "naming how many rows verl drops or truncates. Without the tokenizer, prompts whose characters alone "
        "(at most 8 a token) exceed the limit.",
        "verl 0.9.1 utils/dataset/rl_dataset.py (maybe_filter_out_long_prompts; `Prompt length ... is longer than`)",
        severity_doc=EITHER,
        stage="data",
    ),
    _rule(
        "chat-template",
        "data",
        "none",
        "`grpolab data`: the model's tokenizer has a chat template and it applies to the prompts.",
        "verl 0.9.1 utils/dataset/rl_dataset.py (apply_chat_template on every prompt)",
        stage="data",
    ),
    _rule(
        "reward-dry-run",
        "data",
        "none",
        "`grpolab data` calls the reward as the recipe's reward manager does (its keywords and extra_info keys, "
        "in an executor thread where the manager uses one), contained (the import's isolation, a memory and a time "
        "limit), on rows from across the train and val files with the ground truth as the answer, a wrong, an empty "
        "and a long one: it must load, and not raise, crash or end its process on any of them. A missing "
        "dependency verl declares, or a need for the network, is a warning (not judged here).",
        "GRPO Lab issues 32 and 45 (reward faults met only after the first rollout)",
        stage="data",
        severity_doc=EITHER,
    ),
    _rule(
        "reward-value",
        "data",
        "none",
        "`grpolab data`: the reward returns a finite number (or a dict with a finite `score`), as verl's "
        "managers read it.",
        'verl 0.9.1 reward_loop managers (`score = result["score"]` or the result itself)',
        stage="data",
    ),
    _rule(
        "reward-constant",
        "data",
        "none",
        "`grpolab data`: the reward tells the right answer from a wrong and an empty one (every score equal: "
        "GRPO's advantages are all zero and nothing is learned).",
        "GRPO Lab issue 32; the monitor's reward-flat alert is the same fault seen during a run",
        stage="data",
    ),
    _rule(
        "reward-slow",
        "data",
        "none",
        "`grpolab data`: one step's reward calls (train_batch_size x rollout.n x the time per call) fit in "
        "reward.max_step_share of the step's estimated time (the cost model's), or reward.max_call_ms per call "
        "where there is no estimate: over it a warning, over 10 times it (the reward alone as long as the step) an "
        "error; the same for the long answer (data.max_response_length) against the short ones, and a call that "
        "does not return at all.",
        "GRPO Lab issue 32 (512 x 16 calls a step)",
        stage="data",
        severity_doc=EITHER,
    ),
    _rule(
        "reward-output",
        "data",
        "none",
        "`grpolab data`: what the reward prints per call (16 KiB: a warning; 1 MiB: an error), which verl writes "
        "to the reward worker's log on every call of every step (the dry run keeps its first MiB in a file).",
        "GRPO Lab issue 45 (a reward printing 6 MB a call)",
        severity_doc=EITHER,
        stage="data",
    ),
)
