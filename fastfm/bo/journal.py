"""The crash-safe journal of a BO run: an append-only JSON-lines file.

The first line is a header (``"type": "header"``: the format version, fastfm's version, the space, the
kernel and every setting of the ``Optimizer``); then one record per event, in the order they happened:

* ``ask``: a suggestion, with its trial ``id``, the ``config``, the suggestion's seconds, who asked
  (host, pid) and the optimiser's state after it (the RNG's state, the model's hyperparameters), so that
  ``Optimizer.load`` continues exactly where the run stopped;
* ``tell``: the outcome of a trial: its ``value`` or ``failed`` with the ``error`` text, and timings;
* ``abandon``: a pending trial released without a value (a crashed or interrupted worker).

Every record is one ``write`` of one line, flushed and fsynced before the call returns, under an
exclusive lock on ``<path>.lock``, so several processes may share one journal (distributed ask/tell with
no server, as Optuna's ``JournalFileBackend`` does).  A process killed in the middle of a write leaves a
torn last line: readers skip a line that is not complete JSON (with a warning), and the next writer first
ends it with a newline so that the records after it stay whole.
"""
import base64
import contextlib
import json
import os
import pickle
import socket
import threading
import warnings

from ..exceptions import StorageError

__all__ = ["Journal", "JOURNAL_FORMAT", "JOURNAL_VERSION", "encode_object", "decode_object", "worker_identity"]

JOURNAL_FORMAT = "fastfm-journal"
JOURNAL_VERSION = 1

try:                                   # POSIX
    import fcntl

    def _lock_file(fh):
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)

    def _unlock_file(fh):
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
except ImportError:                    # Windows
    import msvcrt

    def _lock_file(fh):
        fh.seek(0)
        while True:
            try:
                msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
                return
            except OSError:            # LK_LOCK gives up after 10 s; keep waiting like flock does
                continue

    def _unlock_file(fh):
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)


def encode_object(obj):
    """A JSON-safe text of a Python object that has no JSON form (a Space, a kernel object): base64 pickle."""
    return base64.b64encode(pickle.dumps(obj, protocol=4)).decode("ascii")


def decode_object(text):
    return pickle.loads(base64.b64decode(text.encode("ascii")))


def worker_identity():
    """Who wrote a record: host and process id (``minimize`` on resume re-runs the pending asks of dead
    processes of its own host)."""
    return {"host": socket.gethostname(), "pid": os.getpid()}


class Journal:
    """One journal file: locked appends of records and incremental reads of what others appended.

    Parameters
    ----------
    path : str or os.PathLike
        The JSON-lines file; created with its directory's permissions on the first append.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._lock_path = self.path + ".lock"
        self._offset = 0                 # bytes of the file already read by ``read_new``
        self._thread_lock = threading.RLock()
        self._lock_depth = 0
        self._lock_handle = None

    def __repr__(self):
        return f"Journal({self.path!r})"

    def __getstate__(self):              # a journal travels between processes as its path
        return {"path": self.path}

    def __setstate__(self, state):
        self.__init__(state["path"])

    def exists(self):
        """Whether the file holds at least a header."""
        return os.path.exists(self.path) and os.path.getsize(self.path) > 0

    @contextlib.contextmanager
    def locked(self):
        """Hold the journal's exclusive lock (re-entrant within this process): read, decide, append atomically."""
        with self._thread_lock:
            if self._lock_depth == 0 and self._lock_handle is not None:
                # an interrupt came between taking the file lock and counting it: closing the handle releases it
                self._lock_handle.close()
                self._lock_handle = None
            if self._lock_depth == 0:
                directory = os.path.dirname(os.path.abspath(self.path))
                if not os.path.isdir(directory):
                    raise StorageError(f"storage={self.path!r}: the directory {directory!r} does not exist")
                self._lock_handle = open(self._lock_path, "a+b")
                try:
                    _lock_file(self._lock_handle)
                except BaseException:
                    self._lock_handle.close()
                    raise
            self._lock_depth += 1
            try:
                yield self
            finally:
                self._lock_depth -= 1
                if self._lock_depth == 0:
                    _unlock_file(self._lock_handle)
                    self._lock_handle.close()
                    self._lock_handle = None

    def append(self, *records):
        """Write records, one line each, flushed and fsynced, under the lock."""
        lines = b"".join((json.dumps(r, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
                         for r in records)
        with self.locked():
            try:
                with open(self.path, "a+b") as fh:
                    size = fh.seek(0, os.SEEK_END)
                    if size > 0:
                        fh.seek(size - 1)
                        if fh.read(1) != b"\n":      # a torn line left by a killed writer: end it
                            lines = b"\n" + lines
                    fh.write(lines)
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:
                raise StorageError(f"storage={self.path!r}: cannot append to the journal ({exc})") from exc

    def read_new(self):
        """The complete records appended since the last call (all of them on the first call).

        A line that is not valid JSON is skipped with a warning (a torn write); an incomplete last line is
        left for a later call (its writer may still be writing it)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"storage={self.path!r}: cannot read the journal ({exc})") from exc
        end = data.rfind(b"\n")
        if end < 0:
            return []
        records = []
        for number, line in enumerate(data[:end].split(b"\n")):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                warnings.warn(f"fastfm: skipped a torn line in the journal {self.path!r} "
                              f"(byte {self._offset}, {len(line)} bytes: a writer was killed mid-write)",
                              RuntimeWarning, stacklevel=3)
                continue
            if not isinstance(record, dict) or "type" not in record:
                raise StorageError(f"storage={self.path!r}: line {number + 1} after byte {self._offset} is not a "
                                   f"fastfm journal record: {line[:80]!r}")
            records.append(record)
        self._offset += end + 1
        return records

    def read_all(self):
        """Every complete record from the start (the header first)."""
        self._offset = 0
        return self.read_new()
