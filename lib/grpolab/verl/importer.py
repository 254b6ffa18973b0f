"""`grpolab import`: an existing verl launch script -> a recipe that renders the same launch.

Three steps. `record()` runs the script with bash in a scratch directory, with the launchers (python, python3,
torchrun, uv, ray) and the device tools (npu-smi, nvidia-smi) replaced by a recorder on PATH, and with commands
that change the machine (rm, cp, mv, kill, pip, git, wget, ...) made no-ops by bash functions; HOME points into
the scratch directory, `mkdir` creates only inside it, a `source` of a missing file is skipped. Nothing starts:
the recorder writes down the argv and the exported env of each call and exits 0. `to_recipe()` maps the verl
overrides of the launch onto recipe fields (the rest goes to `verl_overrides`), and then, by composing both
launches against the installed verl's config, sets every field where base.yaml's default differs from what the
script runs with; what still differs is reported. `recipe_yaml()` writes the recipe with a comment on each value
that came from the script.

Why one file of this size: recording a script and mapping its launch are one round trip, tested as one (`import`
then `render` gives the script back).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grpolab.paths import params_dir
from grpolab.problems import InputError
from grpolab.recipe.dotted import get_dotted, has_dotted, set_dotted
from grpolab.verl.render import FIELD_OF

ARR = "actor_rollout_ref."
LAUNCHERS = ("python", "python3", "python3.10", "python3.11", "python3.12", "torchrun", "uv", "ray")
DEVICE_TOOLS = ("npu-smi", "nvidia-smi")
NO_OPS = (
    "rm",
    "cp",
    "mv",
    "ln",
    "touch",
    "chmod",
    "chown",
    "kill",
    "pkill",
    "killall",
    "sleep",
    "wget",
    "curl",
    "git",
    "ssh",
    "scp",
    "rsync",
    "pip",
    "pip3",
    "huggingface-cli",
    "hf",
    "modelscope",
    "tar",
    "sudo",
    "docker",
    "systemctl",
    "ulimit",
)
TIMEOUT_S = 60
# env the shell itself sets, or that only points into the scratch directory: never part of a recipe
SHELL_ENV = {"PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV", "TMPDIR", "LINES", "COLUMNS"}

RECORDER = r"""
import json, os, sys, time
tool, argv = sys.argv[1], sys.argv[2:]
calls = os.environ["GRPOLAB_IMPORT_CALLS"]
name = os.path.join(calls, "%d-%s.json" % (time.time_ns(), os.getpid()))
env = {k: v for k, v in os.environ.items() if not k.startswith("GRPOLAB_IMPORT_")}
with open(name, "w") as f:
    json.dump({"tool": tool, "argv": argv, "env": env}, f)
device = os.environ.get("GRPOLAB_IMPORT_DEVICE", "npu")
if tool == "npu-smi":
    sys.exit(0 if device == "npu" else 1)
if tool == "nvidia-smi":
    sys.exit(0 if device == "cuda" else 1)
