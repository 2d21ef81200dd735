"""Writing files so that a reader never sees half of one."""

import contextlib
import errno
import hashlib
import json
import os
from pathlib import Path

TMP_MARK = ".tmp-"
"""Temporary files carry this in their name; a crash may leave them behind."""


def temp_path(path: Path) -> Path:
    """Where `path` is written before the rename: beside it, marked with TMP_MARK and this process's id."""
    return path.with_name(f"{path.name}{TMP_MARK}{os.getpid()}")


def write_atomic(path: Path, write) -> None:
    """Call write(tmp_path), fsync, then rename onto `path` (atomic on POSIX), and fsync the folder.

    The rename is an entry in the folder: until the folder is synced, a power
    loss can take the new name back, leaving a manifest that names a part
    which is gone.
    """
    path = Path(path)
    tmp = temp_path(path)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_folder(path.parent)


def sync_folder(folder: Path) -> None:
    """fsync a folder, so that the renames and new names in it outlast a power loss.

    A file system that cannot sync a folder (EINVAL, as some network and FUSE
    ones say), or a folder that may be written but not read (mode -wx), keeps
    the rename all the same: the write stands.
    """
    try:
        fd = os.open(folder, os.O_RDONLY)
    except PermissionError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)


def missing_folders(folder: Path) -> list[Path]:
    """`folder` and its parents that do not exist, deepest first: those `make_folders` would make.

    A file in the way is NotADirectoryError naming it (mkdir alone would say "File exists").
    """
    folder = Path(folder)
    missing = []
    for f in (folder, *folder.parents):
        if f.exists():
            if not f.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, f"{f} is not a directory", str(f))
            break
        missing.append(f)
    return missing


def make_folders(folder: Path) -> list[Path]:
    """Make `folder` and its missing parents; returns those made, deepest first (for `remove_folders`).

    A file in the way is NotADirectoryError naming it (mkdir alone would say "File exists").
    """
    missing = missing_folders(folder)
    made = []
    try:
        for f in reversed(missing):
            f.mkdir(exist_ok=True)
            made.insert(0, f)
    except BaseException:
        remove_folders(made)
        raise
    return made


def remove_folders(made: list[Path]) -> None:
    """Remove the folders `make_folders` made, deepest first, as long as they are empty."""
    for f in made:
        try:
            f.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def folders_for(path: Path):
    """Make the folders `path` needs for the block; a block that fails removes those made (when still empty),
    so that a failed write leaves no empty folder behind."""
    made = make_folders(Path(path).parent)
    try:
        yield
    except BaseException:
        remove_folders(made)
        raise


def write_sealed(path: Path, kind: str, body: str) -> None:
    """Write `body` (JSON text) to `path` with `write_atomic`, in an envelope naming its `kind` and holding the
    SHA-256 of the body's text as stored, so that `unseal` trusts no other kind of file and no changed one."""
    doc = {"format": kind, "sha256": hashlib.sha256(body.encode()).hexdigest(), "body": body}
    write_atomic(path, lambda tmp: Path(tmp).write_text(json.dumps(doc)))


def unseal(doc: dict, kind: str, what: str) -> str:
    """The body of `doc`, an envelope `write_sealed` wrote as `kind`; ValueError when it is not one (`what` names
    what it should be) or its body was changed since."""
    if doc.get("format") != kind:
        raise ValueError(f"not {what}")
    if hashlib.sha256(doc["body"].encode()).hexdigest() != doc["sha256"]:
        raise ValueError("its SHA-256 does not match its contents")
    return doc["body"]


def write_json_atomic(path: Path, data) -> None:
    """Write `data` as indented JSON with `write_atomic` (a manifest is never seen half written)."""
    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")

    write_atomic(path, write)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_temp_files(directory: Path) -> int:
    """Delete leftovers of interrupted writes (those of processes no longer running); returns how many.

    A temporary file of a live process other than this one is left alone:
    it may be another writer's file in the middle of its rename.
    """
    count = 0
    if directory.is_dir():
        for p in directory.iterdir():
            if TMP_MARK not in p.name:
                continue
            pid = p.name.rpartition(TMP_MARK)[2]
            if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
                continue
            p.unlink(missing_ok=True)
            count += 1
    return count
