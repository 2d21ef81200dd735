"""pyproject.toml's dependency lower bounds admit no release that lacks what the code calls.

pip keeps an installed release that meets a bound, so a bound too low is a
traceback on a machine that happens to hold an older release, never seen on a
fresh install (which takes the newest).
"""

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent

# (distribution, text in sim/ or policies/ that shows the need, first release that has it, why)
NEEDS = [
    ("polars", "pl.read_parquet_metadata(", "1.30", "reads a part's key-value metadata: new in polars 1.30"),
    ("polars", "write_parquet(buf, metadata=", "1.30", "writes a part's key-value metadata: new in polars 1.30"),
    ("polars", 'collect(engine="streaming")', "1.23", "the streaming engine by that name"),
    ("scipy", "betainc(n - k, k + 1, 0.5)", "1.11",
     "McNemar's p-value: special.betainc is Boost's ibeta from scipy 1.11 on (cephes before, off near the centre)"),
    ("typer", "get_help_record(ctx)", "0.16",
     "help formatting: typer before 0.16 raises with click 8.2 and later (Parameter.make_metavar() needs ctx)"),
]


def _sources() -> str:
    return "\n".join(p.read_text() for name in ("sim", "policies") for p in sorted((ROOT / name).rglob("*.py")))


def _lowest_admitted(name: str) -> Version:
    for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        req = Requirement(line)
        if req.name.lower() == name:
            bounds = [Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")]
            assert bounds, f"{name} has no lower bound in pyproject.toml"
            return max(bounds)
    raise AssertionError(f"{name} is not a dependency in pyproject.toml")


def test_lower_bounds_cover_the_apis_the_code_calls():
    sources = _sources()
    for name, text, first, why in NEEDS:
        assert text in sources, f"the code no longer has {text!r}: drop or update this row"
        assert _lowest_admitted(name) >= Version(first), f"{name}>={first} needed: {why}"


def test_the_source_distribution_carries_what_the_tests_read():
    # setuptools puts only tests/test*.py in an sdist by itself: conftest.py, reference.py, rl_plugin.py,
    # tests/data/ and the example plugins the tests play come from MANIFEST.in, read here the way it does.
    import subprocess

    import pytest
    from setuptools._distutils.filelist import FileList

    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist holds what was packed)")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    files = FileList()
    files.set_allfiles(tracked)
    manifest = ROOT / "MANIFEST.in"
    for line in manifest.read_text().splitlines() if manifest.exists() else []:
        if line.strip() and not line.lstrip().startswith("#"):
            files.process_template_line(line)
    needed = {f for f in tracked if f.startswith(("tests/", "examples/"))} | {"RULES.md"}
    assert needed <= set(files.files), f"left out of the sdist: {', '.join(sorted(needed - set(files.files)))}"
