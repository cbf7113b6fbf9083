"""The garbage collector while a run judges: the heap that was there before the run is left out
of collections, and young objects are collected less often.

Once litellm is imported, the process holds about half a million objects the collector tracks
(litellm, pydantic, openai and the other modules, the cost map) that live as long as the
process. CPython's full collection walks all of them: about 0.3 s on the 2-core benchmark
machine, during which the event loop stands still and every call in flight waits; at
concurrency 32 one came every few seconds (``bench/README.md``, throughput, third pass). During
a run that heap is frozen (:func:`gc.freeze`: a full collection then walks only what the run
made) and the first generation's threshold is raised to :data:`YOUNG_THRESHOLD` (fewer, larger
young collections; CPython's default is 700). Cycles are still collected; objects without
cycles are freed at once as always.

Both are undone when the last run in the process ends (runs may overlap: the HTTP service), so
nothing is kept from collection for good. A heap someone else froze before (a server that
freezes before it forks) is left as it is.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: objects allocated (less those freed) before a young collection, while a run judges
YOUNG_THRESHOLD = 50_000

_lock = threading.Lock()
_runs = 0
#: the thresholds before the first run, and whether that run froze the heap
_before: tuple[tuple[int, int, int], bool] | None = None


@contextmanager
def run_heap() -> Iterator[None]:
    """While a run judges: the heap frozen and young collections less often (see above)."""
    global _runs, _before
    with _lock:
        if _runs == 0:
            thresholds = gc.get_threshold()
            froze = gc.get_freeze_count() == 0
            if froze:
                gc.freeze()
            gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
            _before = (thresholds, froze)
        _runs += 1
    try:
        yield
    finally:
        with _lock:
            _runs -= 1
            if _runs == 0 and _before is not None:
                thresholds, froze = _before
                _before = None
                gc.set_threshold(*thresholds)
                if froze:
                    gc.unfreeze()
