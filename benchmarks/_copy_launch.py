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


def launch_overhead(out):
    import ctypes

    import torch

    import cute_py as cute
    from cute_py.compiler.runtime import launch as L
    from examples import tma_copy

    src = torch.rand((128, 64), device="cuda")
    dst = torch.empty_like(src)
    t_raw = None
    try:
        compiled = cute.compile(tma_copy, src, dst, (128, 64), "none")
        compiled(src, dst)
        torch.cuda.synchronize()
        d = L.driver()
        func = compiled._funcs["tma_copy_kernel_0"]
        block = compiled._blocks[0]
        smem = compiled.smem["tma_copy_kernel_0"]
        raw_params = ctypes.addressof(block.array)

        def raw():
            d.cuLaunchKernel(func, 1, 1, 1, 32, 1, 1, smem, 0, raw_params, 0)

        t_raw = _per_launch(raw)
        out(f"launch, raw cuLaunchKernel (cuda-python)      {t_raw:9.2f} us")
    except Exception as e:
        out(f"launch, raw cuLaunchKernel (cuda-python)      failed ({_err(e)})")
        compiled = None

    def ratio(t):
        return f"   {t / t_raw:.2f}x raw" if t_raw else ""

    try:
        if compiled is None:
            raise RuntimeError("no compiled kernel")
        t_compiled = _per_launch(lambda: compiled(src, dst))
        out(f"launch, Compiled(src, dst)                    {t_compiled:9.2f} us{ratio(t_compiled)}"
            + (f"   target <= {TARGETS['launch']}x: {_verdict(t_compiled / t_raw, TARGETS['launch'], False)}"
               if t_raw else ""))
        t_jit = _per_launch(lambda: tma_copy(src, dst, (128, 64), "none"))
        ok = torch.equal(dst, src)
        out(f"launch, jit function tma_copy(src, dst, ...)  {t_jit:9.2f} us{ratio(t_jit)}   verified={ok}")
        # the host-side work of a call alone: the driver call replaced by a no-op returning success
        real, ok_code = compiled._launch_kernel, compiled._ok
        compiled._launch_kernel = lambda *a: (ok_code,)
        try:
            t_host = _per_launch(lambda: compiled(src, dst))
        finally:
            compiled._launch_kernel = real
        out(f"launch, Compiled host work only (no driver)   {t_host:9.2f} us")
    except Exception as e:
        out(f"launch, cute_py Compiled / jit function       failed ({_err(e)})")
    try:  # one compile for every shape: extents bound, grid evaluated per call (the same shape: values reused)
        from cute_py.runtime import from_dlpack

        marked = [from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in (src, dst)]
        dynamic = cute.compile(tma_copy, *marked, (128, 64), "none")
        dst.zero_()
        t_dyn = _per_launch(lambda: dynamic(src, dst))
        ok = torch.equal(dst, src)
        out(f"launch, Compiled, dynamic shapes (torch args) {t_dyn:9.2f} us{ratio(t_dyn)}   verified={ok}")
    except Exception as e:
        out(f"launch, Compiled, dynamic shapes              failed ({_err(e)})")
    triton_launch(out, ratio)


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
