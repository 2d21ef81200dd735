"""Keep numba's on-disk cache in step with the compiled sources.

numba keys a cached function on its own file's timestamp only, so a change
in a kernel it calls from another module (policies/, sim/kernels.py) would
leave a stale compiled game loop that still runs the old code. Before
anything compiles (`sim.kernels` calls this on import), hash every source
file of both packages, sub-packages included, and drop every cache file
under them when the hash differs from the one recorded with them. A cache
left by an older layout of the package (other files, other module names)
has another hash, so it is dropped too, never loaded. numba writes its cache
beside the sources (``__pycache__``) unless ``NUMBA_CACHE_DIR`` is set;
then it uses one folder per source folder inside that directory
(``<folder name>_<sha1 of its absolute path>``), which is cleaned instead.
A read-only install (a system-wide one, a container image) cannot hold the
cache beside its sources: then NUMBA_CACHE_DIR is set to the user's cache
folder, or to a private temporary one when that cannot be written either
(see `choose_cache_dir`). Processes of one machine that compile or load
the cache take turns (`warm_up_lock`).
"""

import atexit
import contextlib
import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

_PACKAGES = ("sim", "policies")
_STAMP = "compiled-sources.sha256"
_WARM_UP_LOCK = "warm-up.lock"


def _roots() -> list[Path]:
    here = Path(__file__).resolve().parent
    return [here.parent / name for name in _PACKAGES]


def sources_digest() -> str:
    """SHA-256 of every source file of sim/ and policies/, with its path: what the cache must match."""
    digest = hashlib.sha256()
    for root in _roots():
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root.parent).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_dirs() -> list[Path]:
    """Where numba keeps the cache of each source folder of both packages (the first is sim/'s)."""
    folders = [d for root in _roots() for d in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]
               if d.name != "__pycache__" and any(d.glob("*.py"))]
    user_dir = os.environ.get("NUMBA_CACHE_DIR")
    if not user_dir:
        return [d / "__pycache__" for d in folders]
    # numba.core.caching.UserProvidedCacheLocator.get_suitable_cache_subpath
    return [Path(user_dir) / f"{d.name}_{hashlib.sha1(str(d).encode()).hexdigest()}" for d in folders]


def _writable(folder: Path) -> bool:
    """numba's own test of a cache folder: it can be made, and a file written in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _user_cache() -> Path | None:
    """numba's per-user cache folder on Linux ($XDG_CACHE_HOME or ~/.cache, then numba); None without a home."""
    try:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"
    except (RuntimeError, KeyError):
        return None


def choose_cache_dir() -> None:
    """Set NUMBA_CACHE_DIR when the packages' folders cannot hold the cache and none is set.

    numba would fall back to its per-user folder on its own, which `drop_stale_cache` would then not
    clean, and when that cannot be written either (a read-only home) every cached kernel raises "no
    locator available" at import. Then the cache goes to a private temporary folder, removed at exit.
    The variable is inherited by the worker processes, so they load what the main process compiled.
    """
    if os.environ.get("NUMBA_CACHE_DIR") or all(_writable(root / "__pycache__") for root in _roots()):
        return
    folder = _user_cache()
    if folder is None or not _writable(folder):
        try:
            folder = Path(tempfile.mkdtemp(prefix="foursquare-sim-numba-"))
        except OSError:
            return  # nowhere to write: numba says so when a kernel is defined
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba was imported first: it has read the environment already
        config.CACHE_DIR = str(folder)


def _stamped(stamp: Path, digest: str) -> bool:
    """Whether the cache was last stamped for the sources of `digest`."""
    return stamp.exists() and stamp.read_text().strip() == digest


def drop_stale_cache() -> None:
    """Delete numba cache files (*.nbi, *.nbc) left by other sources; never raises.

    A stale cache is dropped under the warm-up lock, and only if it is still
    stale once the lock is held: another process may be compiling the same
    sources under the lock, having dropped the stale files and stamped the
    cache first, and the files it is writing must stay. A cache in step with
    the sources is checked without the lock, so that importing the kernels
    never waits for another process's compile.
    """
    choose_cache_dir()
    try:
        digest = sources_digest()
        dirs = cache_dirs()
        stamp = dirs[0] / _STAMP
        if _stamped(stamp, digest):
            return
        with _held_lock():
            if _stamped(stamp, digest):
                return
            for folder in dirs:
                for pattern in ("*.nbi", "*.nbc"):
                    for path in folder.glob(pattern):
                        path.unlink(missing_ok=True)
            stamp.parent.mkdir(parents=True, exist_ok=True)
            tmp = stamp.with_suffix(".tmp")
            tmp.write_text(digest + "\n")
            tmp.replace(stamp)
    except OSError:
        pass  # a cache folder that cannot be written: numba then falls back to its own checks


@contextlib.contextmanager
def warm_up_lock():
    """Hold this machine's warm-up lock (an exclusive fcntl lock on a file beside the cache) for the block.

    Processes that compile the same cached functions at once each do the whole compile and write the same
    cache files over each other (a function's index is read, extended and written back, so one writer can drop
    another's entry); taking turns, the first compiles and the others load what it wrote. A stale cache is
    dropped first (`drop_stale_cache`, which takes the lock itself: it is not reentrant). The lock goes with
    its holder, however that ends. Without a folder to hold the lock file (a read-only install with nowhere to
    cache), the block runs unlocked: numba then writes no cache either.
    """
    drop_stale_cache()
    with _held_lock():
        yield


@contextlib.contextmanager
def _held_lock():
    """The warm-up lock itself, held for the block (unlocked without a folder to hold its file)."""
    path = cache_dirs()[0] / _WARM_UP_LOCK
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        held = open(path, "a")
    except OSError:
        yield
        return
    with held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
