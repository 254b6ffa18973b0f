"""The local CPU trainer of the `tiny` recipe: `python -m grpolab.local.train --run-dir DIR`.

Reads DIR/recipe.yaml, builds (or loads from the cache) the tiny model, runs a short supervised warm-up
that teaches the answer format (digits, then EOS) but not yet the answers, then TRL's GRPOTrainer on `a+b=`, the
problems read from data.train_files / data.val_files (verl's layout: grpolab.local.task.load_problems) and scored by
reward.function, called as verl's reward managers call it.
Writes, as it goes:
    DIR/metrics.jsonl (or $VERL_FILE_LOGGER_PATH)  verl file-logger lines, one per step; step 0 holds the
                                                    validation accuracy before GRPO
    DIR/warmup/                                     the warmed-up model: GRPO's start and KL reference
    CKPT/global_step_N/                             every trainer.save_freq steps and at the last one: model,
                                                    optimizer, scheduler, RNG and data position (CKPT: trainer.ckpt_dir,
                                                    else DIR/checkpoint; verl's layout, grpolab.local.checkpoint)
    stdout                                          one progress line per step, for the job log
With trainer.resume_mode resume_path (set by `grpolab resume`) it continues the checkpoint trainer.resume_path
names: no warm-up, the same KL reference, the step numbers going on from the checkpoint's. resume_mode auto does
so from CKPT's newest complete checkpoint when there is one, as verl does.
Exit status 0 on success, 2 for unusable settings.

`--set key=value` (TinySettings field names) overrides the recipe, for experiments and tests.

Why one file of this size: it is the job's entrypoint (python -m grpolab.local.train) and runs alone on the node:
the GRPO loop, evaluation and checkpointing stay together so the trainer has no import beyond grpolab.local.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from grpolab.verl.rewards import locate, split_function

# Never reach for the Hub: everything this trainer loads is built locally.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from grpolab import run_folder
from grpolab.local import checkpoint as C  # noqa: E402
from grpolab.local import metrics as M  # noqa: E402
from grpolab.local.async_loop import run_asynchronously  # noqa: E402
from grpolab.local.mapping import (  # noqa: E402
    NULLABLE,
    TinySettings,
    check_settings,
    grpo_config_kwargs,
    settings_from_recipe,
)
from grpolab.local.task import (  # noqa: E402
    ArithReward,
    Problem,
    check_lengths,
    is_correct,
    load_data,
    split_completion,
    train_schedule,
    warmup_pairs,
)
from grpolab.local.tiny import TinyModelSpec, ensure_tiny  # noqa: E402


def model_spec(settings: TinySettings) -> TinyModelSpec:
    """The tiny model's shape from the settings; the init seed follows the training seed."""
    return TinyModelSpec(
        hidden_size=settings.hidden_size,
        layers=settings.layers,
        heads=settings.heads,
        kv_heads=settings.kv_heads,
        intermediate_size=settings.intermediate_size,
        max_positions=max(32, settings.max_prompt_length + settings.max_response_length + 4),
        init_seed=settings.seed,
    )


def load_settings(run_dir: Path, recipe_path: Path | None = None, sets: Sequence[str] = ()) -> TinySettings:
    """Settings from the run's recipe.yaml (if any), then `key=value` overrides."""
    path = recipe_path or run_folder.recipe_file(run_dir)
    if not path.is_file():
        raise ValueError(f"no recipe at {path}: the run directory holds the resolved recipe.yaml")
    return apply_sets(settings_from_recipe(_read_recipe(path)), sets)


def _read_recipe(path: Path) -> Any:
    """The resolved recipe: through grpolab.recipe.loader when it loads it, else the plain YAML mapping.

    recipe.yaml in a run directory is already fully resolved, so reading it as data is enough; going
    through the loader first keeps its type checks when they are available.
    """
    try:
        # lazy: pydantic, yaml (the loader's type checks where it imports on the node; plain YAML otherwise)
        from grpolab.recipe.loader import load_recipe

        return load_recipe(str(path))
    except ImportError:
        pass
    from grpolab.recipe.yamlio import load_yaml  # lazy: yaml (the plain-YAML fallback, read once at the start)

    return load_yaml(path, "run record") or {}


