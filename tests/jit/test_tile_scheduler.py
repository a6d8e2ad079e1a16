"""The static persistent tile scheduler: on the host, the walk of every CTA of the grid covers each tile of the
problem's clusters exactly once in the layout's order; in a kernel, the scheduler and the work tile are carried by a
run-time while loop."""

import re

import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
from cute_py.compiler.specs.args import DeviceArraySpec
from cute_py.utils import PersistentTileSchedulerParams, StaticPersistentTileScheduler

pytest.importorskip("numba_cuda_mlir", reason="compiling needs the MLIR bindings (the jit extra)")


def _walk(params, grid):
    seen = []
    for z in range(grid[2]):
        for x in range(grid[0]):
            for y in range(grid[1]):
                s = StaticPersistentTileScheduler.create(params, (x, y, z), grid)
                w = s.initial_work_tile_info()
                k = 0
                while w.is_valid_tile:
                    seen.append((z, k, w.tile_idx))
                    s.advance_to_next_work()
                    w = s.get_current_work()
                    k += 1
                assert s.num_tiles_executed == k
    return seen


@settings(max_examples=60, deadline=None)
@given(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 3)), st.sampled_from([1, 2]),
       st.sampled_from([1, 2]), st.integers(1, 4), st.booleans(), st.integers(1, 40))
def test_law_every_tile_once_in_the_layouts_order(ntile, cm, cn, swizzle, along_m, max_clusters):
    p = PersistentTileSchedulerParams(ntile, (cm, cn, 1), swizzle, along_m)
    grid = p.get_grid_shape(max_clusters)
    lay = p.problem_layout_ncluster_mnl
    n_clusters = cute.size(lay)
    assert grid[:2] == (cm, cn) and grid[2] == min(n_clusters, max_clusters)
    seen = _walk(p, grid)
    tiles = [t for _, _, t in seen]
    assert len(tiles) == len(set(tiles)) == n_clusters * cm * cn  # each tile of the clusters once
    # cluster z of the grid takes linear work z, z + P, ...: the cluster of tiles lay.get_flat_coord(idx)
    for z, k, (m, n, l) in seen:
        idx = z + k * grid[2]
        c = lay.get_flat_coord(idx)
        assert (m // cm, n // cn, l) == tuple(c)
    padded_m = cute.size(lay, mode=[0]) * cm
    assert all(t[0] < padded_m for t in tiles)


def test_params_rules():
    with pytest.raises(cute.CuteValueError, match=r"cluster_shape_mnk must be \(m, n, 1\)"):
        PersistentTileSchedulerParams((4, 4, 1), (2, 1, 2))
    with pytest.raises(cute.CuteValueError, match="swizzle_size must be an int >= 1"):
        PersistentTileSchedulerParams((4, 4, 1), (1, 1, 1), 0)


@pytest.mark.parametrize("ntile", [(0, 4, 1), (4, 0, 2), (3, 3, 0)])
@pytest.mark.parametrize("swizzle", [1, 2])
def test_a_problem_of_no_tiles_gives_every_cta_no_valid_work(ntile, swizzle):
    p = PersistentTileSchedulerParams(ntile, (2, 1, 1), swizzle)
    assert p.get_grid_shape(8)[2] == 0
    for z in range(3):  # a grid launched wider than the problem anyway
        s = StaticPersistentTileScheduler.create(p, (1, 0, z), (2, 1, 3))
        assert s.initial_work_tile_info().is_valid_tile is False
        s.advance_to_next_work()
        assert s.get_current_work().is_valid_tile is False


@cute.kernel
def _k_tiles(out, params: cute.Constexpr):
    bidx, bidy, bidz = cute.arch.block_idx()
    sched = StaticPersistentTileScheduler.create(params, (bidx, bidy, bidz), cute.arch.grid_dim())
    work = sched.initial_work_tile_info()
    while work.is_valid_tile:
        m, n, l = work.tile_idx
        out[m, n, l] = out[m, n, l] + 1
        sched.advance_to_next_work()
        work = sched.get_current_work()


@cute.jit
def launch_tiles(out, clusters: cute.Constexpr):
    params = PersistentTileSchedulerParams(out.shape, (1, 1, 1))
    grid = StaticPersistentTileScheduler.get_grid_shape(params, clusters)
    _k_tiles(out, params).launch(grid=grid, block=1)


def test_a_kernel_walks_the_tiles_in_a_run_time_loop():
    c = cute.compile(launch_tiles, DeviceArraySpec("int32", (5, 3, 2)), 4)
    assert c.launches[0].grid == (1, 1, 4)
    assert re.search(r"\bbra\b", c.ptx)  # the while loop is a run-time loop
