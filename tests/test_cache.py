"""numba's on-disk cache is dropped whenever any source of sim/ or policies/ changes, sub-packages included.

Each test copies the two packages into a temporary folder and runs the
cleanup there in a fresh interpreter, so the project's own cache is never
touched.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _copy(tmp_path: Path) -> Path:
    for name in ("sim", "policies"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _clean(tree: Path, env_extra: dict | None = None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(env_extra or {})
    env["PYTHONPATH"] = str(tree)
    subprocess.run([sys.executable, "-c", "from sim._cache import drop_stale_cache; drop_stale_cache()"],
                   cwd=tree, env=env, check=True)


def _fake_cache(folder: Path, name: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"{name}.py311.nbi", folder / f"{name}.py311.1.nbc"]
    for f in files:
        f.write_bytes(b"stale")
    return files


def test_a_cache_from_an_older_layout_is_dropped(tmp_path):
    tree = _copy(tmp_path)
    # What the flat layout before the sub-packages left: sim/__pycache__/game.*
    old = _fake_cache(tree / "sim" / "__pycache__", "game.play_seeded_batch-90")
    _clean(tree)
    assert not any(f.exists() for f in old)
    assert (tree / "sim" / "__pycache__" / "compiled-sources.sha256").is_file()


def test_a_change_in_a_sub_package_drops_every_cache(tmp_path):
    tree = _copy(tmp_path)
    _clean(tree)  # stamp written for these sources
    kept = _fake_cache(tree / "sim" / "engine" / "__pycache__", "loop._seeded_batch__greedy-56")
    policy = _fake_cache(tree / "policies" / "__pycache__", "greedy.choose-34")
    _clean(tree)
    assert all(f.exists() for f in kept + policy), "unchanged sources must keep their cache"
    with open(tree / "policies" / "greedy.py", "a") as f:
        f.write("\n# changed\n")
    _clean(tree)
    assert not any(f.exists() for f in kept + policy)


def test_numba_cache_dir_is_honoured(tmp_path):
    tree = _copy(tmp_path / "src")
    cache = tmp_path / "numba-cache"
    engine = (tree / "sim" / "engine").resolve()
    folder = cache / f"engine_{hashlib.sha1(str(engine).encode()).hexdigest()}"
    stale = _fake_cache(folder, "loop._deck_batch__greedy-78")
    _clean(tree, {"NUMBA_CACHE_DIR": str(cache)})
    assert not any(f.exists() for f in stale)
    sim_folder = cache / f"sim_{hashlib.sha1(str((tree / 'sim').resolve()).encode()).hexdigest()}"
    assert (sim_folder / "compiled-sources.sha256").is_file()


def _read_only_install(tmp_path: Path) -> Path:
    """A copy of the packages whose folders cannot hold a cache, even for root: each __pycache__ is a file."""
    tree = _copy(tmp_path / "src")
    for name in ("sim", "policies"):
        (tree / name / "__pycache__").write_text("")
    return tree


_CHOSEN = ("import os; from sim._cache import _STAMP, cache_dirs, drop_stale_cache; drop_stale_cache(); "
           "print(os.environ.get('NUMBA_CACHE_DIR', '')); print((cache_dirs()[0] / _STAMP).is_file())")


def _chosen(tree: Path, home: Path) -> tuple[str, bool]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _CHOSEN], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout.split("\n")
    return out[0], out[1] == "True"


def test_a_read_only_install_keeps_its_cache_in_the_users_cache_folder(tmp_path):
    tree = _read_only_install(tmp_path)
    folder, stamped = _chosen(tree, tmp_path / "home")
    assert folder == str(tmp_path / "home" / ".cache" / "numba")  # where numba itself would fall back to
    assert stamped, "the cache there is checked against the sources like one beside them"


def test_a_read_only_install_and_home_use_a_temporary_cache_folder(tmp_path):
    tree = _read_only_install(tmp_path)
    home = tmp_path / "home"
    home.write_text("")  # no folder can be made under it
    folder, stamped = _chosen(tree, home)
    assert folder and Path(folder).name.startswith("foursquare-sim-numba-")
    assert stamped
    assert not Path(folder).exists(), "removed when the process exits"


def _waits_for_lock(pid: int, lock: Path) -> bool:
    """Whether process `pid` is queued for the flock on `lock` (Linux's /proc/locks lists waiters with "->")."""
    inode = f":{lock.stat().st_ino} "
    return any("->" in line and line.split("->")[1].split()[3] == str(pid) and inode in line
               for line in Path("/proc/locks").read_text().splitlines())


def test_a_stale_cache_is_dropped_only_once_the_warm_up_lock_is_free(tmp_path):
    # Another process compiling under the lock has stamped the cache for its sources and is writing files; a
    # process that finds the stamp stale waits for the lock, and then drops them only if still stale.
    tree = _copy(tmp_path)
    stale = _fake_cache(tree / "policies" / "__pycache__", "greedy.choose-34")
    lock = tree / "sim" / "__pycache__" / "warm-up.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(tree)
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen([sys.executable, "-c", "from sim._cache import drop_stale_cache; drop_stale_cache()"],
                                cwd=tree, env=env)
        deadline = time.monotonic() + 60
        while not _waits_for_lock(proc.pid, lock):
            assert proc.poll() is None, "the cleanup finished while another process held the warm-up lock"
            assert time.monotonic() < deadline, "the cleanup never asked for the warm-up lock"
            time.sleep(0.01)
        assert all(f.exists() for f in stale)
        fcntl.flock(held, fcntl.LOCK_UN)
    assert proc.wait(timeout=60) == 0
    assert not any(f.exists() for f in stale)
    assert (tree / "sim" / "__pycache__" / "compiled-sources.sha256").is_file()
