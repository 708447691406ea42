"""Progress of a long job on standard error, for the command-line modules:
a bar redrawn in place on a terminal, otherwise a line per report (about
one a second), as affine-run prints them."""

import sys
from typing import TextIO


class ProgressReport:
    """A progress callback, ``(done, total, bytes_written)``, that reports
    `what` (the program's name) counting `unit` ("files", "tensors")."""

    WIDTH = 30

    def __init__(self, what: str, unit: str, stream: TextIO = sys.stderr):
        self.what, self.unit, self.stream = what, unit, stream
        self.terminal = stream.isatty()
        self.drawn = False

    def __call__(self, done: int, total: int, written: int) -> None:
        megabytes = written / 1e6
        if not self.terminal:
            print(f"{self.what}: {done}/{total} {self.unit}, "
                  f"{megabytes:.1f} MB written", file=self.stream, flush=True)
            return
        filled = self.WIDTH * done // total if total else self.WIDTH
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.stream.write(f"\r{self.what} [{bar}] {done}/{total} {self.unit}, "
                          f"{megabytes:.1f} MB")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """Ends the bar's line, if one was drawn."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
