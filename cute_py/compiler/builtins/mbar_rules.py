"""What the trace of a kernel knows of its mbarriers, and the rules checked on it when the kernel is finished.

The mbarrier builtins (``arch_mbar``), the TMA loads of ``cute.copy`` and the pipelines note each operation on an
mbarrier here (``note``): initialisations with their arrival counts, arrivals, expected transaction bytes, waits
and the TMA loads completing bytes on a barrier, with the user's line, the run-time scopes around it and which
barrier it names. A barrier is named by its static shared-memory byte address, or, for a pipeline's stage
``array[state.index]`` with a run-time index, by the array and the index value (the same stage while ``state`` is
not advanced); any other pointer may name any barrier of its allocation. A scope opened by an election (``with
elect_one()``, the lane issuing a TMA copy) counts as its enclosing scope: the operations of one warp's elected
lane happen once per warp, as the warp's TMA loads do.

When the kernel is finished (and its launch's block and cluster are static) these rules raise ``TraceError`` at
the user's line:

- **a wait on a barrier never initialised**: a wait on a static address that no ``mbarrier_init`` of the kernel
  names (nor one through a run-time pointer into its allocation);
- **an arrival count no launch satisfies**: a barrier initialised for ``count`` arrivals per phase and waited on
  (a wait not known to be for the completed parity 1), whose arrivals in the whole kernel can give fewer: each
  arrival operation outside run-time loops counts ``arrive_count`` for every thread of the block (a remote one,
  for every thread of the cluster). Skipped when an arrival has a run-time count, sits in a run-time loop, or
  goes through a pointer the trace cannot place;
- **transaction bytes that differ from the TMA loads**: where every expect_tx and every TMA load naming a barrier
  lies in one scope (the same run-time loop body and branch), with static byte counts and static multicast masks,
  and no other operation may complete bytes on it, the bytes expected per CTA must be what the loads bring to
  it: ``L0 + k * M_c`` for some set of ``k`` CTAs ``c`` of the cluster executing the code, ``L0`` the bytes of the
  CTA's own loads and ``M_c`` of the multicast loads whose mask holds ``c``. An expect_tx outside an election may
  run in several lanes (up to 32, and up to the barrier's arrival count for an arriving one): any such multiple
  is accepted.

Block dimensions are always static at ``launch(block=...)``; where the launch is unknown (no launch recorded for
the trace) the rules that need it are skipped.
"""

from __future__ import annotations

from typing import Any

from ...errors import TraceError, user_location
from ...tensor.pointer import AddressSpace, Pointer
from ..emit.sync import transaction_kind
from ..lang.builder import current

__all__ = ["note", "name_barrier", "mark_election", "threads_of_launch"]

WARP = 32
_ARRIVING = ("arrive", "expect_arrive")
_TX = ("expect", "expect_arrive", "load")


class _Event:
    __slots__ = ("kind", "key", "alloc", "value", "remote", "mask", "where", "group", "loop", "elected", "name")

    def __repr__(self):
        return f"_Event({self.kind}, {self.key}, {self.value}, {self.where})"


