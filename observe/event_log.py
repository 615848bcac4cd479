"""A group's exchange, kept for its scenario file should a finding come, in bounded memory.

observe judges a group for as long as it lives (hours, under real traffic), and a finding's
scenario replays the group's whole exchange from its first request. Kept as a list, that exchange
grew the judge process by about 1 KB per judged request (benchmarks/observe_results.md). Here the
newest `memory_events` stay in memory and older ones are pickled, a chunk at a time, into an
anonymous temporary file (unlinked at once, so nothing is left behind, and never a product of the
command): memory stays flat, the disk holds the history, and iteration gives back every event in
order.
"""

from __future__ import annotations

import pickle
import tempfile
from typing import IO, Iterator, Optional

from fuzz.engine import Event

MEMORY_EVENTS = 1024  # events kept in memory before the oldest chunk goes to disk


class EventLog:
    """Every event appended, in order; memory holds at most `memory_events` of them."""

    def __init__(self, memory_events: int = MEMORY_EVENTS) -> None:
        if memory_events < 1:
            raise ValueError("memory_events must be positive")
        self.memory_events = memory_events
        self._recent: list[Event] = []
        self._disk: Optional[IO[bytes]] = None
        self._on_disk = 0

    def append(self, event: Event) -> None:
        self._recent.append(event)
        if len(self._recent) >= self.memory_events:
            if self._disk is None:
                self._disk = tempfile.TemporaryFile(prefix="groupspec-observe-events-")
            self._disk.seek(0, 2)
            pickle.dump(self._recent, self._disk, protocol=pickle.HIGHEST_PROTOCOL)
            self._on_disk += len(self._recent)
            self._recent = []

    def __len__(self) -> int:
        return self._on_disk + len(self._recent)

    def in_memory(self) -> int:
        return len(self._recent)

    def __iter__(self) -> Iterator[Event]:
        recent, on_disk, offset, read = list(self._recent), self._on_disk, 0, 0
        while read < on_disk and self._disk is not None:
            self._disk.seek(offset)  # (an append between two chunks moves the file's position)
            chunk: list[Event] = pickle.load(self._disk)
            offset = self._disk.tell()
            read += len(chunk)
            yield from chunk
        yield from recent

    def close(self) -> None:
        if self._disk is not None:
            self._disk.close()
            self._disk = None
