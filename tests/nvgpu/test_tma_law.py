"""The TMA law over random configurations, through the CPU reference.

For every accepted atom (element types, gmem ranks 1-8 with padded and permuted strides, shapes that are not
a multiple of the tile, compact / swizzled / hostile smem layouts, multicast 1-4, load, store and reduce),
the gmem bytes each CTA tile's boxes touch are exactly the bytes of the tile's elements inside the tensor,
loads put every element at its smem position (zero outside the tensor), and stores or reductions write
nothing else. Every other configuration is a CuteError. The same generator runs on a GPU in
test_tma_law_gpu.py.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings

from cute_py import CuteError

from _tma_law import build, check_tile, tiles, tma_cases


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tma_cases())
def test_every_accepted_tma_atom_touches_exactly_its_tiles_bytes(cfg):
    try:
        atom, tma_tensor = build(cfg)
    except CuteError:
        return  # rejected by a rule: the message is checked by the rule tests
    rng = np.random.default_rng(0)
    for t in tiles(cfg, limit=6):
        breach = check_tile(cfg, atom, tma_tensor, t, rng)
        assert breach is None, f"tile {t} of {cfg}, atom {atom}: {breach}"