class _Ledger:
    def __init__(self, b):
        self.events = []
        self.elections = {}  # id(scope) -> scope of elected lanes
        self.named = {}  # id(pointer) -> (pointer, key)
        self.loads_noted = 0
        b.finish_checks.append(self.finish)

    # -- noting ----------------------------------------------------------------------------------------------
    def locate(self, b, ptr):
        """``(key, allocation start)`` of the barrier ``ptr`` names (``key`` None: any of the allocation, or of
        all shared memory when the allocation is None too)."""
        if not isinstance(ptr, Pointer):
            return None, None
        hit = self.named.get(id(ptr))
        if hit is not None and hit[0] is ptr:
            return hit[1], _alloc(b, ptr.base)
        if ptr.memspace in (AddressSpace.smem, AddressSpace.dsmem) and type(ptr.address) is int:
            return ("a", ptr.address), _alloc(b, ptr.address)
        return None, _alloc(b, ptr.base)

    def add(self, b, kind, ptr, value=None, remote=False, mask=None, name=""):
        ev = _Event()
        ev.kind, ev.value, ev.remote, ev.mask, ev.name = kind, value, remote, mask, name
        ev.key, ev.alloc = self.locate(b, ptr)
        ev.where = user_location()
        chain, s = [], b.scope
        while s is not None:
            chain.append(s)
            s = s.parent
        ev.group = tuple(s for s in chain if id(s) not in self.elections)
        ev.elected = len(ev.group) != len(chain)
        ev.loop = any("loop" in s.kind for s in chain)
        self.events.append(ev)
        b.undo_log.append(lambda: self.events.remove(ev))
        return ev

    # -- the rules -------------------------------------------------------------------------------------------
    def finish(self, b):
        launch = b.launch
        self._check_waits(b)
        if launch is None:
            return
        threads = threads_of_launch(launch)
        self._check_counts(threads)
        counts = _count_ops(b.func)
        if counts.get("load", 0) == sum(e.kind == "load" for e in self.events) and not counts.get("other"):
            self._check_bytes(b, threads[2])

    def _aliases(self, ev, key, alloc):
        """Whether ``ev`` may name the barrier ``key`` of allocation ``alloc``."""
        if ev.key == key:
            return True
        if ev.key is not None and ev.key[0] == "a" and key[0] == "a":
            return False  # two static addresses
        return ev.alloc is None or alloc is None or ev.alloc == alloc

    def _check_waits(self, b):
        inits = [e for e in self.events if e.kind == "init"]
        for w in self.events:
            if w.kind != "wait" or w.key is None or w.key[0] != "a":
                continue
            if not any(self._aliases(i, w.key, w.alloc) for i in inits):
                raise TraceError(f"{w.name}: the mbarrier at shared-memory byte {w.key[1]} is never initialised in "
                                 f"this kernel (no mbarrier_init names it): its phase never completes and the wait "
                                 f"hangs; initialise it (one thread, mbarrier_init(ptr, count)) and fence the "
                                 f"initialisation before waiting", where=w.where)

    def _check_counts(self, threads):
        block, cluster_threads, _ = threads
        for i in self.events:
            if i.kind != "init" or type(i.value) is not int or i.key is None or i.key[0] != "a":
                continue
            near = [e for e in self.events if e is not i and self._aliases(e, i.key, i.alloc)]
            if not any(e.kind == "wait" and e.value != 1 for e in near):
                continue  # nothing waits for a phase of it to complete
            arrivals = [e for e in near if e.kind in _ARRIVING]
            if any(type(e.value) is not int or e.loop for e in arrivals):
                continue  # arrivals the trace cannot bound
            if any(e.kind == "init" and e.key == i.key and e.value != i.value for e in near):
                continue  # initialised again with another count
            most = sum(e.value * (cluster_threads if e.remote else block) for e in arrivals)
            if i.value > most:
                ways = ", ".join(f"{e.name} at line {e.where[1]} ({e.value} per thread"
                                 f"{' of the cluster' if e.remote else ''})" for e in arrivals) or "none"
                raise TraceError(f"{i.name}: the mbarrier at shared-memory byte {i.key[1]} expects {i.value} arrivals "
                                 f"per phase, but the kernel's arrivals on it give at most {most} (a block of {block} "
                                 f"threads, a cluster of {cluster_threads}; arrivals: {ways}): its phase never "
                                 f"completes and its waits hang", where=i.where)

    def _check_bytes(self, b, n):
        tx = [e for e in self.events if e.kind in _TX]
        done = set()
        for ev in tx:
            if ev.key is None or ev.key in done:
                continue
            key = ev.key
            done.add(key)
            mine = [e for e in tx if e.key == key]
            if key[0] == "v":  # a run-time stage index: the only name of that allocation's barriers
                if any(e.key != key and (e.alloc is None or e.alloc == ev.alloc) for e in tx):
                    continue
            elif any(e.key != key and self._aliases(e, key, ev.alloc) for e in tx):
                continue
            if len({e.group for e in mine}) != 1 or any(e.remote for e in mine):
                continue
            expects = [e for e in mine if e.kind != "load"]
            loads = [e for e in mine if e.kind == "load"]
            if not expects or not loads or any(type(e.value) is not int for e in mine):
                continue
            if any(e.mask is not None and type(e.mask) is not int for e in loads):
                continue
            _balance(self, key, expects, loads, n)


