"""The kernel builtins: ``arch`` (indices, elect, barriers, mbarriers, fences, TMA store groups, DSMEM
addresses), ``arch_warp`` (shuffles, votes, named barriers, setmaxnreg, vector global loads/stores), and the
tile copies ``copy`` (``cute.copy``) and ``thread_copy`` (per-thread vector copies, predicates)."""
