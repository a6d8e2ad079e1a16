"""The launch section of ``bench_copy.py``: host time per launch of cute_py, raw cuLaunchKernel and Triton."""

import statistics
import time



from _copy_common import TARGETS, _err, _verdict


# -- launch overhead ------------------------------------------------------------------------------


def _per_launch(fn, n=2000):
    """Median host microseconds per call over 5 samples of ``n`` calls (no synchronisation inside a sample)."""
    import torch

    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def _paired(fns, n=2000, rounds=9):
    """``{name: (median us per call, median ratio to the first entry)}`` for the callables ``fns`` ({name: fn}),
    timed in interleaved samples: each round takes one sample of ``n`` calls of each, in rotating order, and each
    ratio is of samples of the same round (a noisy host slows both sides of it alike)."""
    import torch

    names = list(fns)
    for fn in fns.values():
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    times = {k: [] for k in names}
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            fn = fns[k]
            t = time.perf_counter()
            for _ in range(n):
                fn()
            times[k].append((time.perf_counter() - t) / n * 1e6)
            torch.cuda.synchronize()
    base = times[names[0]]
    return {k: (statistics.median(v), statistics.median([x / b for x, b in zip(v, base)])) for k, v in times.items()}


def _compiled_pair(jf, static_args, dynamic_args, src, dst):
    """The static and the run-time-shaped compile of ``jf``, each called twice (its launch path generated)."""
    import cute_py as cute

    pair = cute.compile(jf, *static_args), cute.compile(jf, *dynamic_args)
    for c in pair:
        c(src, dst)
        c(src, dst)
    return pair


