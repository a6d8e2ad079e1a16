"""The ops of the ``cute_nvgpu`` dialect, one module per hardware unit.

Each module defines its op classes; each class holds its declarations, its verifier (``verify_rules``), its
builder (the ``builder`` classmethod, exported from ``mlir_dialects`` under ``builder_name()``) and its lowering
rule (the ``lower`` method). ``mlir_dialects.registry.UNITS`` names these modules in order; the registry reads
them for their op classes (a module registers nothing when it is imported). ``common`` holds what the lowering
rules share.

==============  ===============================================================================================
unit            ops
==============  ===============================================================================================
``cpasync``     cp.async copies, their groups and mbarrier arrivals
``tma``         TMA tile and im2col copies, reductions and prefetches, bulk groups
``tensormap``   TMA descriptors changed on the device: replace, copy, the tensormap proxy fences
``mbarrier``    mbarriers: init, arrive (locally, with a transaction count, on a peer CTA), wait
``sync``        proxy fences, cluster barriers, warp election, stores to a peer CTA's shared memory
``warp``        warp and named barriers, shuffles, votes, the active mask, setmaxnreg, special registers,
                vector global loads and stores
``warpgroup``   wgmma.mma_async, its fence, commit and wait
``mma``         mma.sync, ldmatrix, stmatrix
``numeric``     8-bit float and TF32 conversions, approximate math, printf
==============  ===============================================================================================
"""
