"""The CPU trainer's asynchronous mode (schedule.mode colocate_async): generation and training overlap, as in verl's
V1 colocate_async, with the off-policy bound and the metrics verl's V1 trainer logs.

Why our own loop: TRL 1.16 has an asynchronous GRPO trainer (trl.experimental.async_grpo.AsyncGRPOTrainer), but it
runs on CUDA only: it asks torch.cuda for the device's name when it is built, its packed attention is a FlashAttention-3
kernel downloaded from the Hub, and its rollout worker is a vLLM server. So the loop is written here, plainly:
- a generator thread keeps `warmup_batches` batches of groups ahead of the trainer: it samples `rollout.n`
  completions of each prompt with its own copy of the policy (version v), scores them with the recipe's reward and
  queues the group with its sampling log-probs (the behaviour policy's);
- the trainer takes `train_batch_size` groups a step; a group more than `max_off_policy` versions old is dropped
  (strategy drop) or kept (wait); GRPO advantages per group; for each mini-batch the clipped PPO loss against the
  behaviour log-probs (decoupled: the ratio IS the importance weight of the off-policy sample), plus the
  low_var_kl term to the warmed-up reference; then the new weights go to the generator (version v + 1).
Metrics, verl-named (grpolab.local.metrics): the reward, lengths, entropy, KL, grad norm, and the off-policy ones:
training/off_policy/trajectory_staleness/{mean,max}, training/off_policy/evicted_samples, rollout_corr/rollout_is_mean,
rollout_corr/kl (the behaviour-to-policy mismatch), timing_s/gen (the trainer's wait for samples), timing_s/step,
timing_s/update_actor, timing_s/update_weights. One process: the generator and the trainer share the CPU, as
colocate_async's rollout and training share their devices. Checkpoints and resume: not in this mode (check says so).
"""

from __future__ import annotations

import copy
import json
import math
import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from grpolab.local import metrics as M
from grpolab.local.mapping import TinySettings
from grpolab.local.task import ArithReward, Problem

STALENESS_MEAN = "training/off_policy/trajectory_staleness/mean"
STALENESS_MAX = "training/off_policy/trajectory_staleness/max"
EVICTED = "training/off_policy/evicted_samples"
IS_MEAN = "rollout_corr/rollout_is_mean"
MISMATCH_KL = "rollout_corr/kl"


@dataclass
class Group:
    """One prompt's `n` completions as the generator made them: token ids, the behaviour policy's log-probs of each
    completion token, the scores, and the policy version that generated them."""

    prompt_ids: list[int]
    completions: list[list[int]]
    behaviour: list[list[float]]
    scores: list[float]
    version: int


