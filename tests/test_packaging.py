"""A wheel install (`pip install .`, not editable) carries the recipes and params: `grpolab ls` lists them,
`grpolab check` works from it and `grpolab data tiny` reads tiny's shipped data files; no recipe found is an error
naming the place looked in (exit 2).

The wheel is built from a copy of the sources (nothing is written into the checkout) and installed with --no-deps
into a fresh venv that sees the shared venv's packages (verl, pydantic, ...) but not this checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted(p.stem for p in (ROOT / "params" / "recipes").glob("*.yaml"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The venv's bin/ with grpolab installed from a freshly built wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in ("lib", "params"):
        shutil.copytree(ROOT / name, src / name, ignore=junk)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", str(src), "-w", str(tmp / "dist")],
        cwd=src,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    wheel = next((tmp / "dist").glob("grpolab-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the shared venv's packages behind the wheel's own (its editable grpolab comes after, and is not imported)
    shared = sysconfig.get_path("purelib")
    (Path(purelib) / "shared_venv.pth").write_text(f"import site; site.addsitedir({shared!r})\n")
    install = subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        env=_env(tmp),
    )
    assert install.returncode == 0, install.stderr
    return venv / "bin"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRPOLAB_PARAMS", "GRPOLAB_VERL_ROOT")}
    return {**env, "GRPOLAB_CACHE": str(tmp / "cache"), **extra}


def _run(bin_dir: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    cwd = bin_dir.parent.parent  # outside any checkout
    return subprocess.run(
        [str(bin_dir / "grpolab"), *args], cwd=cwd, capture_output=True, text=True, env=_env(cwd, **extra)
    )


def test_a_wheel_install_lists_and_checks_the_shipped_recipes(installed):
    where = subprocess.run(
        [
            str(installed / "python"),
            "-c",
            "import grpolab, grpolab.paths as p; print(grpolab.__file__); print(p.params_dir())",
        ],
        capture_output=True,
        text=True,
        env=_env(installed.parent),
    ).stdout.split()
    assert str(installed.parent) in where[0] and str(ROOT) not in where[0]  # the wheel's grpolab, not the checkout's
    assert where[1] == str(installed.parent / "share" / "grpolab" / "params")
    listed = _run(installed, "ls")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == RECIPES
    checked = _run(installed, "check", "qwen3_8b")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "verl is not installed" not in checked.stdout  # composed against verl, from the installed package
    data = _run(installed, "data", "tiny", "--no-dry-run", "--no-tokenizer")  # tiny's data files travel too
    assert "params/data/tiny/train.parquet: parquet, 70 rows read of 70" in data.stdout, data.stdout + data.stderr
    checked = _run(installed, "check", "tiny")  # its reward file travels beside its data, and dry-runs there
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_no_recipes_is_an_error_naming_where_it_looked(installed, tmp_path):
    empty = tmp_path / "params"
    empty.mkdir()
    listed = _run(installed, "ls", GRPOLAB_PARAMS=str(empty))
    assert listed.returncode == 2 and str(empty / "recipes") in listed.stderr and not listed.stdout
