"""Making a pipeline's mbarrier initialisation visible before anyone uses it: ``pipeline_init_arrive`` and
``pipeline_init_wait``.

Every thread runs both, with independent work in between::

    pipeline = PipelineTmaAsync.create(..., defer_sync=True)
    pipeline_init_arrive(cluster_shape_mn=(2, 1), is_relaxed=True)
    ...                                     # partition tensors, compute addresses
    pipeline_init_wait(cluster_shape_mn=(2, 1))

``pipeline_init_arrive`` fences the mbarrier initialisation (``fence.mbarrier_init.release.cluster``) and, in a
cluster of more than one CTA, arrives on the cluster barrier; ``pipeline_init_wait`` then waits on the cluster
barrier, or, without a cluster, synchronises the block (``bar.sync 0``). After it, a peer CTA's multicast or
remote arrival may land on this CTA's barriers.
"""

from __future__ import annotations

from typing import Any

from .. import arch
from ..compiler import TraceError
from ..compiler.frontend.builder import current
from ..core.normalise import is_static
from ..core.products import product
from ..core.layout import Layout
from .groups import Agent, agent_sync

__all__ = ["pipeline_init_arrive", "pipeline_init_wait", "cluster_size_of"]


def cluster_size_of(cluster_shape: Any, what: str) -> int:
    """The number of CTAs of ``cluster_shape`` (a static tuple of ints or a static Layout), checked against the
    cluster the kernel is launched with (when known): a shape that disagrees with the launch would make the
    initialisation synchronise the wrong set of CTAs."""
    shape = cluster_shape.shape if isinstance(cluster_shape, Layout) else cluster_shape
    if isinstance(shape, list):
        shape = tuple(shape)
    if not is_static(shape) or not (type(shape) is int or type(shape) is tuple):
        raise TraceError(f"{what}: the cluster shape must be a static tuple of ints or a static Layout, got "
                         f"{cluster_shape!r}")
    n = product(shape)
    if type(n) is not int or n < 1:
        raise TraceError(f"{what}: the cluster shape {cluster_shape!r} has no CTAs")
    launch = current().launch
    if launch is not None:
        cx, cy, cz = launch.cluster
        if cx * cy * cz != n:
            raise TraceError(f"{what}: the cluster shape {cluster_shape!r} has {n} CTAs, but the kernel is launched "
                             f"with clusters of {launch.cluster} = {cx * cy * cz} CTAs")
    return n


def pipeline_init_arrive(cluster_shape_mn: Any = None, is_relaxed: bool = False) -> None:
    """Fence the mbarrier initialisation and, with a cluster of more than one CTA (``cluster_shape_mn``: a
    static tuple or Layout), arrive on the cluster barrier (``.relaxed`` if ``is_relaxed``). Every thread of
    the block runs it, then :func:`pipeline_init_wait`."""
    arch.mbarrier_init_fence()
    if cluster_shape_mn is not None and cluster_size_of(cluster_shape_mn, "pipeline_init_arrive") > 1:
        if is_relaxed:
            arch.cluster_arrive_relaxed()
        else:
            arch.cluster_arrive()


def pipeline_init_wait(cluster_shape_mn: Any = None) -> None:
    """Wait for the initialisation fenced by :func:`pipeline_init_arrive`: on the cluster barrier with a
    cluster of more than one CTA, else ``bar.sync 0`` over the block."""
    if cluster_shape_mn is None or cluster_size_of(cluster_shape_mn, "pipeline_init_wait") == 1:
        agent_sync(Agent.ThreadBlock)
    else:
        arch.cluster_wait()
