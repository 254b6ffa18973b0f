"""The one renderer: a validated Recipe -> the launch (entrypoint, verl Hydra overrides, env).

Rendered for the verl that is installed: keys are looked up in that verl's own config files, so a key the
installed verl does not have (e.g. `actor.megatron.grad_offload` in 0.9.1) is left out with a warning instead
of failing at composition on the cluster. Keys inside verl's free-form dicts (override_transformer_config,
engine_kwargs, ...) are added with Hydra's `+` prefix. `to_sh` writes a standalone bash script.

Which verl key each recipe field renders to is the field map's (grpolab.verl.fieldmap). An env value `${NAME}` is
read from the launching shell's environment here (the bash script reads it itself), so it never sits in a file;
where this shell lacks it, it stays `${NAME}` for Ray to expand on each node.
Everything that reaches the bash script from a recipe (its name, files, values, env) is quoted; a name with a
control character (a newline could end the header comment) is refused.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from grpolab import run_folder
from grpolab.problems import InputError, Problem
from grpolab.recipe.dotted import has_dotted
from grpolab.recipe.engines import FSDP, named
from grpolab.recipe.loader import overrides_of
from grpolab.recipe.schema import ENV_REF, Recipe
from grpolab.recipe.secrets import redaction
from grpolab.verl import config as verl_schema
from grpolab.verl import entry as entry_point
from grpolab.verl import fieldmap, versions

RUN_DIR = "${RUN_DIR}"  # placeholder when rendering without a run directory
# a plain word is left unquoted; the run-directory placeholder counts as plain, so that the bash script, which
# puts the real directory in its place, passes exactly what rendering with that directory would
_PLAIN = re.compile(r"^(\$\{RUN_DIR\}|[A-Za-z_/~])[A-Za-z0-9_\-./~]*$")
# a value starting with `~` (~/data) is always quoted: Hydra's grammar reads a bare `~` at the start of a value as
# something else and fails at composition, long after `check` passed. /abs and ./rel paths are plain words to
# Hydra, and stay unquoted so that the bash script (which puts the run directory in place of ${RUN_DIR}) passes
# exactly what rendering with that directory would
_PATHLIKE = re.compile(r"^~")
_RESERVED = {"true", "false", "null", "none", "nan", "inf"}
_HYDRA_KEY = re.compile(r"[\\()\[\]{}:=, \t]")  # what Hydra's dictionary keys take only escaped (`\{`)


@dataclass
class Launch:
    """What is submitted: `python <entry> <overrides>` with `env` exported on every node."""

    recipe: str
    engine: str
    entry: list[str]
    overrides: list[str]
    env: dict[str, str]
    verl_version: str | None
    notes: list[Problem] = field(default_factory=list)
    env_refs: dict[str, str] = field(default_factory=dict)  # env name -> the launching shell's variable it reads
    cluster: dict[str, Any] = field(default_factory=dict)  # ray_address, runtime_env: where and how it is submitted
    config_name: str = "ppo_trainer"  # verl's Hydra root config (`--config-name`, in `entry` when not the default)
    config_dir: str | None = None  # the entry point's own config folder the launch composes with; None: verl's

    def shown_env(self) -> dict[str, str]:
        """env as shown to people: a value read from the launching shell is shown as the reference `${NAME}`."""
        return {k: "${" + self.env_refs[k] + "}" if k in self.env_refs else v for k, v in self.env.items()}

    def argv(self, python: str = "python3") -> list[str]:
        return [python, *self.entry, *self.overrides]

    def command(self, python: str = "python3") -> str:
        return " ".join(shlex.quote(a) for a in self.argv(python))

    def to_dict(self) -> dict:
        return {
            "recipe": self.recipe,
            "engine": self.engine,
            "entrypoint": self.command(),
            "argv": self.argv(),
            "overrides": self.overrides,
            "env": self.shown_env(),
            "verl_version": self.verl_version,
            "config_name": self.config_name,
            "notes": [p.to_dict() for p in self.notes],
            **({"cluster": self.cluster} if self.cluster else {}),
        }


def _hydra_key(key: Any) -> str:
    return _HYDRA_KEY.sub(lambda m: "\\" + m.group(0), str(key))


def hydra_value(value: Any) -> str:
    """A Python value in Hydra's override grammar; strings are quoted unless they are plain words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, dict):  # a key is never quoted in Hydra's grammar: its special characters are escaped
        return "{" + ",".join(f"{_hydra_key(k)}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED and not _PATHLIKE.match(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def verl_keys(
    recipe: Recipe, run_dir: str, first_class: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[Problem]]:
    """The recipe as {verl dotted key: value}, and notes about what the installed verl cannot take. `first_class`:
    the first-class keys when the caller rendered them already (for `run_dir`; not changed here)."""
    keys, notes = (dict(first_class), []) if first_class is not None else first_class_keys(recipe, run_dir)
    keys.update(recipe.verl_overrides)  # the escape hatch goes last; the gate forbids shadowing
    return keys, notes


