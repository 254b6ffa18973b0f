"""Engines: the combination of trainer, rollout engine and device is one the engines support (FSDP shards data
only, TRL is the in-process CPU/GPU trainer, verl has no CPU path, router replay is for MoE), and train.router_replay
agrees with the rollout's routing replay (learned from the field).
"""

from __future__ import annotations

from grpolab.local.mapping import unsupported
from grpolab.problems import closest
from grpolab.recipe.engines import ENGINES, LOCAL_ROLLOUTS, by_model_engine, unknown_layout
from grpolab.rules.checks import Checks
from grpolab.rules.registry import engine_layout_rules, rollout_engine_rules
from grpolab.verl.fieldmap import checked_facts, verl_key


def engines(c: Checks) -> None:
    r, t, ro, engine = c.r, c.r.train, c.r.rollout, c.r.engine
    if not engine.verl:
        if ro.engine not in engine.rollouts:
            c.add(
                "engine-support",
                "rollout.engine",
                ro.engine,
                "train.engine trl generates with the HF model in-process",
                f"set rollout.engine: {engine.rollouts[0]}",
            )
        if r.cluster.device == "npu":
            c.add(
                "engine-support",
                "cluster.device",
                "npu",
                "the TRL engine is the CPU/GPU embedded default; NPU runs go through verl",
                "use train.engine megatron or fsdp on NPUs",
            )
        if r.world_size != 1:
            c.add(
                "engine-support",
                "cluster.nnodes",
                r.cluster.nnodes,
                f"the TRL engine runs in one process; the recipe asks for {r.world_size} devices",
                "set cluster.nnodes and cluster.devices_per_node to 1",
            )
        for name in ("tp", "pp", "cp", "ep", "etp", "vpp", "ulysses_sp"):
            if getattr(t, name) != 1:
                c.add(
                    "engine-support",
                    f"train.{name}",
                    getattr(t, name),
                    "the TRL engine has no model parallelism",
                    f"set train.{name} to 1",
                )
        if r.model.path:  # the TRL engine builds its tiny model in code
            c.add(
                "engine-support",
                "model.path",
                r.model.path,
                "train.engine trl builds its tiny model in code and ignores model.path",
                "drop model.path, or use train.engine megatron or fsdp to train that model",
                severity="warning",
            )
        if r.local is None:  # the trainer's own settings come from params/engines/trl.yaml, not base.yaml
            c.add(
                "engine-support",
                "local",
                None,
                "train.engine trl needs the CPU trainer's settings (the `local:` section: the tiny model and its warm-up)",
                "add engines/trl to the recipe's defaults, e.g. `defaults: [base, hardware/cpu, engines/trl]`",
            )
            return

        for key, value, reason in unsupported(r):
            c.add("engine-support", key, value, reason, f"change {key} or use a verl engine")
        return
    if r.local is not None:
        c.add(
            "engine-support",
            "local",
            "{...}",
            f"the `local:` section is read by train.engine trl only; {t.engine} ignores it",
            "drop engines/trl from the recipe's defaults (and any `local:` keys)",
            severity="warning",
        )
    if ro.engine not in engine.rollouts:
        rollout_registered(c)
    if r.cluster.device == "cpu":
        c.add(
            "engine-support",
            "cluster.device",
            "cpu",
            f"verl has no CPU path (with no accelerator it silently picks cuda); {t.engine} needs NPUs or GPUs",
            "use a hardware profile with npu or cuda, or train.engine: trl for CPU",
        )
    registered(c)
    if r.train.router_replay != "disabled" and c.f is not None and not c.f.num_experts:
        c.add(
            "engine-support",
            "train.router_replay",
            r.train.router_replay,
            "router replay applies to MoE models only",
            "set train.router_replay: disabled",
            severity="warning",
        )


def router_replay(c: Checks) -> None:
    """R2 / R3 must agree with rollout routing replay."""
    r, f = c.r, c.f
    mode = r.train.router_replay
    rr = bool(r.override(verl_key("rollout.routing_replay"), r.rollout.routing_replay))
    if mode == "R2" and rr:
        c.add(
            "router-replay",
            "rollout.routing_replay",
            True,
            "train.router_replay R2 records routing in the trainer's own log-prob pass; with rollout routing replay "
            "on as well verl raises `Detected conflicting router replay configuration` at step 1",
            "set rollout.routing_replay: false (R2), or train.router_replay: R3",
        )
    elif mode == "R3" and not rr:
        c.add(
            "router-replay",
            "rollout.routing_replay",
            False,
            "train.router_replay R3 replays the routing recorded by the rollout engine, but rollout routing replay "
            "is off: no routed experts reach the trainer",
            "set rollout.routing_replay: true, or train.router_replay: R2",
        )
    elif mode == "disabled" and rr:
        c.add(
            "router-replay",
            "rollout.routing_replay",
            True,
            "the rollout records MoE routing but train.router_replay is disabled: the routes are never replayed",
            "set train.router_replay: R3, or rollout.routing_replay: false",
            severity="warning",
        )
    if rr and f is not None and not f.num_experts:
        c.add(
            "router-replay",
            "rollout.routing_replay",
            True,
            f"{f.name} is a dense model: there is no routing to replay",
            "set rollout.routing_replay: false",
            severity="warning",
        )


