"""``SymmetricAllReduce``: the all-reduce kernel of ``examples.all_reduce`` over the ranks of a
``torch.distributed`` process group, on PyTorch's symmetric memory (``torch.distributed._symmetric_memory``).

::

    dist.init_process_group("nccl")                  # one process per GPU (torchrun)
    ar = SymmetricAllReduce(1 << 24, torch.bfloat16)  # collective: every rank constructs it
    y = ar(x)                                         # y = sum over ranks of x (x: at most 2^24 elements)

The constructor allocates one symmetric buffer of ``max_elements`` and exchanges it and its signal pads with the
other ranks (``rendezvous``): the kernel then sees every rank's buffer and pad as plain device tensors. A call
launches on torch's current stream. With ``check=True`` (the default) it waits for the kernel and raises a
``CuteError`` naming the rank that did not arrive within ``timeout_s`` or that called with another element
count; with ``check=False`` (needed inside a CUDA-graph capture) the error is recorded on the device and the next
``check()`` raises it. After such an error the communicator is spent: every later call raises.

``algorithm``: ``"one_shot"`` (every rank stores its data into every peer's buffer: lowest latency, for messages
of at most ``one_shot_bytes``), ``"two_shot"`` (reduce-scatter then all-gather: less NVLink traffic) or ``"auto"``
(one shot up to ``one_shot_bytes``). ``one_shot_bytes`` defaults to 1 MiB for more than two ranks and 8 MiB for
two, where the one shot was faster or as fast on 4 and 2 H200s; the one shot's region of the symmetric buffer holds
``2 W`` messages of that size. NVLink multicast (``multimem``) is not used.
"""

from __future__ import annotations

import math

import cute_py as cute

from .all_reduce import ERROR_COUNT, ERROR_LATE, MAX_WORLD, PAD_SHAPE, STATE_WORDS, all_reduce, buffer_elements

__all__ = ["SymmetricAllReduce", "RecordedErrors", "rendezvous"]

ALGORITHMS = ("auto", "one_shot", "two_shot")