def _balance(ledger, key, expects, loads, n):
    """``TraceError`` unless the bytes ``expects`` expect can be what ``loads`` bring to the CTAs running them."""
    if all(e.elected for e in expects):
        lanes = [1]
    elif not any(e.elected for e in expects):
        top = WARP
        inits = [e for e in ledger.events if e.kind == "init" and e.key == key]
        if key[0] == "a" and all(e.kind == "expect_arrive" for e in expects) and len(inits) == 1 \
                and type(inits[0].value) is int:
            top = min(WARP, inits[0].value)  # each arriving lane is one of the barrier's arrivals
        lanes = range(1, top + 1)
    else:
        return
    expected = sum(e.value for e in expects)
    own = sum(e.value for e in loads if e.mask is None)
    per_cta = [sum(e.value for e in loads if e.mask is not None and e.mask >> c & 1) for c in range(n)]
    for t in lanes:
        for k in range(1, n + 1):
            if sum(own + k * m == t * expected for m in per_cta) >= k:
                return
    first = expects[0]
    what = f"the mbarrier at shared-memory byte {key[1]}" if key[0] == "a" else "the pipeline stage's mbarrier"
    parts = "; ".join(f"{e.value} bytes at line {e.where[1]}" + ("" if e.mask is None else f" multicast to mask "
                                                                 f"{e.mask:#b}") for e in loads)
    lanes_note = "" if list(lanes) == [1] else f" (or a multiple up to {max(lanes)}, one per lane running it)"
    if any(e.mask is not None for e in loads):
        got = (f"in a cluster of {n} CTAs, CTA c receives {own} bytes of its own loads plus {per_cta} [c] bytes from "
               f"each CTA multicasting to it; no set of CTAs running this code receives exactly {expected}, so CTAs "
               f"wait for bytes never sent")
    else:
        late = "never completes" if expected > own else "completes before all the data lands"
        got = f"the loads bring {own} bytes, so the phase {late}"
    raise TraceError(f"{first.name}: {what} expects {expected} transaction bytes per phase{lanes_note}, but the TMA "
                     f"loads completing on it in the same code are {parts}: {got}; expect exactly the bytes of the "
                     f"loads", where=first.where)


def _alloc(b, address):
    region = getattr(b, "smem_region", None)
    if region is None or type(address) is not int:
        return None
    found = region.allocation_at(address)
    return None if found is None else found[0]


def _count_ops(func):
    """``{"load": TMA tile loads, "other": other ops completing transaction bytes}`` in the kernel's IR."""
    out = {"load": 0, "other": 0}
    todo = [func]
    while todo:
        op = todo.pop()
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    o = inner.operation
                    kind = transaction_kind(o)
                    if kind is not None:
                        out[kind] += 1
                    if len(o.regions):
                        todo.append(o)
    return out


def threads_of_launch(launch: Any) -> tuple[int, int, int]:
    """``(threads of a block, threads of a cluster, CTAs of a cluster)`` of a recorded launch."""
    bx, by, bz = launch.block
    cx, cy, cz = launch.cluster
    block, ctas = bx * by * bz, cx * cy * cz
    return block, block * ctas, ctas


def _ledger(b):
    ledger = getattr(b, "mbar_ledger", None)
    if ledger is None:
        ledger = b.mbar_ledger = _Ledger(b)
    return ledger


def note(kind: str, ptr: Any, value: Any = None, *, remote: bool = False, mask: Any = None, name: str = "") -> None:
    """Note an operation on the mbarrier ``ptr`` in the kernel being traced: ``kind`` is ``"init"`` (``value``
    the arrival count), ``"arrive"`` (the count), ``"expect"`` / ``"expect_arrive"`` (the bytes), ``"wait"``
    (the parity) or ``"load"`` (a TMA load's bytes, ``mask`` its multicast mask); a value not a static int is
    unknown. ``remote``: on a peer CTA's barrier (or arriving from any CTA of the cluster)."""
    b = current()
    if type(value) is not int:
        value = getattr(value, "value", None)  # a typed constant (cute.Int32(2)) is static
        value = value if type(value) is int else None
    if mask is not None and type(mask) is not int:
        mask = "dynamic"
    _ledger(b).add(b, kind, ptr, value, remote, mask, name)


def name_barrier(ptr: Pointer, array_base: Pointer, index: Any) -> Pointer:
    """Name ``ptr`` (``array_base + index``, a run-time stage index) as the stage ``index`` of that array."""
    if type(index) is int or not isinstance(ptr, Pointer):
        return ptr
    b = current()
    ledger = _ledger(b)
    base = array_base.address if type(array_base.address) is int else id(array_base)
    ledger.named[id(ptr)] = (ptr, ("v", base, id(index)), index)  # the index kept alive: its id stays its own
    return ptr


def mark_election() -> None:
    """The innermost run-time scope is an election (one lane of each warp runs it); see the module."""
    b = current()
    ledger = _ledger(b)
    ledger.elections[id(b.scope)] = b.scope