def apply_sets(settings: TinySettings, sets: Sequence[str]) -> TinySettings:
    """`key=value` strings typed by the TinySettings field they name."""
    types = {f.name: type(getattr(settings, f.name)) for f in fields(settings)}
    changes: dict[str, Any] = {}
    for item in sets:
        key, sep, raw = item.partition("=")
        key = key.strip().rsplit(".", 1)[-1]  # accept dotted recipe keys: algorithm.lr=1e-3 -> lr
        if not sep or key not in types:
            raise ValueError(f"bad --set {item!r}: expected key=value with key one of {', '.join(sorted(types))}")
        kind = types[key]
        if key in NULLABLE:
            text = raw.strip()
            changes[key] = None if text.lower() in ("", "null", "none") else kind(text) if kind is int else text
        elif kind is bool:
            changes[key] = raw.strip().lower() in ("1", "true", "yes", "on")
        elif kind is list:  # data files: comma-separated paths
            changes[key] = [part.strip() for part in raw.split(",") if part.strip()]
        else:
            changes[key] = kind(float(raw)) if kind is int else kind(raw)
    return settings.replace(**changes)


def set_threads(settings: TinySettings) -> None:
    # lazy: torch (grpolab.local.score imports this module on the driver; only the job loads them)
    import torch

    if settings.threads > 0:
        torch.set_num_threads(settings.threads)


def quiet_transformers() -> None:
    """No progress bars or advisory warnings in the job log: the progress lines are ours."""

    # lazy: transformers (grpolab.local.score imports this module on the driver; only the job loads them)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def warmup(model, tokenizer, settings: TinySettings, train: Sequence[Problem]) -> float:
    """A short supervised warm-up on train problems (the format, not yet the answers); returns the last loss."""
    # lazy: torch (grpolab.local.score imports this module on the driver; only the job loads them)
    import torch

    if settings.warmup_steps <= 0:
        return float("nan")
    pairs = warmup_pairs(train, settings.warmup_steps * settings.warmup_batch_size, seed=settings.seed)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    optim = torch.optim.AdamW(model.parameters(), lr=settings.warmup_lr, weight_decay=0.0)
    model.train()
    loss = torch.tensor(float("nan"))
    for step in range(settings.warmup_steps):
        batch = pairs[step * settings.warmup_batch_size : (step + 1) * settings.warmup_batch_size]
        seqs, labels = [], []
        for prompt, target in batch:
            p = tokenizer(prompt, add_special_tokens=False).input_ids
            t = tokenizer(target, add_special_tokens=False).input_ids + [eos]
            seqs.append(p + t)
            labels.append([-100] * len(p) + t)  # learn the completion only
        width = max(len(s) for s in seqs)
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
        lab = torch.tensor([lb + [-100] * (width - len(lb)) for lb in labels])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        loss = model(input_ids=ids, attention_mask=mask, labels=lab).loss
        optim.zero_grad(set_to_none=True)
        loss.backward()
        optim.step()
    return float(loss.detach())


def greedy_accuracy(model, tokenizer, problems: Sequence[Problem], max_new_tokens: int) -> float:
    """Share of problems answered exactly (the sum, then EOS) by greedy decoding, in one batch."""
    # lazy: torch (grpolab.local.score imports this module on the driver; only the job loads them)
    import torch

    enc = tokenizer(
        [p.prompt for p in problems], return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False
    )
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=False,
            max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    if was_training:
        model.train()
    texts = tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=False)
    hits = sum(is_correct(*split_completion(t), p.answer) for t, p in zip(texts, problems))
    return hits / len(problems)


def train_dataset(train: Sequence[Problem]):
    # lazy: datasets (grpolab.local.score imports this module on the driver; only the job loads them)
    from datasets import Dataset

    return Dataset.from_dict(
        {
            "prompt": [p.prompt for p in train],
            "answer": [p.answer for p in train],
            "data_source": [p.data_source for p in train],
            "extra_info": [json.dumps(p.extra_info) for p in train],  # JSON: rows' extra_info need not share keys
        }
    )