def _aligned(elements):
    return -(-elements // 64) * 64


class RecordedErrors:
    """The host side of an error a kernel records on the device in ``self.state[0]`` (``code << 8 | rank``, the
    first error wins): a call with ``check=True`` under a CUDA-graph capture is refused (it would wait),
    ``check()`` waits for the current stream and raises, and once an error is seen every later call raises it.
    A subclass says what a code means (``_describe(code, rank)``)."""

    _recorded = 0

    def _before_call(self, check: bool) -> None:
        if check and self._torch.cuda.is_current_stream_capturing():
            raise cute.CuteValueError(f"{type(self).__name__}: check=True waits for the kernel, which a CUDA-graph "
                                      f"capture cannot; pass check=False and call check() after a replay")
        self._raise_recorded()

    def check(self) -> None:
        """Wait for the current stream; raise the ``CuteError`` of an error recorded on the device."""
        self._torch.cuda.current_stream().synchronize()
        self._recorded = self._recorded or int(self.state[0].item())
        self._raise_recorded()

    def _raise_recorded(self) -> None:
        if self._recorded:
            raise cute.CuteError(self._describe(self._recorded >> 8, self._recorded & 0xFF))


class SymmetricAllReduce(RecordedErrors):
    """An all-reduce over ``group`` (default: the world) for tensors of ``dtype`` of at most ``max_elements``."""

    def __init__(self, max_elements: int, dtype, group=None, *, timeout_s: float = 10.0,
                 one_shot_bytes: int | None = None):
        import torch
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        if not dist.is_initialized():
            raise cute.CuteValueError("SymmetricAllReduce needs torch.distributed initialised "
                                      "(dist.init_process_group, one process per GPU)")
        if type(max_elements) is not int or max_elements < 1:
            raise cute.CuteValueError(f"SymmetricAllReduce: max_elements must be a positive int, got {max_elements!r}")
        if not (timeout_s > 0 and math.isfinite(timeout_s)):
            raise cute.CuteValueError(f"SymmetricAllReduce: timeout_s must be positive and finite, got {timeout_s!r}")
        self.group = group if group is not None else dist.group.WORLD
        self.rank, self.world = dist.get_rank(self.group), dist.get_world_size(self.group)
        if self.world > MAX_WORLD:
            raise cute.CuteValueError(f"SymmetricAllReduce: at most {MAX_WORLD} ranks, the group has {self.world}")
        if one_shot_bytes is None:
            one_shot_bytes = (8 << 20) if self.world <= 2 else (1 << 20)
        if type(one_shot_bytes) is not int or one_shot_bytes < 0:
            raise cute.CuteValueError(f"SymmetricAllReduce: one_shot_bytes must be an int >= 0, got "
                                      f"{one_shot_bytes!r}")
        self.dtype, self.max_elements = dtype, max_elements
        self.timeout_ns, self.one_shot_bytes = int(timeout_s * 1e9), one_shot_bytes
        device = torch.device("cuda", torch.cuda.current_device())
        self._device = device.index
        self.bits = torch.empty((), dtype=dtype).element_size() * 8
        # the one-shot region, then the two-shot's (a call of one never writes where a peer's call of the other reads)
        self.one_shot_elements = min(max_elements, one_shot_bytes * 8 // self.bits)
        self._two_shot_at = _aligned(buffer_elements(self.one_shot_elements, self.bits, self.world, False))
        size = self._two_shot_at + buffer_elements(max_elements, self.bits, self.world, True)
        self.buffer = symm_mem.empty(size, dtype=dtype, device=device)
        self.handle = rendezvous(symm_mem, self.buffer, self.group)
        need = math.prod(PAD_SHAPE) * 4
        if self.handle.signal_pad_size < need:
            raise cute.CuteValueError(f"SymmetricAllReduce: the signal pads hold {self.handle.signal_pad_size} "
                                      f"bytes, the kernel's flags need {need} (symm_mem.set_signal_pad_size)")
        self.pads = tuple(self.handle.get_signal_pad(r, PAD_SHAPE, torch.int32) for r in range(self.world))
        self.state = torch.zeros(STATE_WORDS, dtype=torch.int32, device=device)
        self._bufs: dict[tuple, tuple] = {}      # (n, two_shot) -> the ranks' buffers
        self._torch = torch
        # torch's current stream on this GPU: the raw handle where torch offers it (a microsecond, against about
        # five for a torch.cuda.Stream object)
        self._current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or torch.cuda.current_stream

    def _buffers(self, n: int, two_shot: bool) -> tuple:
        """The ranks' buffers, as tensors on this GPU, of the length the kernel takes for ``n`` elements."""
        bufs = self._bufs.get((n, two_shot))
        if bufs is None:
            length = buffer_elements(n, self.bits, self.world, two_shot)
            at = self._two_shot_at if two_shot else 0
            bufs = tuple(self.handle.get_buffer(r, (length,), self.dtype, at) for r in range(self.world))
            self._bufs[n, two_shot] = bufs
        return bufs

    def __call__(self, x, out=None, *, algorithm: str = "auto", check: bool = True):
        """``out`` (a new tensor by default; x's shape and type, contiguous) = the sum over ranks of ``x``."""
        torch = self._torch
        if algorithm not in ALGORITHMS:
            raise cute.CuteValueError(f"SymmetricAllReduce: algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
        if not isinstance(x, torch.Tensor) or x.dtype != self.dtype or not x.is_contiguous():
            raise cute.CuteValueError(f"SymmetricAllReduce: x must be a contiguous {self.dtype} tensor, got "
                                      f"{getattr(x, 'dtype', type(x))}")
        n = x.numel()
        if not 1 <= n <= self.max_elements:
            raise cute.CuteValueError(f"SymmetricAllReduce: x has {n} elements; the buffer holds 1 to "
                                      f"{self.max_elements}")
        out = torch.empty_like(x) if out is None else out
        if out.dtype != x.dtype or out.shape != x.shape or not out.is_contiguous():
            raise cute.CuteValueError(f"SymmetricAllReduce: out must be a contiguous {x.dtype} tensor of shape "
                                      f"{tuple(x.shape)}, got {out.dtype} {tuple(out.shape)}")
        self._before_call(check)
        two_shot = algorithm == "two_shot" or (algorithm == "auto" and n > self.one_shot_elements)
        if not two_shot and n > self.one_shot_elements:
            raise cute.CuteValueError(f"SymmetricAllReduce: the one shot takes at most {self.one_shot_elements} "
                                      f"elements here (one_shot_bytes={self.one_shot_bytes}), got {n}")
        flat = (x, out) if x.dim() == 1 else (x.view(-1), out.view(-1))
        # positional arguments and the raw handle of torch's current stream: the jit call's shortest path
        all_reduce(*flat, self._buffers(n, two_shot), self.pads, self.state, self.rank, self.timeout_ns, two_shot,
                   stream=self._current_stream(self._device))
        if check:
            self.check()
        return out

    def _describe(self, code, peer):
        why = {ERROR_LATE: f"did not arrive within {self.timeout_ns / 1e9:g} s",
               ERROR_COUNT: "called with another element count"}.get(code, f"failed (code {code})")
        return (f"SymmetricAllReduce on rank {self.rank}: rank {peer} {why}; the result is not the sum and this "
                f"communicator is spent (its signal pads may hold stray flags)")


def rendezvous(symm_mem, buffer, group):
    """``symm_mem.rendezvous`` of ``buffer`` over ``group`` (enabling symmetric memory for the group first where
    the installed PyTorch asks for it)."""
    try:
        return symm_mem.rendezvous(buffer, group)
    except RuntimeError:
        symm_mem.enable_symm_mem_for_group(group.group_name)
        return symm_mem.rendezvous(buffer, group)
