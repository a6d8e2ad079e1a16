"""``_launches.launches_of`` (the host trace alone) gives the launches a full compile gives, and builds nothing."""

import cute_py as cute
import examples as ex
from cute_py.compiler.cache import store
from _launches import launches_of

F = cute.compiler.DeviceArraySpec


def test_the_host_trace_gives_the_launches_of_a_full_compile(monkeypatch):
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", "")    # no disk cache: a compile is a build
    rows = F("BFloat16", (3, 70001))
    before = store.stats["compiles"]
    traced = launches_of(ex.softmax_forward, rows, rows)
    assert store.stats["compiles"] == before       # nothing built
    built = cute.compile(ex.softmax_forward, rows, rows).launches
    assert store.stats["compiles"] == before + 1
    assert [(ln.name, ln.grid, ln.block, ln.cluster) for ln in traced] == \
        [(ln.name, ln.grid, ln.block, ln.cluster) for ln in built]
    assert traced[0].cluster == (7, 1, 1)    # staged by halves: 10 chunks a thread