def make_callback(
    writer: M.JsonlWriter | None,
    settings: TinySettings,
    evaluate: Callable[[], float],
    reward: ArithReward,
    echo: Callable[[str], None] = print,
    reference: Path | None = None,
    resumed: bool = False,
):
    """A TRL callback: one verl-named metrics line and one progress line per GRPO step, validation on schedule,
    and each checkpoint TRL saves published in verl's layout (grpolab.local.checkpoint) against `reference`."""
    # lazy: transformers (grpolab.local.score imports this module on the driver; only the job loads them)
    from transformers import TrainerCallback

    ups = settings.updates_per_step
    total = settings.total_steps

    class VerlMetrics(TrainerCallback):
        def __init__(self) -> None:
            self.pending: list[dict[str, Any]] = []
            self.val: float | None = None
            self.val_time = 0.0
            self.last_val: float | None = None
            # TRL's token count is cumulative and restored with a checkpoint: a resumed run's first step has no delta
            self.last_tokens: float | None = None if resumed else 0.0
            self.logged_at = time.perf_counter()
            self.started = time.perf_counter()
            self.stopped_early = False
            self.own_s = 0.0  # time spent in this callback, validation excluded: our per-step overhead
            self.val_total_s = 0.0
            self.val_time_now = 0.0  # validation run in the current on_step_end, kept out of own_s

        def on_step_end(self, args, state, control, **kwargs):
            t_in = time.perf_counter()
            try:
                return self._step_end(state, control)
            finally:
                self.own_s += time.perf_counter() - t_in - self.val_time_now
                self.val_time_now = 0.0

        def _step_end(self, state, control):
            if state.global_step % ups:
                return control
            step = state.global_step // ups
            limit = settings.max_train_seconds
            if limit and time.perf_counter() - self.started > limit and step < total:
                control.should_training_stop = True
                self.stopped_early = True
            last = step >= total or control.should_training_stop
            if last or (settings.test_freq > 0 and step % settings.test_freq == 0):
                t0 = time.perf_counter()
                self.val = evaluate()
                self.val_time = self.val_time_now = time.perf_counter() - t0
                self.val_total_s += self.val_time
            return control

        def on_log(self, args, state, control, logs=None, **kwargs):
            t_in = time.perf_counter()
            try:
                return self._log(state, control, logs)
            finally:
                self.own_s += time.perf_counter() - t_in

        def _log(self, state, control, logs):
            if not logs or "train_runtime" in logs:  # the end-of-training summary is not a step
                return control
            self.pending.append(dict(logs))
            if state.global_step % ups:
                return control
            step = state.global_step // ups
            data = _mean_logs([M.to_verl(entry) for entry in self.pending])
            tokens = float(self.pending[-1].get("num_tokens", 0.0) or 0.0)
            self.pending.clear()
            if reward.last_scores:
                data[M.SCORE_MAX] = max(reward.last_scores)
                data[M.SCORE_MIN] = min(reward.last_scores)
            step_time = data.get("timing_s/step")
            if step_time and tokens and self.last_tokens is not None:
                data[M.TOTAL_TOKENS] = tokens - self.last_tokens
                data[M.THROUGHPUT] = (tokens - self.last_tokens) / step_time
            self.last_tokens = tokens
            data[M.MAX_MEMORY] = M.max_rss_gb()
            if self.val is not None:
                data[M.VAL_ACC] = self.val
                data[M.TESTING_TIME] = self.val_time
                self.last_val, self.val = self.val, None
            if writer is not None:
                writer.write(step, data)
            line = f"step {step}/{total} reward={data.get('critic/score/mean', float('nan')):.3f}"
            if M.VAL_ACC in data:
                line += f" val_acc={data[M.VAL_ACC]:.3f}"
            if step_time:
                line += f" s/step={step_time:.3f}"
            echo(line)
            self.logged_at = time.perf_counter()  # TRL saves right after it logs: the save's clock starts here
            return control

        def on_save(self, args, state, control, **kwargs):
            # TRL has written OUTPUT_DIR/checkpoint-<update> completely: publish it as global_step_<step>
            t_in = time.perf_counter()
            seconds = t_in - self.logged_at
            step = state.global_step // ups
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if reference is None or not folder.is_dir():
                return control
            published = C.publish(folder, step, seconds, reference)
            size = C.read_marker(published).get("bytes", 0)
            echo(f"checkpoint: step {step} saved to {published} in {seconds:.2f}s ({size / 1e6:.1f} MB)")
            self.own_s += time.perf_counter() - t_in  # publishing is ours; TRL's own save is not
            return control

    return VerlMetrics()


def _mean_logs(entries: list[dict[str, float]]) -> dict[str, float]:
    """Average the entries of several TRL log lines (several optimizer updates in one GRPO step)."""
    values = {k: [e[k] for e in entries if k in e] for k in dict.fromkeys(k for e in entries for k in e)}
    return {k: sum(v) if k == "timing_s/step" else sum(v) / len(v) for k, v in values.items()}


