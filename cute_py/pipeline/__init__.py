"""``cute_py.pipeline``: the CuTe DSL's ``cutlass.pipeline`` for sm_90 — producer/consumer pipelines over
mbarriers in shared memory, TMA store fences, named barriers, and the state each participant walks the stages
with.

================================  ==============================================================================
``PipelineState``                 stage ``index``, wait ``phase``, advance ``count``; ``make_pipeline_state``
                                  (:mod:`.state`)
``Agent``, ``CooperativeGroup``   who takes part and how many arrivals a phase expects; ``PipelineOp``,
                                  ``agent_sync`` (:mod:`.groups`)
``NamedBarrier``                  ``bar.arrive`` / ``bar.sync`` on barriers 1..15, and the free functions
                                  ``arrive``, ``arrive_and_wait``, ``sync``... (:mod:`.named_barrier`)
``MbarrierArray``,                the sync objects of a pipeline (:mod:`.sync_objects`)
``TmaStoreFence``
``PipelineAsync``,                the pipelines (:mod:`.sm90`) and their participants (:mod:`.participants`)
``PipelineCpAsync``,
``PipelineTmaAsync``,
``PipelineTmaStore``
``pipeline_init_arrive`` /        publishing the barriers' initialisation to the block or cluster
``pipeline_init_wait``            (:mod:`.init_sync`)
================================  ==============================================================================

Differences from the CuTe DSL:

- the sm_100 pipelines (``PipelineTmaUmma``...), ``PipelineOrder`` and barrier profiling are not here (``name=``
  is accepted and unused);
- ``wait_unaligned`` raises instead of emitting an aligned ``bar.sync``; the free ``wait(barrier_id,
  num_threads)`` names its barrier (the DSL's takes none);
- barrier storage a pipeline allocates itself is an ordinary shared-memory allocation (no reserved partition);
- a ``PipelineState``'s values stay Python ints while they are known while tracing (static stage indices in
  unrolled code), and its stage count is carried and checked through run-time control flow;
- ``PipelineTmaAsync`` picks its signalling lanes from ``lane_idx()`` unless given ``tidx``. (A consumer's
  arrival on a peer CTA's ``empty`` barrier is ``mbarrier.arrive.release.cta.shared::cluster``, as CuTe C++'s
  ``ClusterBarrier::arrive(cta_id)`` and the DSL emit it: the consumer's reads of the stage are complete when it
  arrives (``wait_group``, or its own loads), and a ``.release.cluster`` arrival costs a third of the GEMM's
  throughput with a 2x1 cluster — 435 against 644 TFLOP/s at 4096^3 on an H200.)
- misuse the DSL lets through is an error while tracing: barrier storage that is not 64-bit mbarrier words of
  this kernel or is too short, a state of another stage count, a consumer count that the multicast arrivals
  cannot meet exactly, a cluster layout that is not a bijection onto the ranks or disagrees with the launch.

Importing this module loads the compiler.
"""

from .groups import Agent, CooperativeGroup, PipelineOp, agent_sync
from .init_sync import pipeline_init_arrive, pipeline_init_wait
from .named_barrier import NamedBarrier, arrive, arrive_and_wait, arrive_unaligned, sync, wait, wait_unaligned
from .participants import PipelineConsumer, PipelineProducer
from .sm90 import PipelineAsync, PipelineCpAsync, PipelineTmaAsync, PipelineTmaStore
from .state import PipelineState, PipelineUserType, make_pipeline_state
from .sync_objects import MbarrierArray, SyncObject, TmaStoreFence, alloc_reserved_mbarrier

__all__ = [
    "Agent",
    "CooperativeGroup",
    "PipelineOp",
    "SyncObject",
    "MbarrierArray",
    "NamedBarrier",
    "TmaStoreFence",
    "PipelineUserType",
    "PipelineState",
    "PipelineAsync",
    "PipelineCpAsync",
    "PipelineTmaAsync",
    "PipelineTmaStore",
    "PipelineProducer",
    "PipelineConsumer",
    "make_pipeline_state",
    "pipeline_init_arrive",
    "pipeline_init_wait",
    "alloc_reserved_mbarrier",
    "agent_sync",
    "arrive",
    "arrive_unaligned",
    "wait",
    "wait_unaligned",
    "arrive_and_wait",
    "sync",
]
