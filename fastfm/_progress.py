"""A minimal progress bar for long runs: tqdm when it is installed, else a plain line on stderr."""
import sys
import time

__all__ = ["progress_bar"]


class _PlainProgress:
    """Redraws one line on a terminal; on a pipe, prints a line every ~10% so logs stay short."""

    def __init__(self, total, desc, file=None):
        self.total, self.desc, self.n = total, desc, 0
        self.file = file or sys.stderr
        self.tty = hasattr(self.file, "isatty") and self.file.isatty()
        self.postfix = ""
        self.start = time.perf_counter()
        self._last_printed = -1

    def set_postfix_str(self, text):
        self.postfix = text

    def update(self, n=1):
        self.n += n
        step = max(1, self.total // 10)
        if self.tty or self.n == self.total or self.n // step != self._last_printed:
            self._last_printed = self.n // step
            self._draw()

    def _draw(self):
        elapsed = time.perf_counter() - self.start
        width = 24
        filled = int(width * self.n / max(self.total, 1))
        line = (f"{self.desc}: [{'#' * filled}{'.' * (width - filled)}] {self.n}/{self.total} "
                f"{elapsed:6.1f}s {self.postfix}")
        if self.tty:
            self.file.write("\r" + line)
        else:
            self.file.write(line + "\n")
        self.file.flush()

    def close(self):
        if self.tty:
            self.file.write("\n")
            self.file.flush()


class _NoProgress:
    def set_postfix_str(self, text):
        pass

    def update(self, n=1):
        pass

    def close(self):
        pass


def progress_bar(total, desc, enabled=True):
    """A progress object with ``update``, ``set_postfix_str`` and ``close``."""
    if not enabled:
        return _NoProgress()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _PlainProgress(total, desc)
    return tqdm(total=total, desc=desc, leave=True)