def load_reward(function: str | None):
    """The recipe's reward.function (`path.py:name`), loaded from its file as verl loads it; None for None."""
    if not function:
        return None

    written, name = split_function(function)
    path = locate(written)
    spec = importlib.util.spec_from_file_location("grpolab_recipe_reward", path)
    if spec is None or not path.is_file():
        raise ValueError(f"reward.function {function!r}: no file {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def prepare(
    settings: TinySettings, run_dir: Path, train: list[Problem], val: list[Problem], echo: Callable[[str], None] = print
) -> tuple[Any, Any, Path, float]:
    """Build/load the tiny model, warm it up, save it to RUN_DIR/warmup; the pieces GRPO needs: (model, tokenizer,
    RUN_DIR/warmup, the warm-up's seconds)."""
    # lazy: torch, transformers (grpolab.local.score imports this module on the driver; only the job loads them)
    import torch
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, set_seed

    set_seed(settings.seed)
    base = ensure_tiny(model_spec(settings))
    model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(base, local_files_only=True)
    check_lengths(settings, tokenizer, [*train, *val])
    t0 = time.perf_counter()
    loss = warmup(model, tokenizer, settings, train)
    warmup_s = time.perf_counter() - t0
    # GRPOTrainer builds its KL reference model from the policy's config path, so the warmed-up weights
    # must be on disk and the policy loaded from there: the reference is then the warmed-up model.
    warm_dir = run_dir / "warmup"
    model.save_pretrained(warm_dir)
    tokenizer.save_pretrained(warm_dir)
    model = AutoModelForCausalLM.from_pretrained(warm_dir, local_files_only=True, dtype=torch.float32)
    echo(f"warm-up: {settings.warmup_steps} steps in {warmup_s:.1f}s, loss {loss:.3f}")
    return model, tokenizer, warm_dir, warmup_s


def prepare_resumed(
    settings: TinySettings, run_dir: Path, checkpoint: Path, rows: list[Problem], echo: Callable[[str], None] = print
) -> tuple[Any, Any, Path, float]:
    """The pieces GRPO needs to continue `checkpoint`: its KL reference copied to RUN_DIR/warmup (so this run's
    own checkpoints name a reference of their own), the policy loaded from there; the trainer then restores the
    checkpoint's weights, optimizer, scheduler, RNG and data position (`rows`: every train and val problem, whose
    lengths are checked). No warm-up: the reference is the parent's."""
    # lazy: torch, transformers (grpolab.local.score imports this module on the driver; only the job loads them)
    import torch
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    source = C.reference_dir(checkpoint)
    if not (source / "config.json").is_file():
        raise ValueError(f"the reference model of {checkpoint} is gone ({source}): the run cannot be continued")
    warm_dir = run_dir / "warmup"
    if source.resolve() != warm_dir.resolve():
        shutil.copytree(source, warm_dir, dirs_exist_ok=True)
    model = AutoModelForCausalLM.from_pretrained(warm_dir, local_files_only=True, dtype=torch.float32)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(warm_dir, local_files_only=True)
    check_lengths(settings, tokenizer, rows)
    echo(f"resuming from {checkpoint} (step {C.read_marker(checkpoint).get('step')}); KL reference {source}")
    return model, tokenizer, warm_dir, 0.0


def checkpoint_root(settings: TinySettings, run_dir: Path) -> Path:
    """Where checkpoints go: trainer.ckpt_dir, else RUN_DIR/checkpoint."""
    return Path(settings.ckpt_dir).expanduser() if settings.ckpt_dir else run_folder.checkpoint_dir(run_dir)


def resume_from(settings: TinySettings, run_dir: Path) -> Path | None:
    """The checkpoint this run continues (verl's resume_mode semantics), or None to start from scratch."""
    if settings.resume_mode == "resume_path":
        folder = Path(str(settings.resume_path)).expanduser().resolve()
        missing = C.missing_files(folder)
        if missing:
            raise ValueError(
                f"trainer.resume_path={settings.resume_path!r} is not a complete checkpoint (lacks {', '.join(missing)})"
            )
        return folder
    if settings.resume_mode == "auto":
        root = checkpoint_root(settings, run_dir)
        try:
            step = int((root / C.TRACKER).read_text().strip())
        except (OSError, ValueError):
            return None
        folder = C.step_dir(root, step)
        return folder if not C.missing_files(folder) else None
    return None


