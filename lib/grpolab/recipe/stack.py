"""Version pins (`stack:` in a recipe) and what is installed, read from package metadata without importing: the
one place a pin or an installed version is parsed (the checks, preflight's driver rows and its per-node task all
call these).

A pin is `<version>`, `<version>@<commit>`, `<branch>@<commit>` or `<branch>`: e.g. `0.23.0@0fc695fc`
(release v0.23.0 at commit 0fc695fc) or `core_r0.18.0@dc0ee41a`. `cann` is not a Python package: preflight
reads its version from the Ascend toolkit's install info and compares it with the pin's `version`.

    parse_pin(package, text) -> Pin             ValueError names what is wrong
    installed(package, paths=()) -> (version, commit)   paths: more folders to look in (a job's PYTHONPATH)
    matches(pin, version, commit) -> (ok, why)
    install_hint(package, pin) -> "pip install vllm-ascend==0.23.0"
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata

NOT_PACKAGES = {"cann"}
_VERSION = re.compile(r"^v?\d+(\.\d+)*([.+-]?[A-Za-z0-9.]+)?$")


@dataclass(frozen=True)
class Pin:
    package: str
    text: str
    version: str | None  # a release version such as 0.23.0, or None for a branch
    ref: str | None  # a branch such as main or core_r0.18.0
    commit: str | None


def parse_pin(package: str, text: str) -> Pin:
    head, _, commit = str(text).partition("@")
    head = head.strip()
    commit = commit.strip() or None
    if commit is not None and not re.fullmatch(r"[0-9a-fA-F]{6,40}", commit):
        raise ValueError(f"commit {commit!r} is not a hex commit id (6-40 characters)")
    if not head:
        raise ValueError("empty version")
    if _VERSION.match(head):
        return Pin(package, text, head.lstrip("v"), None, commit)
    if not re.fullmatch(r"[A-Za-z0-9._/-]+", head):
        raise ValueError(f"{head!r} is neither a version nor a branch name")
    return Pin(package, text, None, head, commit)


def normal_name(name: str) -> str:
    """A package name as pip compares them (PEP 503): `vllm_ascend` and `vllm-ascend` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(package: str, paths: Sequence[str] = ()) -> tuple[str | None, str | None]:
    """(version, VCS commit) of an installed distribution, or (None, None). Never imports the package.

    Looked up on this interpreter's sys.path, then in `paths` (a job's PYTHONPATH: what the job will import),
    under the names pip treats as one (`vllm_ascend`, `vllm-ascend`)."""
    for name in dict.fromkeys([package, normal_name(package)]):
        try:
            return _facts(metadata.distribution(name))
        except metadata.PackageNotFoundError:
            continue
    if paths:
        for name in dict.fromkeys([package, re.sub(r"[-_.]+", "_", package), normal_name(package)]):
            for dist in metadata.distributions(name=name, path=list(paths)):
                return _facts(dist)
    return None, None


def _facts(dist: metadata.Distribution) -> tuple[str | None, str | None]:
    """(version, the commit a VCS install recorded in direct_url.json, or None)."""
    commit = None
    direct = dist.read_text("direct_url.json")
    if direct:
        try:
            vcs = json.loads(direct).get("vcs_info", {})
            commit = vcs.get("commit_id") if isinstance(vcs, dict) else None
        except (ValueError, AttributeError):
            commit = None
    return dist.version, commit if isinstance(commit, str) else None


def install_hint(package: str, pin: Pin | None) -> str:
    """How to install what a pin names (or the package at all, without a pin)."""
    if pin is None:
        return f"pip install {package}"
    if pin.commit:
        what = f"release {pin.version}" if pin.version else f"branch {pin.ref}"
        return f"install {package} {what} at commit {pin.commit} (from source: pip install git+<repo>@{pin.commit})"
    if pin.version:
        return f"pip install {package}=={pin.version}"
    return f"install {package} from its {pin.ref} branch"


def scm_commit(version: str | None) -> str | None:
    """The commit in a setuptools_scm version: `0.23.1.dev12+gdc55ef82a` (a release branch after its tag) ->
    `dc55ef82a`; None when the version carries no `+g<sha>`."""
    match = re.search(r"\+g([0-9a-fA-F]{6,40})(?:[.+]|$)", version or "")
    return match.group(1) if match else None


def matches(pin: Pin, version: str | None, commit: str | None) -> tuple[bool, str]:
    """Does what is installed satisfy the pin? (ok, explanation).

    A source install of a release branch reports a setuptools_scm version (vllm-ascend from releases/v0.23.0 says
    `0.23.1.dev12+gdc55ef82a`, the next patch's dev build): a pin `0.23.0@dc55ef82` then compares the commit in
    that version, not the version number.
    """
    if version is None:
        return False, "not installed"
    commit = commit or scm_commit(version)
    if pin.commit and commit:
        same = commit.startswith(pin.commit) or pin.commit.startswith(commit)
        return same, f"installed {version} at commit {commit[:12]}" + ("" if same else f", pinned {pin.commit}")
    if pin.version:
        local = version.split("+")[0]
        same = local == pin.version or local.startswith(pin.version + ".post") or version == pin.version
        note = "" if not pin.commit else " (no commit recorded, installed from a wheel)"
        return same, f"installed {version}{note}"
    return True, f"installed {version} (pin is branch {pin.ref}: no commit recorded to compare)" if not commit else ""


def verl_requirements() -> dict[str, str]:
    """The installed verl's own requirements, {normalized name: specifier}, or {} without verl."""
    try:
        requires = metadata.requires("verl") or []
    except metadata.PackageNotFoundError:
        return {}
    out = {}
    for line in requires:
        if ";" in line and "extra ==" in line:
            continue
        match = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*([^;]*)", line)
        if match and match.group(3).strip():
            out[normal_name(match.group(1))] = match.group(3).strip().strip("()")
    return out


def compare_versions(have: str, want: str) -> int | None:
    """-1 / 0 / 1, or None when the versions cannot be ordered (CANN writes 8.0.RC2: PEP 440 reads it)."""
    try:
        # lazy: packaging (only ordering two versions needs it)
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging ships with pip's environments
        return None
    try:
        a, b = Version(have), Version(want)
    except InvalidVersion:
        return None if have != want else 0
    return (a > b) - (a < b)


def satisfies(version: str, specifier: str) -> bool | None:
    """True/False when packaging can tell, None when the version is not PEP 440."""
    try:
        # lazy: packaging (only checking a pinned range needs it)
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging ships with pip's environments
        return None
    try:
        return Version(version) in SpecifierSet(specifier)
    except (InvalidVersion, ValueError):
        return None
