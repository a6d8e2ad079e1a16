"""Static persistent tile scheduling (the CuTe DSL's ``cutlass.utils`` ``PersistentTileSchedulerParams``,
``StaticPersistentTileScheduler`` and ``WorkTileInfo``).

A persistent kernel launches as many clusters as can be resident (``get_grid_shape``, with
``HardwareInfo.get_max_active_clusters``) and each cluster walks the output tiles: cluster ``z`` of the grid takes
the clusters of tiles ``z``, ``z + P``, ``z + 2P``... (``P`` persistent clusters) in the order of
``problem_layout_ncluster_mnl`` — column-major over ``(M, N, L)`` clusters of tiles, or, with ``swizzle_size`` > 1,
groups of ``swizzle_size`` clusters along N (``raster_along_m``) or along M walked first. In a kernel::

    sched = StaticPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim())
    work = sched.initial_work_tile_info()
    while work.is_valid_tile:
        m, n, l = work.tile_idx   # the tile of this CTA (its cluster's tile times the cluster, plus its place)
        ...
        sched.advance_to_next_work()
        work = sched.get_current_work()

The scheduler and the work tile are values a run-time loop carries (their run-time parts: the linear index, the
count of tiles done, the coordinates and the validity). The problem shape may hold run-time extents.
"""

from __future__ import annotations

from typing import Any

from ..core.division import ceil_div, round_up
from ..core.products import product
from ..core.layout import Layout, make_layout
from ..errors import CuteValueError

__all__ = ["WorkTileInfo", "PersistentTileSchedulerParams", "StaticPersistentTileScheduler"]


def _int32(x: Any) -> Any:
    """``x`` as a run-time Int32 in a kernel (a Python int stays itself on the host)."""
    from ..device import active

    if active() is None:
        return x
    from ..tensor.dtypes import Int32

    return Int32(x)


class WorkTileInfo:
    """A tile of work: ``tile_idx`` (the CTA's ``(m, n, l)`` tile) and ``is_valid_tile`` (whether there is one)."""

    __slots__ = ("_tile_idx", "_is_valid_tile")

    def __init__(self, tile_idx: tuple, is_valid_tile: Any) -> None:
        self._tile_idx, self._is_valid_tile = tuple(tile_idx), is_valid_tile

    @property
    def tile_idx(self) -> tuple:
        return self._tile_idx

    @property
    def is_valid_tile(self) -> Any:
        return self._is_valid_tile

    def __extract_mlir_values__(self) -> list[Any]:
        return [*self._tile_idx, self._is_valid_tile]

    def __new_from_mlir_values__(self, values: list[Any]) -> WorkTileInfo:
        n = len(self._tile_idx)
        return WorkTileInfo(tuple(values[:n]), values[n])

    def __repr__(self):
        return f"WorkTileInfo(tile_idx={self._tile_idx}, is_valid_tile={self._is_valid_tile})"