def launch_overhead(out):
    import ctypes
    import os

    import torch

    from cute_py.compiler.runtime import launch_paths as LP
    from cute_py.compiler.runtime import launch as L
    from cute_py.compiler.runtime import native as NL
    from cute_py.runtime import from_dlpack
    from examples import tma_copy

    if hasattr(os, "sched_setaffinity"):  # one core: no migrations in the middle of a sample, for every side
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    src = torch.rand((128, 64), device="cuda")
    dst = torch.empty_like(src)
    dst2 = torch.empty_like(src)
    try:
        marked = [from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in (src, dst)]
        pairs = {}
        # the launch paths as they were before each step: without torch's guard (the Python checks), then with
        # the guard but without the native launcher; then as they are
        for name, module, attr, off in (("python", LP, "tensor_guard", lambda *a: None),
                                        ("guard", NL, "make_launcher", lambda *a: None), ("now", None, None, None)):
            real = getattr(module, attr) if module else None
            if module:
                setattr(module, attr, off)
            try:
                tma_copy._compiled.clear()  # the same specialisations again, each pair with its own paths
                pairs[name] = _compiled_pair(tma_copy, (src, dst, (128, 64), "none"), (*marked, (128, 64), "none"),
                                             src, dst)
            finally:
                if module:
                    setattr(module, attr, real)
        compiled_py, dynamic_py = pairs["python"]
        compiled_g, dynamic_g = pairs["guard"]
        compiled, dynamic = pairs["now"]
        guarded = "guard" in compiled_g._fast_call.__globals__ and "guard" in dynamic_g._fast_call.__globals__
        native = compiled._native is not None and dynamic._native is not None
        torch.cuda.synchronize()
        d = L.driver()
        func = compiled._funcs["tma_copy_kernel_0"]
        smem = compiled.smem["tma_copy_kernel_0"]
        raw_params = ctypes.addressof(compiled._blocks[0].array)
        s0 = d.CUstream(0)
        launch = d.cuLaunchKernel
        fns = {
            "raw": lambda: launch(func, 1, 1, 1, 32, 1, 1, smem, s0, raw_params, 0),
            "raw, int stream": lambda: launch(func, 1, 1, 1, 32, 1, 1, smem, 0, raw_params, 0),
            "compiled": lambda: compiled(src, dst),
            "dynamic": lambda: dynamic(src, dst),
            "compiled, python": lambda: compiled_py(src, dst),
            "dynamic, python": lambda: dynamic_py(src, dst),
            "compiled, guard": lambda: compiled_g(src, dst),
            "dynamic, guard": lambda: dynamic_g(src, dst),
            "jit": lambda: tma_copy(src, dst, (128, 64), "none"),
            # two calls per sample, to alternating destinations: each refills the parameters (descriptors from
            # the encoded-descriptor cache); the ratio is per call
            "compiled, alternating": lambda: (compiled(src, dst), compiled(src, dst2)),
            "dynamic, alternating": lambda: (dynamic(src, dst), dynamic(src, dst2)),
        }
        t = _paired(fns)
    except Exception as e:
        out(f"launch, raw / Compiled / dynamic / jit          failed ({_err(e)})")
        return
    verified = True
    for c in (compiled, dynamic):
        dst.zero_()
        c(src, dst)
        torch.cuda.synchronize()
        verified = verified and torch.equal(dst, src)
    goal = TARGETS["launch"]
    out(f"launch, raw cuLaunchKernel (cuda-python)      {t['raw'][0]:9.2f} us   (stream handle made once)")
    out(f"launch, raw, stream given as int 0            {t['raw, int stream'][0]:9.2f} us   {t['raw, int stream'][1]:.2f}x raw")
    out(f"launch, Compiled(src, dst)                    {t['compiled'][0]:9.2f} us   {t['compiled'][1]:.2f}x raw   "
        f"target <= {goal}x: {_verdict(t['compiled'][1], goal, False)}")
    out(f"launch, Compiled, dynamic shapes (torch args) {t['dynamic'][0]:9.2f} us   {t['dynamic'][1]:.2f}x raw   "
        f"target <= {goal}x: {_verdict(t['dynamic'][1], goal, False)}   verified={verified}")
    out(f"launch, jit function tma_copy(src, dst, ...)  {t['jit'][0]:9.2f} us   {t['jit'][1]:.2f}x raw")
    for key, name in (("compiled, alternating", "Compiled"), ("dynamic, alternating", "dynamic shapes")):
        out(f"{'launch, ' + name + ', 2 destinations in turn':46s}{t[key][0] / 2:9.2f} us   {t[key][1] / 2:.2f}x raw   "
            f"(new addresses every call: parameters refilled)")
    out(f"  (native launcher: {NL.status() if not native else 'used'})")
    out(f"launch, Compiled, guard, Python path          {t['compiled, guard'][0]:9.2f} us   "
        f"{t['compiled, guard'][1]:.2f}x raw   (torch's guard used: {guarded})")
    out(f"launch, dynamic shapes, guard, Python path    {t['dynamic, guard'][0]:9.2f} us   "
        f"{t['dynamic, guard'][1]:.2f}x raw")
    out(f"launch, Compiled, Python checks (no guard)    {t['compiled, python'][0]:9.2f} us   "
        f"{t['compiled, python'][1]:.2f}x raw")
    out(f"launch, dynamic shapes, Python checks         {t['dynamic, python'][0]:9.2f} us   "
        f"{t['dynamic, python'][1]:.2f}x raw")
    out("  (ratios: medians of per-round ratios, samples interleaved with the raw launch's)")
    # the host-side work of a call alone: the driver call replaced by a no-op returning success
    if native:  # a launcher like compiled's, of libc's abs() (0 for the function 0: success)
        libc = ctypes.CDLL(None)
        probe = NL.launcher_class()(ctypes.cast(libc.abs, ctypes.c_void_p).value, (0, 1), 4)
        probe.arm(LP.tensor_guard([src, dst], [False, False]),
                  (src.data_ptr(), dst.data_ptr()), ((0, 1, 1, 1, 32, 1, 1, 0, 0),))
        t_host = _per_launch(lambda: probe(src, dst))
        out(f"{'launch, Compiled host work only, native':46s}{t_host:9.2f} us   (hits {probe.hits})")
    for name, c in ((", guard, Python path", compiled_g), (", Python checks", compiled_py)):
        real, ok_code = c._launch_kernel, c._ok
        c._launch_kernel = lambda *a: (ok_code,)
        try:
            t_host = _per_launch(lambda: c(src, dst))
        finally:
            c._launch_kernel = real
        out(f"{'launch, Compiled host work only' + name:46s}{t_host:9.2f} us")
    triton_launch(out, lambda x: f"   {x / t['raw'][0]:.2f}x raw")


def triton_launch(out, ratio):
    """Triton's copy kernel on a 128x64 fp32 tensor, one 128x64 block (one program), each descriptor API."""
    import torch

    try:
        import triton_copy as TC
    except Exception as e:
        out(f"launch, Triton copy kernel                    unavailable ({_err(e)})")
        return
    apis, why = TC.probe()
    if not apis:
        out(f"launch, Triton copy kernel                    unavailable ({why})")
        return
    for api in apis:
        try:
            src = torch.rand((128, 64), device="cuda")
            dst = torch.zeros_like(src)
            c = TC.TritonCopy(api, src, dst, (128, 64))
            c()
            torch.cuda.synchronize()
            t = _per_launch(c)
            ok = torch.equal(dst, src)
            out(f"launch, Triton copy ({api + ' descriptors)':24s} {t:9.2f} us{ratio(t)}   verified={ok}")
        except Exception as e:
            out(f"launch, Triton copy ({api} descriptors)        failed ({_err(e)})")