class Generator:
    """The rollout side: a thread with its own copy of the policy, `ahead` batches of groups in its queue."""

    def __init__(self, policy, tokenizer, settings: TinySettings, prompts: Sequence[Problem], reward: ArithReward):
        self.model = copy.deepcopy(policy).eval()
        # its own tokenizer too: a fast tokenizer's padding/truncation state is not thread-safe, and the trainer's
        # validation encodes with the shared one at the same time ("RuntimeError: Already borrowed")
        self.tokenizer = copy.deepcopy(tokenizer)
        self.s, self.prompts, self.reward = settings, list(prompts), reward
        # the warm-up batches wait here while a step trains: samples about warmup_batches versions old
        ahead = max(1, math.ceil(settings.warmup_batches * settings.train_batch_size))
        self.queue: queue.Queue[Group] = queue.Queue(maxsize=ahead)
        self.version, self.lock, self.stopped = 0, threading.Lock(), threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="grpolab-generator", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        while not self.queue.empty():  # a blocked put returns, and the thread sees `stopped`
            self.queue.get_nowait()
        self.thread.join(timeout=30)

    def load(self, policy, version: int) -> None:
        """The trainer's new weights (the weight sync): generation from now on is version `version`."""
        # lazy: torch (only the job loads it)
        import torch

        with self.lock, torch.no_grad():
            for mine, theirs in zip(self.model.parameters(), policy.parameters()):
                mine.copy_(theirs)
            self.version = version

    def _loop(self) -> None:
        try:
            index = 0
            while not self.stopped.is_set():
                group = self._group(self.prompts[index % len(self.prompts)])
                index += 1
                while not self.stopped.is_set():
                    try:
                        self.queue.put(group, timeout=0.2)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:  # noqa: BLE001 - handed to the trainer, which raises it
            self.error = exc

    def _group(self, problem: Problem) -> Group:
        # lazy: torch (only the job loads it)
        import torch

        s, tok = self.s, self.tokenizer
        ids = tok(problem.prompt, add_special_tokens=False).input_ids
        with self.lock, torch.no_grad():
            version = self.version
            out = self.model.generate(
                torch.tensor([ids] * s.n),
                do_sample=True,
                temperature=s.temperature,
                top_p=s.top_p,
                top_k=max(0, s.top_k),
                max_new_tokens=s.max_response_length,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
                output_scores=True,
                return_dict_in_generate=True,
            )
        logp = torch.stack(out.scores, 1).float().log_softmax(-1)  # the distribution sampled from, per new token
        completions, behaviour = [], []
        for row in range(s.n):
            tokens = out.sequences[row, len(ids) :].tolist()
            if tok.eos_token_id in tokens:
                tokens = tokens[: tokens.index(tok.eos_token_id) + 1]
            tokens = tokens or [tok.eos_token_id]
            completions.append(tokens)
            behaviour.append([logp[row, t, token].item() for t, token in enumerate(tokens)])
        scores = self.reward(
            completion_ids=completions,
            answer=[problem.answer] * s.n,
            data_source=[problem.data_source] * s.n,
            extra_info=[_json(problem.extra_info)] * s.n,
        )
        return Group(ids, completions, behaviour, list(scores), version)


def _json(value: Any) -> str:
    return json.dumps(value)


def _token_logps(model, groups: list[Group], pad: int):
    """(log-probs of each completion token under `model`, the entropy per token, the completion mask), padded."""
    # lazy: torch (only the job loads it)
    import torch

    rows = [(g.prompt_ids, c) for g in groups for c in g.completions]
    width = max(len(p) + len(c) for p, c in rows)
    ids = torch.full((len(rows), width), pad)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width - 1))
    for i, (p, c) in enumerate(rows):
        ids[i, : len(p) + len(c)] = torch.tensor(p + c)
        attention[i, : len(p) + len(c)] = 1
        mask[i, len(p) - 1 : len(p) + len(c) - 1] = 1  # position t predicts token t + 1: the completion's
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    logp_all = logits.log_softmax(-1)
    logp = logp_all.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy, mask


def _behaviour(groups: list[Group], mask):
    # lazy: torch (only the job loads it)
    import torch

    out = torch.zeros_like(mask)
    rows = [(g.prompt_ids, b) for g in groups for b in g.behaviour]
    for i, (p, b) in enumerate(rows):
        out[i, len(p) - 1 : len(p) - 1 + len(b)] = torch.tensor(b)
    return out


def _advantages(groups: list[Group]):
    # lazy: torch (only the job loads it)
    import torch

    values = []
    for g in groups:
        scores = torch.tensor(g.scores)
        values.append((scores - scores.mean()) / (scores.std(unbiased=False) + 1e-6))
    return torch.cat(values)


def _aggregate(per_token, mask, mode: str):
    """verl's loss aggregation over the masked tokens (token-mean; else the sequence mean of token means)."""
    if mode == "token-mean":
        return (per_token * mask).sum() / mask.sum().clamp(min=1)
    return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)).mean()