def run(
    settings: TinySettings,
    run_dir: str | os.PathLike[str],
    echo: Callable[[str], None] = print,
    write_metrics: bool = True,
) -> dict[str, Any]:
    """One local run: warm-up, validation at step 0, GRPO with per-step metrics and checkpoints; or the rest of an
    earlier run from its checkpoint (trainer.resume_mode), the step numbers going on from there.

    Returns a summary: val_start, val_end, reward_first, reward_last, steps, grpo_s, s_per_step, ...
    """
    run_dir = Path(run_dir)
    resume = resume_from(settings, run_dir)  # before the heavy imports: a bad resume_path fails in a blink

    # lazy: transformers, trl (grpolab.local.score imports this module on the driver; only the job loads them)
    from transformers import set_seed
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOConfig, GRPOTrainer

    quiet_transformers()
    run_dir.mkdir(parents=True, exist_ok=True)
    check_settings(settings)
    train, val = load_data(settings)
    set_threads(settings)
    model, tokenizer, warm_dir, warmup_s = (
        prepare(settings, run_dir, train, val, echo)
        if resume is None
        else prepare_resumed(settings, run_dir, resume, [*train, *val], echo)
    )
    max_new = settings.max_response_length
    ckpt_root = checkpoint_root(settings, run_dir)

    def evaluate() -> float:
        return greedy_accuracy(model, tokenizer, val, max_new)

    if settings.mode != "sync":  # colocate_async: grpolab.local.async_loop (TRL's async trainer needs CUDA)
        reward = ArithReward(tokenizer, load_reward(settings.reward_function))
        return run_asynchronously(
            settings, run_dir, model, tokenizer, warm_dir, train, evaluate, echo, write_metrics, reward
        )
    writer = M.JsonlWriter(M.metrics_path(run_dir)) if write_metrics else None
    try:
        val_start = None
        if resume is None:  # a resumed run goes on from its checkpoint's step: no second step-0 line
            t0 = time.perf_counter()
            val_start = evaluate()
            if writer is not None:
                writer.write(0, {M.VAL_ACC: val_start, M.TESTING_TIME: time.perf_counter() - t0})
            echo(f"step 0/{settings.total_steps} val_acc={val_start:.3f}")
        reward = ArithReward(tokenizer, load_reward(settings.reward_function))
        callback = make_callback(
            writer, settings, evaluate, reward, echo, reference=warm_dir, resumed=resume is not None
        )
        set_seed(settings.seed)
        config = GRPOConfig(**grpo_config_kwargs(settings, str(ckpt_root)))
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[reward],
            args=config,
            train_dataset=train_dataset(
                train_schedule(train, settings.total_steps * settings.train_batch_size, settings.seed)
            ),
            processing_class=tokenizer,
            callbacks=[callback],
        )
        # transformers' log printer would dump every TRL log dict: our progress line replaces it
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        callback.started = time.perf_counter()
        start = time.perf_counter()
        # the checkpoint restores weights, optimizer, scheduler, RNG and the data position (transformers' Trainer)
        trainer.train(resume_from_checkpoint=str(resume) if resume is not None else None)
        grpo_s = time.perf_counter() - start
    finally:
        if writer is not None:
            writer.close()
    steps = trainer.state.global_step // settings.updates_per_step
    first = 0 if resume is None else int(C.read_marker(resume).get("step", 0))
    rewards = [e["reward"] for e in trainer.state.log_history if "reward" in e]
    summary = dict(
        val_start=val_start,
        val_end=callback.last_val,
        reward_first=rewards[0] if rewards else None,
        reward_last=rewards[-1] if rewards else None,
        rewards=rewards,
        steps=steps,
        resumed_from=first if resume is not None else None,
        grpo_s=grpo_s,
        s_per_step=grpo_s / max(1, steps - first),
        warmup_s=warmup_s,
        stopped_early=callback.stopped_early,
        callback_s=callback.own_s,  # metrics, progress lines, publishing checkpoints: our overhead on top of TRL
        validation_s=callback.val_total_s,
        settings=asdict(settings),
    )
    start_text = f"{val_start:.3f}" if val_start is not None else f"(resumed at step {first})"
    end_text = f"{summary['val_end']:.3f}" if summary["val_end"] is not None else "n/a"
    echo(
        f"done: {steps} steps ({steps - first} in this run) in {grpo_s:.1f}s ({summary['s_per_step']:.3f} s/step), "
        f"val_acc {start_text} -> {end_text}; checkpoints in {ckpt_root}"
    )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grpolab.local.train", description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True, type=Path, help="run directory holding recipe.yaml")
    parser.add_argument("--recipe", type=Path, help="recipe file to read instead of RUN_DIR/recipe.yaml")
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a TinySettings field (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.run_dir, args.recipe, args.sets)
    except Exception as exc:  # noqa: BLE001 - any unusable recipe or --set: say why, exit 2
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    echo = lambda line: print(line, flush=True)  # noqa: E731 - the launcher tails the log
    try:
        run(settings, args.run_dir, echo=echo)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
