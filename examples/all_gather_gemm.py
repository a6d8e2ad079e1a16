"""``AllGatherGemm``: an all-gather of A's row shards across GPUs fused with kernel 13's GEMM
(``C = all_gather(A) @ B^T``), on PyTorch's symmetric memory, one process per GPU.

::

    ag = AllGatherGemm(shard_rows=2048, k=8192, dtype=torch.bfloat16)   # collective: every rank constructs it
    c = ag(a_shard, b)      # a_shard: (2048, 8192) this rank's rows; b: (N, 8192); c: (world * 2048, N)

Each rank holds a symmetric ``(world * shard_rows, k)`` buffer for the gathered A and a flag per shard in its
signal pad. A call:

1. meets the other ranks (``symm_mem`` barrier, on torch's current stream): every rank's previous GEMM has
   finished reading its buffer and cleared its flags, so rows may be written into it again;
2. copies this rank's shard into its own buffer (current stream), and, on a side stream, into every peer's buffer
   in the order ``rank + 1``, ``rank + 2``, ... (copy engines over NVLink, leaving the SMs to the GEMM), raising
   the peer's flag for this shard after each copy (``stream_write_value32``: after the copy, with a memory
   barrier);
3. runs the GEMM at once (current stream): its CTAs take this rank's own shard's tiles first, then the shards in
   the order they are sent, and the producer thread of a CTA waits on a shard's flag before its first load of
   those rows (``examples.gemm_gather``), so the products of early shards overlap the copies of late ones;
4. clears this rank's flags after the GEMM, and joins the side stream.

Every flag wait is bounded by ``timeout_s``: a shard that does not come is recorded on the device and the call
raises a ``CuteError`` naming its rank (with ``check=False``, as inside a CUDA-graph capture, ``check()`` raises
it later). NVLink multicast is not used.
"""

from __future__ import annotations

import math

import cute_py as cute

from .gemm import launch_gemm
from .gemm_gather import GATHER_LATE
from .symmetric import RecordedErrors, rendezvous

__all__ = ["AllGatherGemm", "all_gather_gemm"]

FLAGS_AT = 1024          # the flags' first int32 in the signal pad (the symm_mem barrier uses the first ones)


@cute.jit
def all_gather_gemm(a_full, b, c, flags, state, shard_rows, rank, world, timeout_ns):
    """``c = a_full @ b^T`` with kernel 13, waiting for shard ``s`` of ``a_full``'s rows until ``flags[s]`` is
    set (``examples.gemm_gather``); ``state[0]`` records a shard that did not come within ``timeout_ns``."""
    launch_gemm(a_full, b, c, None, None, False, "tma", None, None, 8, None, None, 1.0, None, None, None,
                gather_flags=flags, gather_state=state, gather=(shard_rows, rank, world, timeout_ns))


class AllGatherGemm(RecordedErrors):
    """``c = all_gather(a_shard over the group's ranks, along rows) @ b^T`` (see the module)."""

    def __init__(self, shard_rows: int, k: int, dtype, group=None, *, timeout_s: float = 10.0):
        import torch
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        if not dist.is_initialized():
            raise cute.CuteValueError("AllGatherGemm needs torch.distributed initialised (one process per GPU)")
        if type(shard_rows) is not int or shard_rows < 1 or shard_rows % 128:
            raise cute.CuteValueError(f"AllGatherGemm: shard_rows must be a positive multiple of 128 (the GEMM's "
                                      f"tile rows), got {shard_rows!r}")
        if type(k) is not int or k < 1 or k % 8:
            raise cute.CuteValueError(f"AllGatherGemm: k must be a positive multiple of 8 (16-byte rows), got {k!r}")
        if not (timeout_s > 0 and math.isfinite(timeout_s)):
            raise cute.CuteValueError(f"AllGatherGemm: timeout_s must be positive and finite, got {timeout_s!r}")
        self.group = group if group is not None else dist.group.WORLD
        self.rank, self.world = dist.get_rank(self.group), dist.get_world_size(self.group)
        self.shard_rows, self.k, self.dtype = shard_rows, k, dtype
        self.timeout_s = timeout_s
        device = torch.device("cuda", torch.cuda.current_device())
        self.a_full = symm_mem.empty((self.world * shard_rows, k), dtype=dtype, device=device)
        self.handle = rendezvous(symm_mem, self.a_full, self.group)
        if self.handle.signal_pad_size < (FLAGS_AT + self.world) * 4:
            raise cute.CuteValueError(f"AllGatherGemm: the signal pads hold {self.handle.signal_pad_size} bytes, "
                                      f"the flags need {(FLAGS_AT + self.world) * 4}")
        self.peers = [self.handle.get_buffer(r, (self.world * shard_rows, k), dtype) for r in range(self.world)]
        # the peers' flags as the stream writes take them (uint32), this rank's as the kernel reads them (Int32)
        self.peer_flags = [self.handle.get_signal_pad(r, (self.world,), torch.uint32, FLAGS_AT)
                           for r in range(self.world)]
        self.flags = self.handle.get_signal_pad(self.rank, (self.world,), torch.int32, FLAGS_AT)
        self.flags.zero_()
        self.state = torch.zeros(1, dtype=torch.int32, device=device)
        self.side = torch.cuda.Stream(device)
        self._torch, self._symm_mem = torch, symm_mem
        dist.barrier(self.group)
        torch.cuda.synchronize()

    def __call__(self, a_shard, b, c=None, *, check: bool = True):
        torch = self._torch
        rows = slice(self.rank * self.shard_rows, (self.rank + 1) * self.shard_rows)
        if (not isinstance(a_shard, torch.Tensor) or a_shard.dtype != self.dtype
                or tuple(a_shard.shape) != (self.shard_rows, self.k) or not a_shard.is_contiguous()):
            raise cute.CuteValueError(f"AllGatherGemm: a_shard must be a contiguous {self.dtype} tensor of shape "
                                      f"{(self.shard_rows, self.k)}, got {getattr(a_shard, 'dtype', type(a_shard))} "
                                      f"{tuple(getattr(a_shard, 'shape', ()))}")
        if c is None:
            c = torch.empty((self.world * self.shard_rows, b.shape[0]), dtype=self.dtype, device=a_shard.device)
        self._before_call(check)
        main = torch.cuda.current_stream()
        self.handle.barrier(channel=0, timeout_ms=int(self.timeout_s * 1000))
        self.a_full[rows].copy_(a_shard)
        self.side.wait_stream(main)
        with torch.cuda.stream(self.side):
            for step in range(1, self.world):
                peer = (self.rank + step) % self.world
                self.peers[peer][rows].copy_(a_shard)
                self._symm_mem._SymmetricMemory.stream_write_value32(self.peer_flags[peer], self.rank, 1)
        a_shard.record_stream(self.side)
        all_gather_gemm(self.a_full, b, c, self.flags, self.state, self.shard_rows, self.rank, self.world,
                        int(self.timeout_s * 1e9), stream=main)
        self.flags.zero_()
        main.wait_stream(self.side)
        if check:
            self.check()
        return c

    def _describe(self, code, shard):
        why = "did not arrive" if code == GATHER_LATE else f"failed (code {code})"
        return (f"AllGatherGemm on rank {self.rank}: the shard of rank {shard} {why} within {self.timeout_s:g} s; "
                f"the product is not all_gather(A) @ B^T and this object is spent")