class PersistentTileSchedulerParams:
    """The tiles of a problem: ``problem_shape_ntile_mnl`` (tiles along M, N and L), ``cluster_shape_mnk`` (CTAs per
    cluster; K must be 1), ``swizzle_size`` (clusters per group walked together; 1: none) and ``raster_along_m``
    (the group's direction). ``problem_layout_ncluster_mnl`` maps a linear work index to a cluster of tiles.
    ``CuteValueError`` for a cluster K other than 1 or a swizzle below 1."""

    def __init__(self, problem_shape_ntile_mnl: Any, cluster_shape_mnk: Any, swizzle_size: int = 1,
                 raster_along_m: bool = True) -> None:
        cluster = tuple(cluster_shape_mnk)
        if len(cluster) != 3 or cluster[2] != 1:
            raise CuteValueError(f"PersistentTileSchedulerParams: cluster_shape_mnk must be (m, n, 1), got "
                                 f"{cluster_shape_mnk!r}")
        if type(swizzle_size) is not int or swizzle_size < 1:
            raise CuteValueError(f"PersistentTileSchedulerParams: swizzle_size must be an int >= 1, got "
                                 f"{swizzle_size!r}")
        self.problem_shape_ntile_mnl = tuple(problem_shape_ntile_mnl)
        self.cluster_shape_mn = cluster[:2]
        self.swizzle_size, self.raster_along_m = swizzle_size, bool(raster_along_m)
        self.problem_layout_ncluster_mnl = self._layout()

    def _layout(self) -> Layout:
        n = ceil_div(self.problem_shape_ntile_mnl, self.cluster_shape_mn + (1,))
        if self.swizzle_size == 1:
            return make_layout(n)
        s = self.swizzle_size
        m_, n_, l_ = round_up(n, (1, s, 1) if self.raster_along_m else (s, 1, 1))
        if self.raster_along_m:  # s clusters along N, then along M, then the next s columns
            return Layout((m_, (s, n_ // s), l_), (s, (1, s * m_), m_ * n_))
        return Layout(((s, m_ // s), n_, l_), ((1, s * n_), s, m_ * n_))

    def __cute_substitute__(self, fn: Any) -> PersistentTileSchedulerParams:
        """These parameters with ``fn`` applied to the problem shape (its run-time extents, in a kernel)."""
        p = object.__new__(PersistentTileSchedulerParams)
        p.problem_shape_ntile_mnl = fn(self.problem_shape_ntile_mnl)
        p.cluster_shape_mn, p.swizzle_size, p.raster_along_m = self.cluster_shape_mn, self.swizzle_size, \
            self.raster_along_m
        p.problem_layout_ncluster_mnl = fn(self.problem_layout_ncluster_mnl)
        return p

    def get_grid_shape(self, max_active_clusters: Any) -> tuple:
        """``(cluster m, cluster n, persistent clusters)``: as many clusters as can be resident
        (``max_active_clusters``), at most one per cluster of tiles."""
        lay = self.problem_layout_ncluster_mnl
        shape = lay.shape
        ctas = product(tuple(product(x) * y for x, y in zip(shape, self.cluster_shape_mn))) * product(shape[2])
        per_cluster = product(self.cluster_shape_mn)
        clusters = ctas // per_cluster
        if type(clusters) is int and type(max_active_clusters) is int:
            clusters = min(clusters, max_active_clusters)
        else:
            clusters = clusters.min_(max_active_clusters) if hasattr(clusters, "min_") else \
                max_active_clusters.min_(clusters)
        return (*self.cluster_shape_mn, clusters)

    def __repr__(self):
        return (f"PersistentTileSchedulerParams({self.problem_shape_ntile_mnl}, cluster_mn={self.cluster_shape_mn}, "
                f"swizzle_size={self.swizzle_size}, raster_along_m={self.raster_along_m})")


class StaticPersistentTileScheduler:
    """The walk of one CTA over the tiles (see the module): ``create`` it in a kernel."""

    def __init__(self, params: PersistentTileSchedulerParams, num_persistent_clusters: Any,
                 current_work_linear_idx: Any, cta_id_in_cluster: tuple, num_tiles_executed: Any) -> None:
        self.params = params
        self.num_persistent_clusters = num_persistent_clusters
        self._current_work_linear_idx = current_work_linear_idx
        self.cta_id_in_cluster = tuple(cta_id_in_cluster)
        self._num_tiles_executed = num_tiles_executed

    @staticmethod
    def create(params: PersistentTileSchedulerParams, block_idx: tuple, grid_dim: tuple) -> StaticPersistentTileScheduler:
        """The scheduler of the CTA at ``block_idx`` of a grid ``grid_dim`` shaped by ``get_grid_shape``."""
        bx, by, bz = block_idx
        cm, cn = params.cluster_shape_mn
        clusters = product(tuple(grid_dim)) // (cm * cn)
        return StaticPersistentTileScheduler(params, clusters, _int32(bz), (_int32(bx % cm), _int32(by % cn),
                                                                            _int32(0)), _int32(0))

    @staticmethod
    def get_grid_shape(params: PersistentTileSchedulerParams, max_active_clusters: Any) -> tuple:
        """``params.get_grid_shape(max_active_clusters)``."""
        return params.get_grid_shape(max_active_clusters)

    def _work(self, idx: Any) -> WorkTileInfo:
        lay = self.params.problem_layout_ncluster_mnl
        n = product(lay.shape)
        valid = idx < n
        # past the last tile: any coordinate (the work is not valid); a problem of no tiles has only that
        cluster = (0,) * len(lay.shape) if type(n) is int and n == 0 else lay.get_flat_coord(idx % n)
        tile = tuple(c * s + i for c, s, i in zip(cluster, self.params.cluster_shape_mn + (1,),
                                                  self.cta_id_in_cluster))
        return WorkTileInfo(tile, valid)

    def get_current_work(self) -> WorkTileInfo:
        """The tile this CTA works on now (``is_valid_tile`` false once the walk is past the last)."""
        return self._work(self._current_work_linear_idx)

    def initial_work_tile_info(self) -> WorkTileInfo:
        """The first tile of this CTA."""
        return self.get_current_work()

    def advance_to_next_work(self, advance_count: int = 1) -> None:
        """Step ``advance_count`` waves of persistent clusters on."""
        self._current_work_linear_idx = self._current_work_linear_idx + self.num_persistent_clusters * advance_count
        self._num_tiles_executed = self._num_tiles_executed + 1

    @property
    def num_tiles_executed(self) -> Any:
        return self._num_tiles_executed

    def __extract_mlir_values__(self) -> list[Any]:
        return [self.num_persistent_clusters, self._current_work_linear_idx, *self.cta_id_in_cluster,
                self._num_tiles_executed]

    def __new_from_mlir_values__(self, values: list[Any]) -> StaticPersistentTileScheduler:
        return StaticPersistentTileScheduler(self.params, values[0], values[1], tuple(values[2:5]), values[5])
