"""All-reduce across GPUs through symmetric memory (``examples.symmetric`` sets it up with PyTorch).

Every rank holds one buffer of the same size at the same offset of a symmetric allocation, mapped into every
other rank's address space, and a *signal pad* of 32-bit flags beside it. To this kernel a peer's buffer and
pad are ordinary global tensors (``bufs[w]``, ``pads[w]``: rank ``w``'s memory as this GPU sees it over
NVLink); it reads and writes them with 128-bit vector loads and stores.

::

    all_reduce(x, out, bufs, pads, state, rank, timeout_ns, two_shot=False)   # out = sum over ranks of x

*One shot* (small messages; ``bufs[w]`` of ``2 W n`` elements, two halves of ``W`` slots): store ``x`` into
slot ``rank`` of every peer's buffer, barrier, sum the slots of this rank's own buffer (its own term read from
``x``). Every rank sends ``W - 1`` copies of its data over NVLink: the fewest steps, the most traffic; as stores,
which NVLink carries faster than loads (a form that loaded the peers' buffers after the barrier was up to 1.3x
slower on 4 H200s), and every load after the barrier is local. Consecutive calls alternate between the halves,
counted on the device in ``state[1]`` (the last block of a call to finish, counted in ``state[2]``, advances
it), so no second barrier is needed: a rank writes the half of call ``k`` again in call ``k + 2``, after the
barrier of call ``k + 1``, which every peer reaches only after it finished reading call ``k``. The count lives on
the device so that a CUDA graph's replays alternate too.

*Two shot* (large messages; ``bufs[w]`` of ``buffer_elements(n, ...)``: a scratch region and a gather region of
``W`` chunks each, a chunk ``ceil(n / vec / W)`` vectors). Scatter: chunk ``c`` of ``x`` goes into slot ``rank`` of
peer ``c``'s scratch; barrier; reduce: this rank sums its chunk of every rank's ``x`` in rank order (the peers'
from its scratch, its own from ``x``) and writes the sum into chunk ``rank`` of every peer's gather region and of
``out``; barrier; copy the peers' chunks of the gather region to ``out``. Every NVLink transfer is a store (no
remote loads), ``2 (W - 1) / W`` of the data per rank, and rank ``r`` visits the peers starting from ``r + 1``, so
that no rank's links sit idle while another's are shared by all. A next call's stores into a peer's regions come
after its barrier, which that peer reaches only after it read them.

**Barriers.** Block ``b`` of every rank handles the same vectors (the grid and the split depend only on the
element count, the type and the world size), so blocks synchronise pairwise with block ``b`` of the other ranks,
never grid-wide. Each barrier has an *epoch*, counted from the calls in ``state[1]`` (``2 k + 1`` and ``2 k + 2``
for call ``k``), the same on every rank. The first thread of warp ``w`` stores ``epoch << 32 | signal`` into
``pads[w][b, rank]`` (64 bits, release, system scope, after a block barrier so that the block's accesses come
first; no round trip), then waits until ``pads[rank][b, w]`` holds this epoch or a later one (acquire, system
scope; relaxed where nothing is read after it). A later epoch is a peer already past this barrier, which it
could pass only after this rank's flag arrived. One warp per peer: the flags travel in parallel, and nothing is
ever reset. The signal encodes the element count and the algorithm: a peer at the same epoch with another
count or algorithm is caught (its flag holds another signal) instead of read out of step.

**Bounded waits.** Every wait ends by ``timeout_ns`` (the ``%globaltimer`` clock). A rank that did not arrive
in time, or arrived with another element count, is recorded in ``state[0]`` as ``code << 8 | rank`` (code 1:
late, 2: another count or algorithm; the first error wins and stays) and the block skips its work: ``out`` is
then not the sum, which the host learns from ``state[0]`` (``examples.symmetric`` raises naming the rank). After
such an error the pads may hold stray flags: the communicator is spent.

Sums are in Float32 for 16-bit and 32-bit floats (one rounding to the output type) and in wrapping Int32 for
Int32 (exact, as NCCL's). The order of the terms is rank 0, 1, ... on every rank, so every rank gets the same bits.
"""

import cute_py as cute
from cute_py import arch
from cute_py.atom import CopyUniversalOp

__all__ = ["all_reduce", "all_reduce_kernel", "all_reduce_grid", "buffer_elements", "vector_width", "MAX_WORLD",
           "MAX_BLOCKS", "THREADS", "PAD_SHAPE", "STATE_WORDS", "ERROR_LATE", "ERROR_COUNT"]

