"""Writing a file as the user keeps it (standard library only, so that ``recsql dbt`` and the
report need no pandas or DuckDB for it): :func:`check_file_output` before anything is read,
:func:`write_file` atomically, through a symbolic link, keeping a file's mode."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import Callable

from .errors import RecsqlError

# The signals the command line's handler has received (recsql.cli.main). Its handler raises
# KeyboardInterrupt, but Python runs a handler wherever the main thread happens to be, and an
# exception raised inside a finaliser, a weak reference's callback or a C library's own signal check
# can be swallowed there. A file is therefore committed only if no signal has arrived, whatever
# became of the exception.
signals_received: list[int] = []


def stop_if_signalled() -> None:
    """KeyboardInterrupt if the command line has received a signal (see :data:`signals_received`)."""
    if signals_received:
        raise KeyboardInterrupt


def check_file_output(option: str, path: str) -> None:
    """A file output can be written: its directory exists and is writable, and it is not a directory
    (a symbolic link is checked as the file it points to, which is what is written)."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        raise RecsqlError(f"{option} {path!r} is a directory; name a file in it (e.g. {os.path.join(path, 'users.parquet')!r})")
    if not os.path.isdir(folder):
        raise RecsqlError(f"{option} {path!r}: the directory {folder!r} does not exist; create it first "
                          f"(mkdir -p {folder}) or name a file in an existing directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RecsqlError(f"{option} {path!r}: the directory {folder!r} is not writable; name a file in a directory "
                          "you can write to")
    try:  # what writing does: a file beside the target (os.access says yes to root, and on /proc or a read-only disk)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".recsql-")
    except OSError as err:
        raise RecsqlError(f"{option} {path!r}: no file can be written in the directory {folder!r} "
                          f"({err.strerror or err}); name a file in a directory you can write to") from None
    os.close(fd)
    os.remove(probe)


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file(path: str, write: Callable[[str], None], option: str | None = None) -> None:
    """``write(temporary path)`` beside the file, then ``os.replace`` onto it: the file is either the
    old one or the complete new one, never half written; on any failure (or Ctrl-C) the temporary
    file is removed.

    The file is kept as the user has it: a symbolic link is written through (the file it points to
    is replaced, the link stays a link), a replaced file keeps its mode, and a new file gets the
    mode a new file gets (0666 less the umask), not the temporary file's 0600. A file that cannot
    be written is a :class:`RecsqlError` naming ``option`` (the flag; None: "cannot write") and
    the reason."""
    target = os.path.realpath(path)  # through every link to the file itself (or where it will be)
    folder = os.path.dirname(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    except OSError as err:
        raise _unwritable(path, option, err) from None
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".recsql-", suffix=os.path.splitext(target)[1])
    except OSError as err:
        raise _unwritable(path, option, err) from None
    os.close(fd)
    try:
        write(temporary)
        os.chmod(temporary, mode)
        stop_if_signalled()
        os.replace(temporary, target)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        if isinstance(err, OSError):
            raise _unwritable(path, option, err) from None
        raise


def _unwritable(path: str, option: str | None, err: OSError) -> RecsqlError:
    where = f"{option} {path!r}" if option else repr(path)
    reason = err.strerror or str(err)
    return RecsqlError(f"{where} could not be written ({reason}); name a file in a directory you can write to, "
                       "and check its free space and permissions; nothing was written")