sys.exit(0)
"""

PRELUDE = r"""
source() { if [ -e "$1" ]; then builtin source "$@"; else echo "grpolab import: skipped a missing file: $1" >&2; fi; }
.() { source "$@"; }
cd() { builtin cd "$@" 2>/dev/null || return 0; }
mkdir() {
  local a
  for a in "$@"; do
    case "$a" in
      -*) ;;
      /*) case "$a" in "$GRPOLAB_IMPORT_ROOT"/*) command mkdir -p "$a" ;; esac ;;
      *) command mkdir -p "$a" ;;
    esac
  done
  return 0
}
tee() { cat; }
nohup() { "$@"; }
"""


class ImportFailed(InputError):
    """The script cannot be imported (not a shell script, no launch line, failed before launching): exit 2."""


@dataclass
class Recorded:
    """The launch a script makes: the tool that was called, the argv after the entry module, the exported env."""

    tool: str
    argv: list[str]
    env: dict[str, str]
    stderr: str = ""


@dataclass
class Imported:
    """A recipe made from a script: its data, where each value came from, and what could not be mapped."""

    name: str
    data: dict
    sources: dict[str, str]  # dotted recipe key -> the script's override (or why it was set)
    unmapped: list[dict] = field(default_factory=list)  # {key, value, why}: not reproduced by the recipe
    recorded: Recorded | None = None
    deprecated: list[dict] = field(default_factory=list)  # {key, value, why}: verl marks the script's key deprecated

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "recipe": self.data,
            "sources": self.sources,
            "unmapped": self.unmapped,
            "deprecated": self.deprecated,
        }


# ---------------------------------------------------------------------------------------------- recording


def _check_script(path: Path) -> str:
    if not path.is_file():
        raise ImportFailed(f"no script {str(path)!r}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFailed(f"{path}: not a readable text file ({exc}); give a bash launch script") from None
    if "\x00" in text:
        raise ImportFailed(f"{path}: a binary file, not a shell script")
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    if first.startswith("#!") and not re.search(r"\b(ba|z|k)?sh\b", first):
        raise ImportFailed(f"{path}: not a shell script (its first line is {first!r})")
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    if syntax.returncode:
        raise ImportFailed(f"{path}: not a valid bash script: {syntax.stderr.strip()}")
    return text


def record(script: str | Path, device: str = "npu", env: dict[str, str] | None = None) -> Recorded:
    """Run `script` with the launcher replaced by a recorder; the verl launch it makes. ImportFailed otherwise."""
    path = Path(script).expanduser()
    _check_script(path)
    with tempfile.TemporaryDirectory(prefix="grpolab-import-") as tmp:
        root = Path(tmp).resolve()
        bin_dir, calls, home, work = root / "bin", root / "calls", root / "home", root / "work"
        for d in (bin_dir, calls, home, work):
            d.mkdir()
        recorder = root / "recorder.py"
        recorder.write_text(RECORDER)
        for tool in (*LAUNCHERS, *DEVICE_TOOLS):
            shim = bin_dir / tool
            shim.write_text(
                f'#!/bin/bash\nexec {shlex.quote(sys.executable)} -I {shlex.quote(str(recorder))} {tool} "$@"\n'
            )
            shim.chmod(0o755)
        prelude = root / "prelude.sh"
        prelude.write_text(PRELUDE + "".join(f"{c}() {{ return 0; }}\n" for c in NO_OPS))
        run_env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(root),
            "BASH_ENV": str(prelude),
            "GRPOLAB_IMPORT_CALLS": str(calls),
            "GRPOLAB_IMPORT_ROOT": str(root),
            "GRPOLAB_IMPORT_DEVICE": device,
            "LANG": "C.UTF-8",
            **(env or {}),
        }
        try:
            proc = subprocess.run(
                ["bash", str(path.resolve())],
                cwd=work,
                env=run_env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
            code, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired:
            code, stderr = None, f"(stopped after {TIMEOUT_S} s)"
        records = [json.loads(p.read_text()) for p in sorted(calls.glob("*.json"))]
    real = {str(home): os.path.expanduser("~"), str(work): os.getcwd()}  # what the script would have seen

    def unscratch(text: str) -> str:
        for scratch, actual in real.items():
            text = text.replace(scratch, actual)
        return text

    for rec in records:
        argv = [unscratch(a) for a in rec["argv"]]
        rec["env"] = {k: unscratch(v) for k, v in rec["env"].items()}
        at = next((i for i, a in enumerate(argv) if a == "verl.trainer.main_ppo" or a.endswith("main_ppo.py")), None)
        if at is None:
            continue
        base = {"HOME", "PATH", "TMPDIR", "LANG", "BASH_ENV", *run_env}
        exported = {
            k: v
            for k, v in rec["env"].items()
            if k not in SHELL_ENV and k not in base and str(root) not in v and not k.startswith("BASH_FUNC_")
        }
        return Recorded(rec["tool"], argv[at + 1 :], exported, stderr)
    tail = "\n".join(stderr.strip().splitlines()[-5:])
    if code not in (0, None):
        raise ImportFailed(f"{path}: the script exited with status {code} before launching verl:\n{tail}")
    raise ImportFailed(
        f"{path}: no launch line: the script never ran `python3 -m verl.trainer.main_ppo ...` "
        f"(through python, torchrun, uv run or ray job submit)" + (f"\n{tail}" if tail else "")
    )


# ---------------------------------------------------------------------------------------------- mapping

# verl key (actor_rollout_ref. written `arr.`) -> recipe field, for keys that map one to one
DIRECT = FIELD_OF  # one table of verl key -> recipe field, shared with the renderer's shadow check
OTC = "arr.actor.megatron.override_transformer_config."
OOC = "arr.actor.optim.override_optimizer_config."
OTC_FIELDS = {
    "recompute_granularity": "train.recompute.granularity",
    "recompute_method": "train.recompute.method",
    "recompute_num_layers": "train.recompute.num_layers",
    "pipeline_model_parallel_layout": "train.pp_layout",
    "sequence_parallel": "train.sp",
    "use_distributed_optimizer": "train.distributed_optimizer",
}
OOC_FIELDS = {
    "optimizer_cpu_offload": "train.optimizer_cpu_offload",
    "optimizer_offload_fraction": "train.optimizer_offload_fraction",
    "use_precision_aware_optimizer": "train.precision_aware_optimizer",
}
# keys a ref/rollout setting repeats from the actor: dropped when they agree with the field that renders them
MIRRORS = {
    "arr.ref.use_torch_compile": "train.torch_compile",
    "arr.ref.log_prob_micro_batch_size_per_gpu": "rollout.log_prob_micro_batch_size_per_device",
    "arr.ref.fsdp_config.ulysses_sequence_parallel_size": "train.ulysses_sp",
    "arr.ref.ulysses_sequence_parallel_size": "train.ulysses_sp",
    "arr.ref.megatron.use_dist_checkpointing": "train.use_dist_checkpointing",
    "arr.ref.megatron.dist_checkpointing_path": "train.dist_checkpointing_path",
    "arr.actor.megatron.use_remove_padding": "model.use_remove_padding",
    OTC + "context_parallel_size": "train.cp",
}
# keys the run owns (the renderer always sets them from the run): the import keeps the script's value in the
# recipe where a field exists, and reports the rest
RUN_OWNED = {"trainer.default_local_dir", "trainer.logger", "data.seed", "trainer.device"}
# keys the renderer sets another way with the same effect in verl 0.9.1 (tests/test_fidelity.py gives the reasons)
EQUIVALENT = {
    "actor_rollout_ref.actor.megatron.override_transformer_config.sequence_parallel",
    "actor_rollout_ref.actor.megatron.override_transformer_config.context_parallel_size",
    "actor_rollout_ref.actor.megatron.override_transformer_config.use_distributed_optimizer",
    "actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer",
    "actor_rollout_ref.actor.optim.use_precision_aware_optimizer",
}


def _short(key: str) -> str:
    key = key.lstrip("+")
    return "arr." + key[len(ARR) :] if key.startswith(ARR) else key


def _card_for(model_path: str) -> str | None:
    """The model card (params/models/) whose name matches the model path's last part, e.g. Qwen/Qwen3-8B."""

    def squash(text: str) -> str:
        return re.sub(r"[^a-z0-9]+", "", text.lower())

    stem = squash(Path(model_path.rstrip("/")).name)
    cards = {squash(p.stem): p.stem for p in (params_dir() / "models").glob("*.yaml")}
    if stem in cards:
        return cards[stem]
    # the longest card name the path starts with: glm52_weights -> glm5_2, Qwen3-8B-Instruct -> qwen3_8b
    return next((cards[c] for c in sorted(cards, key=len, reverse=True) if stem.startswith(c)), None)


def _hardware(device: str, per_node: int) -> str:
    if device == "npu":
        return "ascend-a3" if per_node >= 16 else "ascend-a2"
    if device == "cuda":
        return "gpu-h100"
    return "cpu"


def to_recipe(recorded: Recorded, name: str, device: str = "npu") -> Imported:
    """Map the recorded launch onto recipe fields; the rest into verl_overrides. See the module docstring."""
    from grpolab.verl import config as verl_schema

    config_name, overrides = verl_schema.split_argv(recorded.argv)
    try:
        values = verl_schema.parse_overrides(overrides)
    except Exception as exc:  # hydra's grammar errors: the script's own override is malformed
        raise ImportFailed(f"the launch's overrides do not parse as Hydra overrides: {exc}") from None
    raw = {o.split("=", 1)[0].lstrip("+"): o for o in overrides}
    data: dict = {}
    sources: dict[str, str] = {}
    unmapped: list[dict] = []
    verl_overrides: dict[str, Any] = {}
    env = dict(recorded.env)
    megatron = (
        "megatron" in config_name
        or values.get("model_engine") == "megatron"
        or values.get("actor_rollout_ref.actor.strategy") == "megatron"
    )
    data.setdefault("train", {})["engine"] = "megatron" if megatron else "fsdp"
    sources["train.engine"] = (
        f"--config-name={config_name}"
        if "megatron" in config_name
        else ("model_engine=megatron" if megatron else "no model_engine: verl's FSDP default")
    )
    later: list[tuple[str, str, Any]] = []
    for key, value in values.items():
        short = _short(key)
        text = raw.get(key, f"{key}={value}")
        if key in ("model_engine", "actor_rollout_ref.actor.strategy", "actor_rollout_ref.ref.strategy"):
            continue
        if short.startswith("ray_kwargs.ray_init.runtime_env.env_vars."):
            env[short.rsplit(".", 1)[1]] = str(value)
            continue
        target = DIRECT.get(short)
        if short.startswith(OTC):
            sub = short[len(OTC) :]
            target = OTC_FIELDS.get(sub) or (None if short in MIRRORS else f"train.transformer.{sub}")
        elif short.startswith(OOC):
            sub = short[len(OOC) :]
            target = OOC_FIELDS.get(sub, f"train.optimizer.{sub}")
        elif short.startswith("arr.rollout.engine_kwargs."):
            parts = short.split(".")
            if len(parts) > 4:
                target = "rollout.engine_kwargs." + ".".join(parts[4:])
        elif short.startswith("arr.rollout.val_kwargs."):
            target = "rollout.val_kwargs." + short.rsplit(".", 1)[1]
        elif short.startswith("data.apply_chat_template_kwargs."):
            target = "data.chat_template_kwargs." + short[len("data.apply_chat_template_kwargs.") :]
        if short in MIRRORS:
            later.append((key, MIRRORS[short], value))
            continue
        if target:
            if target == "train.sp" and not isinstance(value, bool):
                value = bool(value)
            set_dotted(data, target, value)
            sources[target] = text
        else:
            verl_overrides[raw.get(key, key).split("=", 1)[0]] = value
            sources[f"verl_overrides.{raw.get(key, key).split('=', 1)[0]}"] = text
    for key, target, value in later:  # a repeat of the actor's setting: keep it only when it differs
        have = get_dotted(data, target)
        if have == value or (target == "train.cp" and have is None and value == 1):
            continue
        if target == "train.ref_param_offload" or target.startswith("rollout.") or target.startswith("train.dist"):
            if have is None:
                set_dotted(data, target, value)
                sources[target] = raw.get(key, key)
                continue
        unmapped.append(
            {
                "key": key,
                "value": value,
                "why": f"differs from {target} ({have!r}); verl_overrides cannot shadow a field",
            }
        )
    # the cluster: device, hardware profile, model card
    dev = get_dotted(data, "cluster.device") or device
    set_dotted(data, "cluster.device", dev)
    per_node = get_dotted(data, "cluster.devices_per_node") or 1
    hardware = _hardware(dev, per_node)
    model_path = str(get_dotted(data, "model.path") or "")
    card = _card_for(model_path) if model_path and not (Path(model_path) / "config.json").is_file() else None
    if card:
        set_dotted(data, "model.card", card)
        sources["model.card"] = f"matched the model path {model_path!r}"
    elif not (model_path and (Path(model_path) / "config.json").is_file()):
        unmapped.append(
            {
                "key": "model.card",
                "value": None,
                "why": f"no config.json at {model_path!r} and no card in params/models/ matches its name: "
                "set model.card, or model.path to a directory with config.json",
            }
        )
    if verl_overrides:
        data["verl_overrides"] = verl_overrides
    if env:
        data["env"] = {k: str(v) for k, v in env.items()}
        for k in env:
            sources[f"env.{k}"] = "exported by the script"
    imported = Imported(name, {"defaults": ["base", f"hardware/{hardware}"], **data}, sources, unmapped, recorded)
    for arg in [f"--config-name={config_name}", *overrides]:
        key = arg.split("=", 1)[0] if not arg.startswith("--") else arg
        note = verl_schema.deprecation(key)
        if note:
            value = arg.split("=", 1)[1] if "=" in arg else None
            imported.deprecated.append(
                {"key": key, "value": value, "why": f"verl {verl_schema.verl_version()}: {note}"}
            )
    _settle(imported, overrides, config_name)
    return imported


def _recipe_file(imported: Imported) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="grpolab-import-"))
    path = tmp / f"{imported.name}.yaml"
    path.write_text(yaml.safe_dump(imported.data, sort_keys=False))
    return path


def _settle(imported: Imported, overrides: list[str], config_name: str, rounds: int = 3) -> None:
    """Where base.yaml's default differs from what the script runs with (verl's default), set the field to the
    script's effective value; report what still differs. The renderer is the judge: both launches are composed."""
    import shutil

    from grpolab.problems import RecipeError
    from grpolab.recipe.loader import load_recipe
    from grpolab.verl import config as verl_schema
    from grpolab.verl.render import field_of, render

    engine = "megatron" if get_dotted(imported.data, "train.engine") == "megatron" else "fsdp"
    config = verl_schema.base_config(engine) or {}
    lacking = [
        o
        for o in overrides
        if not o.startswith("+")
        and "=" in o
        and "." in o.split("=", 1)[0]
        and not has_dotted(config, o.split("=", 1)[0])
        and not verl_schema.in_free_form(config, o.split("=", 1)[0])
    ]
    upstream = verl_schema.effective([o for o in overrides if o not in lacking], config_name)
    diff: dict[str, tuple] = {}
    inert: set[str] = set()
    for _ in range(rounds):
        path = _recipe_file(imported)
        try:
            recipe = load_recipe(path)
        except RecipeError as exc:
            for p in exc.problems:
                imported.unmapped.append({"key": p.key, "value": p.value, "why": p.message})
            return
        finally:
            shutil.rmtree(path.parent, ignore_errors=True)
        ours_name, ours = verl_schema.split_argv(render(recipe, "/RUN").argv())
        unknown = {o.split("=", 1)[0] for o in lacking}
        try:
            mine = verl_schema.effective([o for o in ours if o.split("=", 1)[0] not in unknown], ours_name)
        except Exception as exc:  # hydra's own message says which key; the check reports it too
            imported.unmapped.append(
                {
                    "key": "verl_overrides",
                    "value": None,
                    "why": f"the imported launch does not compose: {str(exc).splitlines()[0]}",
                }
            )
            return
        diff = {
            k: (upstream.get(k), mine.get(k))
            for k in set(upstream) | set(mine)
            if upstream.get(k) != mine.get(k) and not _ignorable(k)
        }
        changed = False
        for key, (want, _) in sorted(diff.items()):
            target = DIRECT.get(_short(key)) or field_of(key)
            if not target or key in RUN_OWNED or target.startswith(("train.transformer", "train.optimizer")):
                continue
            if target == "train.ref_param_offload" or target.startswith("rollout.val_kwargs"):
                target = (
                    target if target == "train.ref_param_offload" else f"rollout.val_kwargs.{key.rsplit('.', 1)[1]}"
                )
            if want is None and target in (
                "algorithm.micro_batch_size_per_device",
                "rollout.log_prob_micro_batch_size_per_device",
            ):
                inert.add(key)  # the schema needs a number; with dynamic batching verl does not read it
                continue
            if (
                get_dotted(imported.data, target, "<unset>") == want
                or want == "???"
                or (want is None and not _nullable(target))
            ):
                continue  # "???": verl's mandatory marker; None where the schema needs a value: keep base.yaml's
            set_dotted(imported.data, target, want)
            imported.sources.setdefault(target, f"verl's default, which the script keeps ({key}={want!r})")
            changed = True
        if not changed:
            break
    for key, (want, have) in sorted(diff.items()):
        if key in RUN_OWNED or any(u["key"] == key for u in imported.unmapped):
            continue
        if key in inert and (
            upstream.get("actor_rollout_ref.actor.use_dynamic_bsz")
            or upstream.get("actor_rollout_ref.ref.log_prob_use_dynamic_bsz")
        ):
            continue
        imported.unmapped.append(
            {"key": key, "value": want, "why": f"the imported recipe renders {have!r} where the script runs {want!r}"}
        )
    for o in lacking:
        key = o.split("=", 1)[0]
        kept = key in (imported.data.get("verl_overrides") or {})
        imported.unmapped.append(
            {
                "key": key,
                "value": verl_schema.parse_overrides([o]).popitem()[1],
                "why": f"verl {verl_schema.verl_version()} has no such key: "
                + (
                    "the script's own launch would fail at composition; it stays in verl_overrides, where "
                    "`grpolab check` reports it"
                    if kept
                    else "the renderer leaves it out"
                ),
            }
        )


def _nullable(target: str) -> bool:
    import typing

    from grpolab.recipe.loader import field_type

    return type(None) in typing.get_args(field_type(target))


def _ignorable(key: str) -> bool:
    """Keys verl derives from others (names, paths) that follow once their source matches."""
    return (
        key.endswith((".trace.project_name", ".trace.experiment_name", "prometheus.served_model_name"))
        or key.startswith(
            ("actor_rollout_ref.ref.megatron.override_transformer_config.", "ray_kwargs.ray_init.runtime_env.env_vars.")
        )
        or key in EQUIVALENT
    )


# ---------------------------------------------------------------------------------------------- writing


_BARE = re.compile(r"[A-Za-z_][\w.\-]*")


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16).strip()
    return text[:-4].strip() if text.endswith("\n...") else text.removesuffix("...").strip()


def recipe_yaml(imported: Imported, script: str) -> str:
    """The recipe as YAML, each value the script set with a comment saying which override set it."""
    lines = [
        f"# Imported from {script} by `grpolab import`; a comment names the script's setting behind a value.",
        f"defaults: [{', '.join(imported.data['defaults'])}]",
        "",
    ]

    def emit(prefix: str, node: dict, indent: int) -> None:
        for key, value in node.items():
            dotted = f"{prefix}.{key}" if prefix else key
            pad = "  " * indent
            name = key if re.fullmatch(r"[A-Za-z_][\w\-]*", str(key)) else json.dumps(str(key))
            if (
                isinstance(value, dict)
                and value
                and prefix not in ("env", "verl_overrides")
                and dotted not in ("env", "verl_overrides")
            ):
                lines.append(f"{pad}{name}:")
                emit(dotted, value, indent + 1)
                continue
            if dotted in ("env", "verl_overrides"):
                lines.append(f"{pad}{name}:")
                for k, v in value.items():
                    why = imported.sources.get(f"{dotted}.{k}", "")
                    label = k if _BARE.fullmatch(k) else json.dumps(k)
                    lines.append(f"{pad}  {label}: {_flow(v)}" + (f"  # {why}" if why else ""))
                continue
            why = imported.sources.get(dotted, "")
            lines.append(f"{pad}{name}: {_flow(value)}" + (f"  # {why}" if why else ""))

    body = {k: v for k, v in imported.data.items() if k != "defaults"}
    for section, value in body.items():
        emit("", {section: value}, 0)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def import_script(script: str | Path, name: str | None = None, device: str = "npu") -> Imported:
    """record + to_recipe: the recipe a script makes. ImportFailed (exit 2) for unusable input."""
    path = Path(script)
    recorded = record(path, device=device)
    return to_recipe(recorded, name or re.sub(r"[^A-Za-z0-9_]+", "_", path.stem).strip("_") or "imported", device)