def first_class_keys(recipe: Recipe, run_dir: str = RUN_DIR) -> tuple[dict[str, Any], list[Problem]]:
    """The verl keys the renderer emits from the recipe's own fields (everything but verl_overrides): the field map's."""
    return fieldmap.render_keys(recipe, run_dir), []


def render(recipe: Recipe, run_dir: str | None = None, first_class: dict[str, Any] | None = None) -> Launch:
    """The launch for the installed verl (or `python -m grpolab.local.train` for train.engine trl). `first_class`:
    first_class_keys(recipe, run_dir) when the caller (the gate) has them already: they are not rendered twice."""
    run_dir = run_dir or RUN_DIR
    env, refs, ref_notes = _env(recipe)
    cluster = {
        k: v for k, v in (("ray_address", recipe.cluster.ray_address), ("runtime_env", recipe.cluster.runtime_env)) if v
    }
    engine = recipe.engine
    if not engine.verl:  # the engine's own trainer, in one process
        entry = [*engine.entry, "--run-dir", run_dir]
        return Launch(recipe.name, engine.name, entry, [], env, None, ref_notes, refs, cluster)
    keys, notes = verl_keys(recipe, run_dir, first_class)
    schema = verl_schema.base_config(recipe.train.engine)
    config_name, overrides = engine_selection(engine.name)
    own = entry_point.of(recipe)  # an entry point's own Hydra config (a recipe's DAPO trainer), where it has one
    if isinstance(own, entry_point.EntryConfig) and (own.own or recipe.trainer.config_name):
        config_name = own.name
        schema = verl_schema.entry_schema(own.folder, own.name, tuple(overrides)) if own.own else schema
    for key, value in keys.items():
        bare = key.lstrip("+")
        if key.startswith("+") or schema is None or has_dotted(schema, bare):
            overrides.append(f"{key}={hydra_value(value)}")
        elif verl_schema.in_free_form(schema, bare):
            overrides.append(f"+{key}={hydra_value(value)}")
        elif key in recipe.verl_overrides:
            overrides.append(f"{key}={hydra_value(value)}")  # the user's own key: verl-schema reports it
        else:
            notes.append(_lacking(key, value))
    env["VERL_FILE_LOGGER_PATH"] = f"{run_dir}/{run_folder.METRICS}"
    argv = ["-m", recipe.trainer.entrypoint]
    if recipe.trainer.config_path:
        argv.append(f"--config-path={recipe.trainer.config_path}")
    if (
        recipe.trainer.config_name
        or config_name != "ppo_trainer"
        and not (isinstance(own, entry_point.EntryConfig) and own.own)
    ):
        argv.append(f"--config-name={config_name}")
    return Launch(
        recipe.name,
        recipe.train.engine,
        argv,
        overrides,
        env,
        verl_schema.verl_version(),
        notes + ref_notes,
        refs,
        cluster,
        config_name,
        str(own.folder) if isinstance(own, entry_point.EntryConfig) and own.own else None,
    )