THREADS = 512
MAX_WORLD = 8
MAX_BLOCKS = 128
PAD_SHAPE = (MAX_BLOCKS, MAX_WORLD, 2)   # (block, rank) flags of 64 bits: (epoch << 32) | signal
ERROR_LATE, ERROR_COUNT = 1, 2
STATE_WORDS = 3                          # a failed wait, the calls so far, blocks done in this call
DTYPES = ("Float32", "BFloat16", "Float16", "Int32")


def vector_width(bits, n):
    """Elements of ``bits`` per access: up to 128 bits, dividing ``n`` (every vector whole and aligned)."""
    v = 128 // bits
    while n % v:
        v //= 2
    return v


def buffer_elements(n, bits, world, two_shot):
    """The elements each rank's buffer must have for ``n`` elements of ``bits``: two halves of ``world`` slots of
    ``n`` for one shot; for two shot a scratch region and a gather region of ``world`` chunks each (of whole
    vectors)."""
    vec = vector_width(bits, n)
    return 2 * world * cute.ceil_div(n // vec, world) * vec if two_shot else 2 * world * n


def all_reduce_grid(n, vec, world, two_shot, max_blocks=MAX_BLOCKS):
    """``(blocks, vectors per chunk, lanes)``: the grid both algorithms use for ``n`` elements in vectors of
    ``vec``; ``lanes`` threads of each block (a multiple of 32, at most ``THREADS``) take a vector each, so that
    a chunk of a few vectors per thread still spreads over up to ``max_blocks`` SMs."""
    vectors = n // vec
    chunk = cute.ceil_div(vectors, world) if two_shot else vectors
    lanes = min(THREADS, max(32, cute.ceil_div(cute.ceil_div(chunk, max_blocks), 32) * 32))
    return max(1, min(max_blocks, cute.ceil_div(chunk, lanes))), chunk, lanes


@cute.jit
def _record(error, code, peer, failed):
    """Record a failed wait (the first error wins) and mark this block's work as skipped."""
    arch.atomic_cas(error.iterator, cmp=0, val=code * 256 + peer, sem="relaxed", scope="sys")
    failed[0] = 1


@cute.jit
def _barrier(pads, rank, world, epoch, signal, deadline, error, failed, acquire):
    """Block ``b`` of every rank meets here (see the module): the first thread of warp ``w`` stores this rank's
    ``(epoch, signal)`` into its flag in rank ``w``'s pad (release) and waits until rank ``w``'s flag in this rank's
    pad holds this epoch or a later one (one warp per peer, so the ranks' flags travel in parallel); every wait
    bounded by ``deadline``. ``acquire``: the block reads what the peers stored before the barrier (else the
    wait is relaxed)."""
    b, _, _ = arch.block_idx()
    t, _, _ = arch.thread_idx()
    slot = b * PAD_SHAPE[1] * 2                           # pads[.][b, 0, 0]
    mine = (epoch.to(cute.Int64) << 32) | signal
    arch.sync_threads()                      # the block's loads and stores come before the flags
    for w in cute.range_constexpr(world):
        if t == w * 32:
            arch.store(cute.recast_ptr(pads[w].iterator + slot + 2 * rank, dtype=cute.Int64), mine, sem="release",
                       scope="sys")
            down = cute.recast_ptr(pads[rank].iterator + slot + 2 * w, dtype=cute.Int64)
            while failed[0] == 0:
                theirs = arch.load(down, cute.Int64, sem="acquire" if acquire else "relaxed", scope="sys")
                ahead = (theirs >> 32).to(cute.Int32) - epoch      # wraps: peers are a barrier or two apart
                if ahead >= 0:
                    if ahead == 0 and (theirs & 0xFFFFFFFF).to(cute.Int32) != signal:
                        _record(error, ERROR_COUNT, w, failed)
                    break
                if arch.globaltimer() > deadline:
                    _record(error, ERROR_LATE, w, failed)
    arch.sync_threads()                      # the peers' stores come before the block's loads


def _atom(t, vec):
    """The copy atom of ``vec`` elements of ``t`` (128 bits at most)."""
    return cute.make_copy_atom(CopyUniversalOp(), t.element_type, vec * t.element_type.width)


@cute.jit
def _load_vector(src, i, vec):
    """Vector ``i`` of ``src``, in registers."""
    frag = cute.make_rmem_tensor((vec,), src.element_type)
    cute.copy(_atom(src, vec), cute.local_tile(src, (vec,), (i,)), frag)
    return frag


@cute.jit
def _vec_copy2(src, i, dst, k, vec):
    """Vector ``i`` of ``src`` to vector ``k`` of ``dst``."""
    cute.copy(_atom(dst, vec), _load_vector(src, i, vec), cute.local_tile(dst, (vec,), (k,)))


@cute.jit
def _sum_vectors(parts, vec, acc_type):
    """The sum, in ``acc_type`` and in the order given, of vector ``i`` of ``t`` for each ``(t, i)`` of ``parts``."""
    total = None
    for t, i in parts:
        v = _load_vector(t, i, vec).load().to(acc_type)
        total = v if total is None else total + v
    return total


@cute.jit
def _store_vector(values, dst, i, vec):
    frag = cute.make_rmem_tensor((vec,), dst.element_type)
    frag.store(values.to(dst.element_type))
    cute.copy(_atom(dst, vec), frag, cute.local_tile(dst, (vec,), (i,)))


@cute.kernel
def all_reduce_kernel(x, out, bufs, pads, state, rank, world, vec, chunk, blocks, lanes, two_shot, signal,
                      timeout_ns):
    b, _, _ = arch.block_idx()
    t, _, _ = arch.thread_idx()
    failed = arch.SmemAllocator().allocate_tensor(cute.Int32, cute.Layout(1))
    if t == 0:
        failed[0] = 0
    deadline = arch.globaltimer() + timeout_ns
    acc_type = cute.Int32 if x.element_type is cute.Int32 else cute.Float32
    vectors = cute.size(x) // vec
    # block b's vectors of a chunk: b * lanes + t (t < lanes), then every blocks * lanes
    first, step = b * lanes + t, blocks * lanes
    stop = cute.where(t < lanes, chunk, 0)
    calls = state[1]
    epoch = calls * 2 + 1                    # this call's barriers: epochs 2 calls + 1 and + 2 (a fresh pad holds 0)
    if two_shot:
        # phase 1: chunk c of x into slot `rank` of peer c's scratch (vectors c * chunk + j, for this block's j);
        # rank r starts with chunk r + 1, so that at any time every rank writes to another peer
        for k in cute.range_constexpr(world - 1):
            c = (rank + 1 + k) % world
            for j in range(first, stop, step):
                if c * chunk + j < vectors:
                    _vec_copy2(x, c * chunk + j, bufs[c], rank * chunk + j, vec)
        _barrier(pads, rank, world, epoch, signal, deadline, state, failed, True)
        if failed[0] == 0:
            # phase 2: this rank's chunk summed over its scratch slots (its own term read from x), stored into every
            # peer's gather region and into out
            for j in range(first, stop, step):
                if rank * chunk + j < vectors:
                    parts = [(x, rank * chunk + j) if r == rank else (bufs[rank], r * chunk + j) for r in range(world)]
                    total = _sum_vectors(parts, vec, acc_type)
                    for k in cute.range_constexpr(world - 1):
                        w = (rank + 1 + k) % world
                        _store_vector(total, bufs[w], (world + rank) * chunk + j, vec)
                    _store_vector(total, out, rank * chunk + j, vec)
            _barrier(pads, rank, world, epoch + 1, signal, deadline, state, failed, True)
            if failed[0] == 0:
                # phase 3: the peers' chunks from the gather region out
                for k in cute.range_constexpr(world - 1):
                    c = (rank + 1 + k) % world
                    for j in range(first, stop, step):
                        if c * chunk + j < vectors:
                            _vec_copy2(bufs[rank], (world + c) * chunk + j, out, c * chunk + j, vec)
    else:
        # x into slot `rank` of this call's half of every peer's buffer (stores only), peers from rank + 1; after
        # the barrier the W slots of this rank's own half (its own term read from x) summed in rank order
        half = (calls & 1) * (world * vectors)
        for j in range(first, stop, step):
            v = _load_vector(x, j, vec)
            for k in cute.range_constexpr(world - 1):
                peer = bufs[(rank + 1 + k) % world]
                cute.copy(_atom(x, vec), v, cute.local_tile(peer, (vec,), (half + rank * vectors + j,)))
        _barrier(pads, rank, world, epoch, signal, deadline, state, failed, True)
        if failed[0] == 0:
            for j in range(first, stop, step):
                parts = [(x, j) if r == rank else (bufs[rank], half + r * vectors + j) for r in range(world)]
                _store_vector(_sum_vectors(parts, vec, acc_type), out, j, vec)
    # the last block to finish counts the call (the next call's epochs and one-shot half)
    arch.sync_threads()
    if t == 0:
        if arch.atomic_add(state.iterator + 2, 1, sem="acq_rel", scope="gpu") == blocks - 1:
            state[2] = 0
            state[1] = calls + 1


def _dims(t):
    """A tensor's shape and strides as tuples (a 1-D tensor's are plain ints)."""
    shape, stride = t.shape, t.stride
    return (shape, stride) if type(shape) is tuple else ((shape,), (stride,))


def _check(x, out, bufs, pads, state, rank, two_shot):
    world = len(bufs)
    if not 1 <= world <= MAX_WORLD or len(pads) != world:
        raise cute.CuteValueError(f"all_reduce: one buffer and one signal pad per rank, 1 to {MAX_WORLD} ranks; "
                                  f"got {len(bufs)} buffers and {len(pads)} pads")
    if not 0 <= rank < world:
        raise cute.CuteValueError(f"all_reduce: rank must be in [0, {world}), got {rank}")
    if x.element_type.name not in DTYPES:
        raise cute.CuteTypeError(f"all_reduce sums {', '.join(DTYPES)}, got {x.element_type.name}")
    if len(_dims(x)[0]) != 1:
        raise cute.CuteValueError(f"all_reduce: x must be a 1-D tensor, got the shape {x.shape}")
    n = _dims(x)[0][0]
    length = buffer_elements(n, x.element_type.width, world, two_shot)
    vectors = length // vector_width(x.element_type.width, n)
    if vectors >= 1 << 31:
        raise cute.CuteValueError(f"all_reduce indexes the buffers' vectors in 32 bits: {n} elements of "
                                  f"{x.element_type.name} make buffers of {vectors} vectors, at most 2^31 - 1")
    for what, t, want in [("out", out, n)] + [(f"bufs[{w}]", bf, length) for w, bf in enumerate(bufs)]:
        if t.element_type is not x.element_type or _dims(t)[0] != (want,):
            form = "two shot" if two_shot else "one shot"
            raise cute.CuteValueError(f"all_reduce: {what} must be a 1-D {x.element_type.name} tensor of {want} "
                                      f"elements (buffer_elements for {form} of {n}), "
                                      f"got a {t.element_type.name} tensor of shape {t.shape}")
    for w, p in enumerate(pads):
        if p.element_type is not cute.Int32 or _dims(p)[0] != PAD_SHAPE:
            raise cute.CuteValueError(f"all_reduce: pads[{w}] must be an Int32 tensor of shape {PAD_SHAPE}, got a "
                                      f"{p.element_type.name} tensor of shape {p.shape}")
    if state.element_type is not cute.Int32 or _dims(state)[0] != (STATE_WORDS,):
        raise cute.CuteValueError(f"all_reduce: state must be an Int32 tensor of {STATE_WORDS} elements (zeros at "
                                  f"first), got a {state.element_type.name} tensor of shape {state.shape}")
    for what, t in [("x", x), ("out", out)] + [(f"bufs[{w}]", bf) for w, bf in enumerate(bufs)]:
        if n > 1 and _dims(t)[1] != (1,):
            raise cute.CuteValueError(f"all_reduce: {what} must be contiguous, got the stride {t.stride}")
    return world, n


@cute.jit
def all_reduce(x, out, bufs, pads, state, rank, timeout_ns, two_shot=False):
    """``out = sum over ranks w of x_w`` (``x`` this rank's contribution; see the module): ``bufs``/``pads`` the
    ranks' symmetric buffers (1-D, x's type, ``buffer_elements`` long) and signal pads (Int32, ``PAD_SHAPE``), in rank
    order; ``state`` this rank's Int32 device words (a failed wait, the one-shot calls, a block count; zeros at
    first, kept from call to call); ``rank`` this rank (static);
    ``timeout_ns`` the bound of every wait (static, as ``rank`` is: a call of only tensors takes the generated
    launch path). Every rank must call with the same length, type and algorithm."""
    if type(timeout_ns) is not int or not 0 < timeout_ns < 1 << 62:
        raise cute.CuteValueError(f"all_reduce: timeout_ns must be a positive int of nanoseconds below 2^62, got "
                                  f"{timeout_ns!r}")
    world, n = _check(x, out, bufs, pads, state, rank, two_shot)
    vec = vector_width(x.element_type.width, n)
    blocks, chunk, lanes = all_reduce_grid(n, vec, world, two_shot)
    signal = 1 + 2 * (n % (1 << 29)) + int(two_shot)
    all_reduce_kernel(x, out, bufs, pads, state, rank, world, vec, chunk, blocks, lanes, two_shot, signal,
                      timeout_ns).launch(grid=blocks, block=THREADS)
