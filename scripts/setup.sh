#!/usr/bin/env bash
# Sets up GRPO Lab from nothing in ./.venv: torch 2.13.0 (CPU) first, so nothing pulls a multi-GB CUDA build,
# then verl 0.9.1 (its config is what recipes are checked against), then this package with every extra.
# Idempotent: a stamp skips the installs when pyproject.toml and constraints.txt have not changed.
#   bash scripts/setup.sh          # the quick start's two commands call this first
#   bash scripts/setup.sh --tools  # also installs shellcheck and chromium (Debian) for the rendered-script and
#                                  # browser tests, and playwright in .venv-browser (its own venv: it drives chromium)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.grpolab-setup-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing torch 2.13.0 (CPU), verl 0.9.1 and grpolab[local,notebooks,test] (a few minutes the first time)"
  .venv/bin/pip install --quiet --disable-pip-version-check "torch==2.13.0"
  .venv/bin/pip install --quiet --disable-pip-version-check -c constraints.txt "verl==0.9.1"
  .venv/bin/pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[verl,local,notebooks,test]"
  .venv/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
  rm -f .venv/.grpolab-setup-* && touch "$stamp"
fi
# the supported verl releases the version matrix (tests/test_versions.py) checks against, read as data, never
# installed: each release's wheel from PyPI (verl's main: its config folder is committed in tests/data/verl-main)
for v in 0.7.1 0.8.0 0.9.0 0.9.1; do
  if [ ! -f ".cache/verl-wheels/verl-$v-py3-none-any.whl" ]; then
    .venv/bin/pip download --quiet --disable-pip-version-check --no-deps "verl==$v" -d .cache/verl-wheels
  fi
done
# bytecode for grpolab's own modules: pip compiles what it installs, but not an editable package's source, and where
# PYTHONDONTWRITEBYTECODE is set no process would write it, so every CLI call, kernel and job compiled them again
# (compileall skips what is up to date)
.venv/bin/python -m compileall -q lib >/dev/null
# a plain `.venv/bin/jupyter lab` saves the notebooks' widget state too (as `grpolab lab` does): a notebook saved
# mid-run reopens with its controls, not "model not found"
overrides=.venv/share/jupyter/lab/settings/overrides.json
if [ ! -f "$overrides" ] || ! grep -q saveState "$overrides"; then
  .venv/bin/python -m grpolab.cli.lab .venv/share/jupyter/lab/settings
fi
if [ "${1:-}" = "--tools" ]; then
  missing=""
  command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
  command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
      echo "setup: installing$missing (Debian packages)"
      # shellcheck disable=SC2086
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >/dev/null
    else
      echo "setup: missing$missing; install (sudo apt-get install$missing) for the script and browser tests" >&2
    fi
  fi
  # playwright drives Debian's chromium (tests/test_browser.py sets its executable_path; playwright's own browser
  # download is not needed); its own venv, so that nothing of it reaches the project's
  if [ ! -x .venv-browser/bin/playwright ]; then
    echo "setup: installing playwright into .venv-browser"
    "$PYTHON" -m venv .venv-browser
    .venv-browser/bin/pip install --quiet --disable-pip-version-check "playwright==1.65.2"
  fi
fi
