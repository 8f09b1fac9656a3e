"""Ctrl-C and SIGTERM during training: `with InterruptFlag() as flag:` the first signal sets `flag.requested`
(the loop stops at its next safe point and checkpoints), a second raises KeyboardInterrupt at once."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

log = logging.getLogger(__name__)


class InterruptFlag:
    """The first SIGINT (Ctrl-C) or SIGTERM (a job scheduler's time limit, `kill`) sets the flag and names
    the signal; a second one raises KeyboardInterrupt at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> InterruptFlag:
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.signal_name = signal.Signals(signum).name
        again = "press Ctrl-C again" if signum == signal.SIGINT else "send it again"
        log.warning(f"{self.signal_name}: stopping at the next safe point ({again} to abort)")

    def __exit__(self, *exc) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
