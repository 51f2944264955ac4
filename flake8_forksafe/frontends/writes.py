"""Writing a fixed file through its path, as black and ruff do, and still atomically.

* A symlink is followed: the target gets the new text, the link stays a link.
* Owner, group and mode are kept (the new file gets them before it takes the target's place).
* A file with more than one hard link, another user's file (writable by us) and a file in a
  directory we may not write are rewritten in place (same inode, owner and links), from a complete
  temporary copy written first where the directory allows.
* A file the user may not write (``chmod 0444``, another user's file) is refused: ``NotWritable``
  with one line, nothing written.
"""

from __future__ import annotations

import os
import tempfile


class NotWritable(OSError):
    """The user may not write the file; ``str()`` is one line."""


def write_through(path: str, data: bytes) -> None:
    real = os.path.realpath(path)
    st = os.stat(real)
    if not os.access(real, os.W_OK):
        raise NotWritable(f"{path}: not written: the file is read-only for this user (mode {st.st_mode & 0o7777:04o})")
    directory = os.path.dirname(real)
    if st.st_nlink > 1 or not os.access(directory, os.W_OK | os.X_OK) or not _can_keep_owner(st):
        _copy_over(real, data, directory)
        return
    fd, tmp = tempfile.mkstemp(prefix=".forksafe-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            _keep_owner_and_mode(fh.fileno(), st)
            os.fsync(fh.fileno())
        os.replace(tmp, real)
    except BaseException:
        _unlink(tmp)
        raise


def _can_keep_owner(st: os.stat_result) -> bool:
    """Could a new file get this file's owner and group? (Otherwise it is rewritten in place.)"""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return True
    return st.st_uid == os.geteuid() and (st.st_gid == os.getegid() or st.st_gid in os.getgroups())


def _keep_owner_and_mode(fd: int, st: os.stat_result) -> None:
    if hasattr(os, "fchown") and (st.st_uid != os.geteuid() or st.st_gid != os.getegid()):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:  # not root: keep at least the group where we can
            try:
                os.fchown(fd, -1, st.st_gid)
            except PermissionError:
                pass
    os.fchmod(fd, st.st_mode & 0o7777)  # after chown, which may clear set-id bits


def _copy_over(real: str, data: bytes, directory: str) -> None:
    """Same inode: the new text goes into the existing file. A complete copy is written first
    (next to it when the directory allows), so an interrupted write leaves the text recoverable."""
    tmp = None
    if os.access(directory, os.W_OK | os.X_OK):
        fd, tmp = tempfile.mkstemp(prefix=".forksafe-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    try:
        with open(real, "r+b") as fh:
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        if tmp is not None:
            _unlink(tmp)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
