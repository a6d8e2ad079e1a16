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
``warp``        warp and named barriers, shuffles, votes, the active mask, setmaxnreg, special registers
``memory``      atomics, reductions, loads and stores with ordering and cache qualifiers, vector global loads and
                stores, L2 cache policies
``warpgroup``   wgmma.mma_async, its fence, commit and wait
``mma``         mma.sync, ldmatrix, stmatrix
``numeric``     8-bit float and TF32 conversions, approximate math, printf
``integer``     bit counts and fields, wide and 24-bit multiplies, carry chains, lop3, shf, prmt, 64-bit packing
==============  ===============================================================================================

Inline PTX statements and the builders that give them, byte for byte (text, constraints, operands in that
order, side effects; ``p``: a pointer, ``peer``: a CTA rank, ``<q>``: ``{.sem}{.scope}``;
a shared pointer's 32-bit address is taken by the op, a peer's shared memory reached through ``mapa``):

==================================================================  ==============================================
PTX                                                                 builder
==================================================================  ==============================================
``atom<q>.<space>.<op>.<type> d, [p], v`` (``add.noftz.f16``...)     ``atom(op, type, p, [v], sem=, scope=, peer=)``
``atom<q>.<space>.cas.b16|b32|b64 d, [p], c, v``                    ``atom("cas", type, p, [c, v], ...)``
``setp.lt.s32 %neg, v, 0; @%neg atom..min.u32; @!%neg ..max.s32``   ``atom_float_minmax("max"|"min", p, v,
(one ``atom..{min,max}.{u32,s32}`` when the sign is known)            sign="any"|"negative"|"non_negative", ...)``
``red<q>.<space>.<op>.<type> [p], v`` (``add.noftz.f16x2``...)       ``red(op, type, p, v, sem=, scope=, peer=)``
``ld{.sem.scope}.<space>{.cop}{.L1::..}{.L2::..}.<type> d, [p]``    ``ld_scalar(type, p, result_type, sem=, scope=,
                                                                    cop=, eviction=, prefetch=, peer=)``
``st{.sem.scope}.<space>{.cop}{.L1::..}.<type> [p], v``             ``st_scalar(type, p, v, sem=, scope=, cop=,
                                                                    eviction=, peer=)``
``createpolicy.fractional.L2::<priority>.b64 d, 1.0``               ``createpolicy(priority)``
``clz``, ``bfind``, ``brev``, ``bfe``, ``bfi``, ``mul.hi``,         ``int_op(instr, args, signed=, mode=, lut=)``
``mul.wide``, ``mul24``, ``mad24``, ``add.cc``, ``addc``,           (``integer.INT_INSTRS`` names each
``sub.cc``, ``subc``, ``mad.lo.cc``, ``madc.lo``, ``add.sat``,      ``instr``)
``sub.sat``, ``lop3``, ``shf``, ``prmt``
``mov.b64 d, {lo, hi}``                                             ``int_op("pack_b64", [lo, hi])``
``mov.b64 {lo, hi}, a; add.u32 lo, lo, n; mov.b64 d, {lo, hi}``     ``int_op("add_lo32", [a, n])``
==================================================================  ==============================================
"""