def _lacking(key: str, value: Any) -> Problem:
    """A first-class key the checked verl lacks, left out of the launch: a warning where the value is null, what
    verl 0.9.1 defaults to, or the run owns the key; else an error: that version cannot do what the recipe asks."""

    field = fieldmap.field_of(key) or f"verl_overrides.{key}"
    version = verl_schema.verl_version()
    having = versions.having(key)
    default = versions.reference_default(key)
    # what a version without the key does is what 0.9.1 does by default at best: any other value (or a key with
    # no default to compare) is a request that version cannot honour; unset (null) asks for nothing
    harmless = key in fieldmap.run_owned() or value is None or (default is not None and default == value)
    return Problem(
        "verl-schema",
        "warning" if harmless else "error",
        field,
        value,
        f"verl {version} has no {key!r}: left out of the launch"
        + ("" if harmless else f", so verl {version} cannot do {field} = {value!r}"),
        (f"verl {', '.join(having)} has it" if having else "no supported verl has it")
        + (f"; or set {field} to {default!r} (verl 0.9.1's default)" if default is not None and not harmless else "")
        + ("" if not harmless else ", or drop the setting from the recipe"),
    )


def engine_selection(engine: str) -> tuple[str, list[str]]:
    """(Hydra root config, overrides) that select a training engine in the checked verl: `model_engine=megatron`
    from 0.8.0, `--config-name ppo_megatron_trainer` in 0.7.1 (grpolab.verl.versions derives which)."""
    root = FSDP.config_name  # verl's default root config: the default worker's
    declared = named(engine)
    if declared.config_name in (None, root):
        return root, []
    found = fieldmap.checked_facts()
    if found is not None and engine in found:  # Megatron: its own fact (a root config on 0.7.1)
        return found[engine]["config_name"], list(found[engine]["overrides"])
    return root, [f"model_engine={declared.model_engine or engine}"]  # another engine: its config group


def _env(recipe: Recipe) -> tuple[dict[str, str], dict[str, str], list[Problem]]:
    """The recipe's env with each `${NAME}` read from this shell's environment; {name: variable}; notes. A variable
    this shell lacks stays `${NAME}`: Ray expands it on each node from the node's own environment (runtime_env
    env_vars do), which `grpolab preflight` checks."""

    env, refs, notes = {}, {}, []
    for name, value in recipe.env.items():
        found = re.match(ENV_REF, value)
        if not found:
            env[name] = value
            continue
        var = refs[name] = found.group(1)
        env[name] = os.environ.get(var, value)
        if var not in os.environ:
            notes.append(
                Problem(
                    "env-required",
                    "warning",
                    f"env.{name}",
                    value,
                    f"env.{name} reads ${var}, which this shell does not set: Ray will take it from each node's own "
                    "environment, and the job gets an empty value where a node lacks it",
                    f"export {var} before launching, or check the nodes with `grpolab preflight`",
                )
            )
    return env, refs, notes


def to_json(launch: Launch) -> str:
    return json.dumps(launch.to_dict(), indent=2)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNSAFE_DIR = re.compile(r"[^A-Za-z0-9_.+-]")
# builds the job's runtime env from the script's own exported env at run time, so no value is written in the script
_RUNTIME_ENV = (
    "import json, os, sys; e = json.loads(sys.argv[1]); "
    "e['env_vars'] = {k: os.environ[k] for k in sys.argv[2:]}; print(json.dumps(e))"
)


