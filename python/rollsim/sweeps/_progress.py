"""Progress display for sweeps: a rich bar with ETA when rich is installed, else a plain stderr line."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any


def _hms(s: float) -> str:
    s = max(0, int(round(s)))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """Shows ``done / total`` runs, speed and ETA; ``done`` counts runs finished before this call too.

    ``enabled``: True (rich if importable, else a stderr line), False (nothing), or a callable
    ``f(done, total)`` called on every update instead."""

    def __init__(self, total: int, initial: int, enabled: bool | Callable[[int, int], Any], description: str = "sweep"):
        self.total, self.initial, self.done = total, initial, initial
        self.callback: Callable[[int, int], Any] | None = None
        self._rich: Any = None
        self._plain = False
        self._t0 = time.perf_counter()
        self._last = 0.0
        if callable(enabled):
            self.callback = enabled
        elif enabled:
            try:
                from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                           TimeElapsedColumn, TimeRemainingColumn)
                from rich.console import Console
            except ImportError:
                self._plain = True
                self._tty = sys.stderr.isatty()
            else:
                self._rich = RichProgress(
                    TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("runs"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=False,
                )
                self._rich.start()
                self._task = self._rich.add_task(description, total=total, completed=initial)

    def update(self, done: int) -> None:
        """Sets the number of finished runs (monotonic)."""
        if done < self.done:
            return
        self.done = done
        if self.callback is not None:
            self.callback(done, self.total)
        elif self._rich is not None:
            self._rich.update(self._task, completed=done)
        elif self._plain:
            now = time.perf_counter()
            if now - self._last >= (0.5 if self._tty else 10.0) or done >= self.total:
                self._last = now
                self._line(now, final=False)

    def _line(self, now: float, final: bool) -> None:
        elapsed = now - self._t0
        new = self.done - self.initial
        rate = new / elapsed if elapsed > 0 else 0.0
        eta = _hms((self.total - self.done) / rate) if rate > 0 else "?"
        pct = 100.0 * self.done / self.total if self.total else 100.0
        text = (f"sweep: {self.done}/{self.total} runs ({pct:.0f}%), {rate:.0f} runs/s, "
                f"elapsed {_hms(elapsed)}, ETA {eta}")
        if self._tty:
            sys.stderr.write("\r" + text + ("\n" if final else ""))
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        elif self._plain:
            self._line(time.perf_counter(), final=True)
            self._plain = False
