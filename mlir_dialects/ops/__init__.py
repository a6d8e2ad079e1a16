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
``mbarrier``    mbarriers: init, arrive (locally, with a count and a scope, on a peer CTA), expect bytes, wait, test
``sync``        proxy fences, cluster barriers, warp election, stores to a peer CTA's shared memory, programmatic
                dependent launch, the grid-wide barrier
``warp``        warp and named barriers, shuffles, votes, matches, reductions, the active mask, setmaxnreg,
                special registers
``memory``      atomics, reductions, loads and stores with ordering and cache qualifiers, vector global loads and
                stores, L2 cache policies
``warpgroup``   wgmma.mma_async, its fence, commit and wait, the accumulator register fence
``mma``         mma.sync (and Volta's m8n8k4), ldmatrix, stmatrix
``tcgen05``     Blackwell's tcgen05 commit (sm_100a)
``numeric``     8-bit float, TF32 and bf16 conversions, approximate math, float min/max, printf
``integer``     bit counts and fields, wide and 24-bit multiplies, carry chains, lop3, shf, prmt, 64-bit packing
==============  ===============================================================================================

Inline PTX statements and the builders that give them, byte for byte (text, constraints, operands in that
order, side effects; ``m``: an mbarrier, ``p``: a pointer, ``peer``: a CTA rank, ``<q>``: ``{.sem}{.scope}``;
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
``mbarrier.arrive.release.<sc>.shared::cta.b64 %st, [m], n``        ``mbarrier_scoped("arrive", m, n, scope=sc)``
``mbarrier.arrive.expect_tx.release.<sc>.shared::cta.b64 _, [m], n``  ``mbarrier_scoped("arrive_expect_tx", ...)``
``mbarrier.expect_tx.relaxed.<sc>.shared::cta.b64 [m], n``          ``mbarrier_scoped("expect_tx", m, n, scope=sc)``
``mapa`` then one of the three on ``.shared::cluster``              ``mbarrier_scoped(..., peer=rank)``
``mbarrier.test_wait.parity.shared::cta.b64 %p, [m], ph; selp``     ``mbarrier_test_wait_parity(m, ph)`` (an i1)
``@%c mbarrier.try_wait.parity.shared::cta.b64 %p, [m], ph; selp``  ``mbarrier_try_wait_parity_if(c, m, ph)`` (i1)
``barrier.cta.arrive id, count``                                    ``barrier_arrive(id, count, aligned=False)``
``fence.proxy.alias`` / ``fence.proxy.async``                       ``fence_proxy("alias")`` / ``("async")``
``griddepcontrol.wait`` / ``griddepcontrol.launch_dependents``      ``griddepcontrol("wait")`` / ``(...)``
``trap``                                                            ``trap()``
the grid barrier (``%envreg`` workspace, ``atom.add.release.gpu``)  ``grid_sync()``
``match.any.sync.b32|b64 d, v, mask`` / ``match.all...`` (``d|%p``)  ``match_sync("any"|"all", v, mask)``
``redux.sync.<op>.<type> d, v, mask``                               ``redux_sync(op, type, v, mask)``
``mov.u32 d, %<sreg>`` / ``mov.u64 d, %<sreg>`` / ``mov.u32 d, WARP_SZ``  ``read_sreg_volatile(sreg)``
``""`` with ``=r,0`` (an accumulator register fence)                ``wgmma_fence_operand(v)``
``mma.sync.aligned.m8n8k4.<la>.<lb>.<acc>.f16.f16.<acc>``           ``mma_sync("m8n8k4", "f16", acc, a, b, c,
                                                                    layout_a=la, layout_b=lb)``
``tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [m]``  ``tcgen05_commit(m)`` (sm_100a)
``{max,min}{.ftz}{.NaN}{.xorsign.abs}.f32 d, a, b``                 ``float_minmax(kind, a, b, ftz=, nan=,
                                                                    xorsign_abs=)``
``rcp.approx.ftz.f32`` / ``ex2.approx.ftz.f32 d, a``                ``math_approx("rcp"|"ex2", a, ftz=True,
                                                                    volatile=True)``
``cvt.rna.tf32.f32 d, a`` (``=r,f``) / ``cvt.rn.bf16.f32 d, a``     ``cvt_f32("tf32", a)`` / ``cvt_f32("bf16", a)``
``max.NaN``/``min.NaN`` clamps, ``cvt.rn.bf16x2.f32 d, hi, lo``     ``cvt_f32("bf16x2_satfinite", hi, lo)``
``clz``, ``bfind``, ``brev``, ``bfe``, ``bfi``, ``mul.hi``,         ``int_op(instr, args, signed=, mode=, lut=)``
``mul.wide``, ``mul24``, ``mad24``, ``add.cc``, ``addc``,           (``integer.INT_INSTRS`` names each
``sub.cc``, ``subc``, ``mad.lo.cc``, ``madc.lo``, ``add.sat``,      ``instr``)
``sub.sat``, ``lop3``, ``shf``, ``prmt``
``mov.b64 d, {lo, hi}``                                             ``int_op("pack_b64", [lo, hi])``
``mov.b64 {lo, hi}, a; add.u32 lo, lo, n; mov.b64 d, {lo, hi}``     ``int_op("add_lo32", [a, n])``
==================================================================  ==============================================
"""