def to_sh(launch: Launch, recipe: Recipe) -> str:
    """A standalone bash script: strict mode, every value quoted, env exported, an up-front device check.

    InputError for a recipe name or file with a control character (a newline would end the header comment)."""
    q = shlex.quote
    c = recipe.cluster
    sets = overrides_of(recipe)
    for text in (recipe.name, *recipe.files, *sets):
        if _CONTROL.search(text):
            raise InputError(
                f"recipe name, file or override {text!r} has a control character; remove it to render a script"
            )
    submit = launch.cluster.get("ray_address")
    # the command that renders this very script, overrides included; a secret value never, even with --show-secrets
    # (a token copied into a plain variable is found by its value: the one redaction)
    given = redaction(recipe).text("".join(f" --set {q(o)}" for o in sets))
    lines = [
        "#!/usr/bin/env bash",
        f"# GRPO Lab launch for recipe {recipe.name} ({', '.join(recipe.files)}); generated by `grpolab render "
        f"{recipe.name}{given} --format sh`.",
        *(
            [f"# Rendered for verl {launch.verl_version}: the keys that version's workers read."]
            if named(launch.engine).verl
            else []
        ),
        (
            "# Runs here, on this machine's CPU (grpolab.local.train); no cluster needed. Edit the recipe, not this file."
            if not recipe.engine.verl
            else f"# Needs {c.nnodes} node(s) x {c.devices_per_node} {c.device} device(s) in a running Ray cluster; "
            + ("submitted with `ray job submit`." if submit else "run it on the head node.")
            + " Edit the recipe, not this file."
        ),
        "set -euo pipefail",
        "",
        # the run directory is named after the recipe with shell-special characters replaced: nothing from the name
        # is ever read by the shell as code
        f'RUN_DIR="${{RUN_DIR:-$PWD/runs/{_UNSAFE_DIR.sub("_", recipe.name)}-$(date -u +%Y%m%d-%H%M%S)}}"',
        'PYTHON="${PYTHON:-python3}"',
        'mkdir -p "$RUN_DIR/logs"',
        "",
    ]
    if submit:
        pass  # the job runs on the cluster: this machine need not have the devices
    elif c.device == "npu":
        lines += [
            "# Up-front device check: fail in a second, not after the cluster has loaded the model.",
            "if ! \"$PYTHON\" -c 'import torch, torch_npu, sys; sys.exit(0 if torch.npu.is_available() else 1)' "
            ">/dev/null 2>&1; then",
            "  echo 'error: torch_npu does not import or no NPU is visible on this node; this recipe needs "
            f"{c.nnodes} x {c.devices_per_node} Ascend NPUs (install torch_npu + CANN, check npu-smi info)' >&2",
            "  exit 1",
            "fi",
        ]
    elif c.device == "cuda":
        lines += [
            "# Up-front device check: fail in a second, not after the cluster has loaded the model.",
            "if ! \"$PYTHON\" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' "
            ">/dev/null 2>&1; then",
            f"  echo 'error: no CUDA device visible; this recipe needs {c.nnodes} x {c.devices_per_node} GPUs "
            "(check nvidia-smi and the torch build)' >&2",
            "  exit 1",
            "fi",
            "",
        ]
    for name, value in launch.env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"env name {name!r} is not a valid shell variable name")
        if name in launch.env_refs:  # read from the launching shell: the value is never written here
            var = launch.env_refs[name]
            lines.append(f'export {name}="${{{var}:?set {var} in the launching shell}}"')
        elif value.startswith(RUN_DIR):
            rest = value[len(RUN_DIR) :]
            lines.append(f'export {name}="$RUN_DIR"{q(rest) if rest else ""}')
        else:
            lines.append(f"export {name}={q(value)}")
    lines += ["args=("] if lines[-1] == "" else ["", "args=("]
    for arg in [*launch.entry, *launch.overrides]:
        if RUN_DIR in arg:
            head, tail = arg.split(RUN_DIR, 1)
            tail = q(tail) if tail else ""  # no stray '' after "$RUN_DIR"
            lines.append(f'  {q(head)}"$RUN_DIR"{tail}' if head else f'  "$RUN_DIR"{tail}')
        else:
            lines.append(f"  {q(arg)}")
    lines.append(")")
    if submit:
        runtime = json.dumps(launch.cluster.get("runtime_env", {}), sort_keys=True)
        lines += [
            f'if [ -z "${{RAY_ADDRESS:-}}" ]; then RAY_ADDRESS={q(submit)}; fi',
            'runtime_env=$("$PYTHON" -c '
            + q(_RUNTIME_ENV)
            + f" {q(runtime)} "
            + " ".join(q(n) for n in launch.env)
            + ")",
            'ray job submit --address "$RAY_ADDRESS" --runtime-env-json "$runtime_env" -- python3 "${args[@]}" 2>&1 '
            '| tee "$RUN_DIR/logs/job.log"',
            "",
        ]
    else:
        lines += ['"$PYTHON" "${args[@]}" 2>&1 | tee "$RUN_DIR/logs/job.log"', ""]
    return "\n".join(lines)
