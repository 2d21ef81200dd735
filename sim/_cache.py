"""Keep numba's on-disk cache in step with the compiled sources.

numba keys a cached function on its own file's timestamp only, so a change
in a kernel it calls from another module (policies/, sim/kernels.py) would
leave a stale compiled game loop that still runs the old code. Before
anything compiles (`sim.kernels` calls this on import), hash every source
file of both packages, sub-packages included, and drop every cache file
under them when the hash differs from the one recorded with them. A cache
left by an older layout of the package (other files, other module names)
has another hash, so it is dropped too, never loaded.
"""

import hashlib
from pathlib import Path

_PACKAGES = ("sim", "policies")
_STAMP = "compiled-sources.sha256"


def _roots() -> list[Path]:
    here = Path(__file__).resolve().parent
    return [here.parent / name for name in _PACKAGES]


def sources_digest() -> str:
    digest = hashlib.sha256()
    for root in _roots():
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root.parent).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def drop_stale_cache() -> None:
    """Delete numba cache files (*.nbi, *.nbc) left by other sources; never raises."""
    try:
        digest = sources_digest()
        stamp = _roots()[0] / "__pycache__" / _STAMP
        if stamp.exists() and stamp.read_text().strip() == digest:
            return
        for root in _roots():
            for pattern in ("*.nbi", "*.nbc"):
                for path in root.rglob(f"__pycache__/{pattern}"):
                    path.unlink(missing_ok=True)
        stamp.parent.mkdir(exist_ok=True)
        tmp = stamp.with_suffix(".tmp")
        tmp.write_text(digest + "\n")
        tmp.replace(stamp)
    except OSError:
        pass  # a read-only install: numba then falls back to its own checks