def run_async(
    settings: TinySettings,
    policy,
    reference,
    tokenizer,
    train: Sequence[Problem],
    reward: ArithReward,
    writer: M.JsonlWriter | None,
    evaluate: Callable[[], float],
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train `policy` asynchronously for settings.total_steps steps; returns the rewards and validation figures."""
    # lazy: torch (only the job loads it)
    import torch

    s = settings
    rng = random.Random(s.seed)
    order = list(train)
    rng.shuffle(order)
    optim = torch.optim.AdamW(policy.parameters(), lr=s.lr, weight_decay=0.0)
    generator = Generator(policy, tokenizer, s, order, reward)
    generator.start()
    pad = tokenizer.pad_token_id
    mini = max(1, s.ppo_mini_batch_size)
    rewards: list[float] = []
    last_val = None
    started = time.perf_counter()
    try:
        for step in range(1, s.total_steps + 1):
            t_step = time.perf_counter()
            groups, evicted, waited = [], 0, 0.0
            while len(groups) < s.train_batch_size:
                t0 = time.perf_counter()
                group = generator.queue.get()
                waited += time.perf_counter() - t0
                if generator.error is not None:
                    raise RuntimeError(f"the generator thread failed: {generator.error!r}") from generator.error
                lag = (step - 1) - group.version
                if s.off_policy_strategy == "drop" and s.max_off_policy is not None and lag >= s.max_off_policy:
                    evicted += 1
                    continue
                groups.append(group)
            lags = [float((step - 1) - g.version) for g in groups]
            t_update = time.perf_counter()
            logs = _update(policy, reference, optim, groups, s, pad, mini)
            update_s = time.perf_counter() - t_update
            t_sync = time.perf_counter()
            generator.load(policy, step)
            sync_s = time.perf_counter() - t_sync
            scores = [x for g in groups for x in g.scores]
            lengths = [len(c) for g in groups for c in g.completions]
            data = {
                "critic/score/mean": sum(scores) / len(scores),
                M.SCORE_MAX: max(scores),
                M.SCORE_MIN: min(scores),
                "response_length/mean": sum(lengths) / len(lengths),
                "response_length/max": float(max(lengths)),
                "response_length/clip_ratio": sum(n >= s.max_response_length for n in lengths) / len(lengths),
                **logs,
                STALENESS_MEAN: sum(lags) / len(lags),
                STALENESS_MAX: max(lags),
                EVICTED: float(evicted * s.n),
                "timing_s/gen": waited,
                "timing_s/update_actor": update_s,
                "timing_s/update_weights": sync_s,
            }
            last = step == s.total_steps or (
                s.max_train_seconds and time.perf_counter() - started > s.max_train_seconds
            )
            if last or (s.test_freq > 0 and step % s.test_freq == 0):
                t0 = time.perf_counter()
                last_val = data[M.VAL_ACC] = evaluate()
                data[M.TESTING_TIME] = time.perf_counter() - t0
            data["timing_s/step"] = time.perf_counter() - t_step
            tokens = sum(len(g.prompt_ids) * len(g.completions) + sum(map(len, g.completions)) for g in groups)
            data[M.TOTAL_TOKENS] = float(tokens)
            data[M.THROUGHPUT] = tokens / data["timing_s/step"]
            data[M.MAX_MEMORY] = M.max_rss_gb()
            rewards.append(data["critic/score/mean"])
            if writer is not None:
                writer.write(step, data)
            line = f"step {step}/{s.total_steps} reward={data['critic/score/mean']:.3f}"
            line += f" staleness={data[STALENESS_MEAN]:.2f} is_ratio={data[IS_MEAN]:.3f}"
            if M.VAL_ACC in data:
                line += f" val_acc={data[M.VAL_ACC]:.3f}"
            echo(line + f" s/step={data['timing_s/step']:.3f}")
            if last:
                break
    finally:
        generator.stop()
    return {"rewards": rewards, "val_end": last_val, "steps": len(rewards)}


def _update(policy, reference, optim, groups: list[Group], s: TinySettings, pad: int, mini: int) -> dict[str, float]:
    """One step's updates, a mini-batch of groups at a time: the clipped loss against the behaviour log-probs (the
    ratio is the off-policy sample's importance weight), dual clip, low_var_kl to the reference, entropy bonus."""
    # lazy: torch (only the job loads it)
    import torch

    policy.train()
    sums: dict[str, float] = {}
    batches = [groups[i : i + mini] for i in range(0, len(groups), mini)]
    for batch in batches:
        logp, entropy, mask = _token_logps(policy, batch, pad)
        old = _behaviour(batch, mask)
        adv = _advantages(batch).unsqueeze(-1)
        log_ratio = (logp - old) * mask
        ratio = log_ratio.exp()
        clipped = ratio.clamp(1 - s.clip_ratio_low, 1 + s.clip_ratio_high)
        pg = torch.maximum(-adv * ratio, -adv * clipped)
        pg = torch.where(adv < 0, torch.minimum(pg, -adv * s.clip_ratio_c), pg)  # verl's dual clip
        loss = _aggregate(pg, mask, s.loss_agg_mode)
        kl = torch.zeros(())
        if s.use_kl_loss and s.kl_loss_coef:
            with torch.no_grad():
                ref, _, _ = _token_logps(reference, batch, pad)
            delta = (ref - logp).clamp(-20, 20)
            kl = _aggregate((delta.exp() - delta - 1).clamp(max=10), mask, s.loss_agg_mode)  # low_var_kl (k3)
            loss = loss + s.kl_loss_coef * kl
        ent = _aggregate(entropy, mask, s.loss_agg_mode)
        loss = loss - s.entropy_coeff * ent
        optim.zero_grad(set_to_none=True)
        loss.backward()
        grad = torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optim.step()
        with torch.no_grad():
            tokens = mask.sum().clamp(min=1)
            values = {
                "actor/pg_loss": float(loss),
                "actor/kl_loss": float(kl),
                "actor/entropy": float(ent),
                "actor/grad_norm": float(grad),
                "actor/pg_clipfrac": float((((ratio - clipped).abs() > 1e-6).float() * mask).sum() / tokens),
                "actor/lr": s.lr,
                IS_MEAN: float((ratio * mask).sum() / tokens),
                MISMATCH_KL: float((-log_ratio * mask).sum() / tokens),  # KL(behaviour || policy) estimate (k1)
            }
        for key, value in values.items():
            sums[key] = sums.get(key, 0.0) + value / len(batches)
    policy.eval()
    return sums


def run_asynchronously(
    settings: TinySettings,
    run_dir: Path,
    model,
    tokenizer,
    warm_dir: Path,
    train: list[Problem],
    evaluate: Callable[[], float],
    echo: Callable[[str], None],
    write_metrics: bool,
    reward: ArithReward,
) -> dict[str, Any]:
    """schedule.mode colocate_async: validation at step 0, then grpolab.local.async_loop; its summary."""
    # lazy: torch, transformers (grpolab.local.score imports this module on the driver; only the job loads them)
    import torch
    from transformers import AutoModelForCausalLM

    reference = AutoModelForCausalLM.from_pretrained(warm_dir, local_files_only=True, dtype=torch.float32).eval()
    writer = M.JsonlWriter(M.metrics_path(run_dir)) if write_metrics else None
    try:
        t0 = time.perf_counter()
        val_start = evaluate()
        if writer is not None:
            writer.write(0, {M.VAL_ACC: val_start, M.TESTING_TIME: time.perf_counter() - t0})
        echo(f"step 0/{settings.total_steps} val_acc={val_start:.3f} (asynchronous: {settings.mode})")
        start = time.perf_counter()
        out = run_async(settings, model, reference, tokenizer, train, reward, writer, evaluate, echo)
        grpo_s = time.perf_counter() - start
    finally:
        if writer is not None:
            writer.close()
    rewards = out["rewards"]
    echo(
        f"done: {out['steps']} steps in {grpo_s:.1f}s ({grpo_s / max(1, out['steps']):.3f} s/step), asynchronous, "
        f"val_acc {val_start:.3f} -> {out['val_end'] if out['val_end'] is None else format(out['val_end'], '.3f')}"
    )
    return dict(
        val_start=val_start,
        val_end=out["val_end"],
        reward_first=rewards[0] if rewards else None,
        reward_last=rewards[-1] if rewards else None,
        rewards=rewards,
        steps=out["steps"],
        resumed_from=None,
        grpo_s=grpo_s,
        s_per_step=grpo_s / max(1, out["steps"]),
        stopped_early=out["steps"] < settings.total_steps,
        settings=asdict(settings),
    )
