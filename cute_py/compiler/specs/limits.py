"""The hardware limits of a kernel launch on sm_90 (Hopper), checked when ``kernel(...).launch(...)`` is recorded.

=====================================  ======================================================================
rule                                   limit
=====================================  ======================================================================
threads per block                      ``block.x * block.y * block.z <= 1024``; ``x, y <= 1024``, ``z <= 64``
grid                                   ``1 <= x <= 2**31 - 1``; ``y, z <= 65535``
cluster                                ``x * y * z <= 8`` (portable); up to 16 with ``non_portable_cluster=True``
grid and cluster                       each grid dimension is a multiple of the cluster's
dynamic shared memory                  ``smem <= 232448`` bytes (227 KB) per block
TMA multicast                          a multicast atom's ``num_multicast`` CTAs fit in the cluster
=====================================  ======================================================================

A cluster of more than 8 CTAs is *non-portable*: it runs on H100/H200 but need not on later parts, and
CUDA refuses it unless the kernel opts in (``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED``).
``launch(..., non_portable_cluster=True)`` is that opt-in: the attribute is set when the kernel is loaded.
Each broken rule raises :class:`~cute_py.errors.ArgumentError` at the line of the launch, naming the
rule, the limit and the value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...errors import ArgumentError

if TYPE_CHECKING:
    from ...nvgpu.tma.atom import TmaCopyAtom

__all__ = ["MAX_BLOCK_THREADS", "MAX_BLOCK_DIM", "MAX_GRID_DIM", "MAX_PORTABLE_CLUSTER", "MAX_CLUSTER",
           "MAX_SMEM_BYTES", "check_launch", "check_multicast"]

MAX_SMEM_BYTES = 227 * 1024  # dynamic shared memory per block on sm_90
MAX_BLOCK_THREADS = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = ((1 << 31) - 1, 65535, 65535)
MAX_PORTABLE_CLUSTER = 8
MAX_CLUSTER = 16


def _show(grid):
    return "(" + ", ".join(str(g) if type(g) is int else g.describe() for g in grid) + ")"


def _fail(rule):
    raise _Broken(rule)


def check_launch(grid: tuple[int, int, int], block: tuple[int, int, int], cluster: tuple[int, int, int],
                 smem: int | None, non_portable_cluster: bool) -> None:
    """Raise ``ArgumentError`` (at the user's launch line) for a launch configuration the hardware rejects.

    ``grid``, ``block``, ``cluster``: 3-tuples of positive ints (grid entries may be run-time extents, checked
    per call: :func:`launch_problem`); ``smem``: bytes of dynamic shared memory or ``None``;
    ``non_portable_cluster``: the opt-in to clusters of 9 to 16 CTAs.
    """
    rule = launch_problem(grid, block, cluster, smem, non_portable_cluster)
    if rule is not None:
        raise ArgumentError(f"launch: {rule}")


def launch_problem(grid: tuple[int, int, int], block: tuple[int, int, int], cluster: tuple[int, int, int],
                   smem: int | None, non_portable_cluster: bool) -> str | None:
    """The first rule of :func:`check_launch` the configuration breaks (its text), or ``None``."""
    try:
        _check(grid, block, cluster, smem, non_portable_cluster)
    except _Broken as e:
        return str(e)
    return None


class _Broken(Exception):
    pass


def _check(grid, block, cluster, smem, non_portable_cluster):
    threads = block[0] * block[1] * block[2]
    if threads > MAX_BLOCK_THREADS:
        _fail(f"a block has at most {MAX_BLOCK_THREADS} threads, got block={block} ({threads} threads)")
    for axis, n, most in zip("xyz", block, MAX_BLOCK_DIM):
        if n > most:
            _fail(f"block.{axis} is at most {most}, got block={block}")
    for axis, n, most in zip("xyz", grid, MAX_GRID_DIM):  # a run-time extent is checked at each call
        if type(n) is int and n > most:
            _fail(f"grid.{axis} is at most {most}, got grid={_show(grid)}")
        if type(n) is int and n < 1:
            _fail(f"grid.{axis} is at least 1, got grid={_show(grid)} (a launch of no blocks)")
    size = cluster[0] * cluster[1] * cluster[2]
    if size > MAX_CLUSTER:
        _fail(f"a cluster has at most {MAX_CLUSTER} CTAs, got cluster={cluster} ({size} CTAs)")
    if size > MAX_PORTABLE_CLUSTER and not non_portable_cluster:
        _fail(f"a cluster of more than {MAX_PORTABLE_CLUSTER} CTAs is non-portable, got cluster={cluster} ({size} "
              f"CTAs): pass non_portable_cluster=True to launch it (it runs on H100/H200)")
    for axis, g, c in zip("xyz", grid, cluster):
        if type(g) is int and g % c:
            _fail(f"the grid is made of whole clusters: grid.{axis} must be a multiple of cluster.{axis}, got "
                  f"grid={_show(grid)}, cluster={cluster}")
    if smem is not None and smem > MAX_SMEM_BYTES:
        _fail(f"a block has at most {MAX_SMEM_BYTES} bytes ({MAX_SMEM_BYTES // 1024} KB) of dynamic shared memory "
              f"on sm_90, got smem={smem}")


def check_multicast(atoms: Iterable[tuple[str, TmaCopyAtom]], cluster: tuple[int, int, int]) -> None:
    """Raise ``ArgumentError`` when a TMA multicast atom of ``atoms`` spans more CTAs than the cluster has."""
    size = cluster[0] * cluster[1] * cluster[2]
    for where, atom in atoms:
        n = getattr(atom, "num_multicast", 1)
        if n > size:
            raise ArgumentError(f"launch: the TMA atom of {where} multicasts to {n} CTAs, but cluster={cluster} has "
                                f"{size}: launch with clusters of at least {n} CTAs (cluster=({n}, 1, 1) for instance)")