def registered(c: Checks) -> None:
    """The checked verl has the training engine asked (one of its model_engines, read from its own config by
    grpolab.verl.versions) and, for FSDP, the strategy asked (one its FSDP engine config accepts)."""
    r, engine = c.r, c.r.engine
    facts = checked_facts()
    groups = ((facts or {}).get("engines") or {}).get("model_engines") or {}
    if not groups:  # no verl to ask (or a table row without engines): composing the launch says the rest
        return
    version = facts.get("version") or "checked"
    if engine.model_engine not in groups:
        names = [by_model_engine(g).name for g in groups]
        near = closest(r.train.engine, names)
        c.add(
            "engine-support",
            "train.engine",
            r.train.engine,
            f"verl {version} has no training engine {r.train.engine!r} (model_engine={engine.model_engine}); it "
            f"has {', '.join(names)}",
            (f"did you mean {near!r}? " if near else "") + f"set train.engine to one of {', '.join(names)}",
        )
        return
    accepted = groups[engine.model_engine].get("strategies") or []
    if engine.strategies and accepted and r.train.fsdp_strategy not in accepted:
        near = closest(r.train.fsdp_strategy, accepted)
        c.add(
            "engine-support",
            "train.fsdp_strategy",
            r.train.fsdp_strategy,
            f"verl {version}'s {engine.name} engine accepts actor.strategy {', '.join(accepted)}, not "
            f"{r.train.fsdp_strategy!r} (it would fail at start: strategy not supported)",
            (f"did you mean {near!r}? " if near else "") + f"set train.fsdp_strategy to one of {', '.join(accepted)}",
        )


def rollout_registered(c: Checks) -> None:
    """A rollout.engine GRPO Lab's rules do not know: accepted where the checked verl registers it (its rollout
    registry, read by grpolab.verl.versions) or where the launch loads a plugin that may (env
    VERL_USE_EXTERNAL_MODULES, imported by verl at start), with a warning naming the rules that cannot reason about
    it; refused otherwise, with the rollouts verl has."""
    r, ro = c.r, c.r.rollout
    facts = checked_facts() or {}
    rollouts = facts.get("rollouts") or {}
    registered = rollouts.get("registered") or {}
    version = facts.get("version") or "checked"
    skipped = (
        f"the rules that read a rollout engine's own settings ({', '.join(rollout_engine_rules())}) know "
        f"{', '.join(c.r.engine.rollouts)} only and skip it; the rest ran, reading its layout and memory as vLLM's"
    )
    plugin = r.env.get("VERL_USE_EXTERNAL_MODULES")
    if ro.engine in registered:
        c.add(
            "engine-support",
            "rollout.engine",
            ro.engine,
            f"verl {version} registers rollout {ro.engine!r} ({registered[ro.engine]}); {skipped}",
            "check the rollout engine's settings by hand against its docs",
            severity="warning",
        )
    elif plugin and ro.engine not in LOCAL_ROLLOUTS:
        c.add(
            "engine-support",
            "rollout.engine",
            ro.engine,
            f"verl {version} registers no rollout {ro.engine!r} itself (it has {', '.join(registered) or '?'}); the "
            f"launch imports env VERL_USE_EXTERNAL_MODULES={plugin} at start ({rollouts.get('external') or 'verl'}), "
            f"a plugin that must register it, which GRPO Lab cannot see; {skipped}",
            f"make sure {plugin} is importable on every node (it registers the rollout), and check the rollout "
            "engine's settings by hand",
            severity="warning",
        )
    elif registered or ro.engine in LOCAL_ROLLOUTS:
        names = list(registered) or list(c.r.engine.rollouts)
        near, local = closest(ro.engine, names), ro.engine in LOCAL_ROLLOUTS
        c.add(
            "engine-support",
            "rollout.engine",
            ro.engine,
            f"verl {version} registers the rollouts {', '.join(names)}, not {ro.engine!r}"
            + (f"; {ro.engine} generation is for train.engine {_trainers_of(ro.engine)} only" if local else "")
            + " (a plugin can register another: env VERL_USE_EXTERNAL_MODULES names its module)",
            (f"did you mean {near!r}? " if near else "") + f"set rollout.engine to one of {', '.join(names)}",
        )


def engine_layout(c: Checks) -> bool:
    """One warning when GRPO Lab's layout rules cannot reason about the training engine: which rules were skipped and
    why. True when they were."""
    why = unknown_layout(c.r.train)
    groups = ((checked_facts() or {}).get("engines") or {}).get("model_engines") or {}
    if why is None or not c.r.engine.verl or (groups and c.r.engine.model_engine not in groups):
        return why is not None  # an engine the checked verl lacks: rule engine-support says so
    skipped = engine_layout_rules()
    key = "train.engine" if not c.r.engine.layout_known else "train.fsdp_strategy"
    c.add(
        "engine-layout",
        key,
        c.r.train.engine if key == "train.engine" else c.r.train.fsdp_strategy,
        f"{why}: {len(skipped)} checks were skipped ({', '.join(skipped)}); the rest ran (rollout layout, "
        "batch against the mini batch, lengths, env, reward, data, the launch composed with verl's config)",
        "check the layout settings by hand against verl's docs for this engine (its world size, sequence and expert "
        "parallel sizes, memory); train.engine megatron or fsdp (fsdp_strategy fsdp or fsdp2) has them checked",
    )
    return True


def _trainers_of(rollout: str) -> str:
    """The train.engine values that generate with `rollout` (the engine declarations say)."""
    return ", ".join(e.name for e in ENGINES.values() if rollout in e.rollouts)
