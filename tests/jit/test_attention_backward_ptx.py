"""Kernel 14's backward (examples.attention_backward) without a GPU: its three kernels' PTX (the row sums, the main
kernel's WGMMAs, stmatrix and TMA reduction of dQ, dQ's rounding) FileChecked and assembled for sm_90a, the
assembler keeping the WGMMAs asynchronous; and its rules on arguments, workspaces and output rows."""

import pytest

import cute_py as cute
from _ptxas_report import ptxas_notes

spec = cute.compiler.DeviceArraySpec


def _compile_backward(d=128, causal=False, dt="BFloat16", b=2, s=1024, sk=None, h=4, hk=2, **kw):
    from examples.attention_backward import _backward, workspace_shapes

    sk = sk or s
    q, kv = spec(dt, (b, s, h, d)), spec(dt, (b, sk, hk, d))
    work = [spec("Float32", shape) for shape in workspace_shapes(b, s, h, d)]
    return cute.compile(_backward, q, kv, kv, q, spec("Float32", (b, h, s)), q, q, kv, kv, *work, causal, **kw)


@pytest.mark.parametrize("d, causal", [(128, False), (64, True)])
def test_attention_backward_ptx(d, causal, filecheck, assemble):
    """Three kernels: the row sums D (16-byte loads), the main kernel (S^T and dP^T from shared memory, dV and dK
    with P^T and dS^T from registers, dS stored by stmatrix, dQ of dS from shared memory added with a TMA
    reduction), and dQ's rounding (16-byte loads, rows through shared memory, 16-byte stores)."""
    c = _compile_backward(d, causal)
    filecheck(c.ptx, [
        "CHECK: .entry _prepare",
        "CHECK: ld.global.v4.b32",
        "CHECK: shfl.sync.bfly",
        "CHECK: .entry attention_backward_kernel",
        "CHECK: wgmma.fence.sync.aligned;",
        "CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, %rd{{[0-9]+}}, %rd",
        "CHECK: wgmma.wait_group.sync.aligned 1;",
        "CHECK: ex2.approx.ftz.f32",
        f"CHECK: wgmma.mma_async.sync.aligned.m64n{d}k16.f32.bf16.bf16 {{{{.*}}}}}}, {{%r{{{{[0-9]+}}}}, %r",
        "CHECK: stmatrix.sync.aligned.m8n8.x4.shared.b16",
        "CHECK: fence.proxy.async.shared::cta;",
        "CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 1, 1;",
        "CHECK: cp.async.bulk.wait_group.read 1;",
        "CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group",
        # dK and dV out through swizzled rows: stmatrix, then 16-byte chunks
        "CHECK: bar.sync",
        "CHECK: ld.shared.v4.b32",
        "CHECK: st.global.v4.b32",
        "CHECK: .entry _finish_dq",
        "CHECK: ld.global.v4.b32",
        "CHECK: stmatrix.sync.aligned.m8n8.x4.shared.b16",
        "CHECK: bar.sync",
        "CHECK: ld.shared.v4.b32",
        "CHECK: st.global.v4.b32",
    ])
    finish = c.ptx[c.ptx.index(".entry _finish_dq"):]
    assert "st.global.b32" not in finish and "st.global.b16" not in finish, "dQ's rows go out in 16-byte chunks"
    main = c.ptx[c.ptx.index(".entry attention_backward_kernel"):c.ptx.index(".entry _finish_dq")]
    # the rows go into shared memory by stmatrix only (4-byte stores of row-major rows meet eight-way conflicts)
    assert "st.shared.b32" not in finish and "st.shared.b32" not in main
    assert finish.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == d // 16
    assert "red.global" not in main and "atom.global" not in main, "dQ goes through the TMA reduction only"
    assert c.ptx.count("cp.async.bulk.tensor.4d") == 4 * max(1, d // 64), "K, V once; Q and dO per step"
    assert main.count("cp.async.bulk.tensor.3d") == 2, "lse * log2(e) and D of each step's queries"
    # a step: S^T and dP^T (D/16 each), dV and dK (64/16 each), dQ (its keys / 16); traced twice, with the mask and
    # without it
    per_step = 2 * (d // 16) + 2 * 4 + (128 * (d // 64) // 2) // 16
    assert main.count("wgmma.mma_async") == 2 * per_step, "the masked and the unmasked steps are traced apart"
    assemble(c.ptx)
    warnings = ptxas_notes(c.ptx)
    if warnings is not None:
        assert warnings == [], f"ptxas: {warnings}"


def test_attention_backward_rules():
    with pytest.raises(cute.CuteValueError, match=r"head dimensions \(64, 128\)"):
        _compile_backward(d=256)
    with pytest.raises(cute.CuteValueError, match="head dimension is one of"):
        _compile_backward(d=96)


def test_attention_backward_workspaces_are_checked():
    """The fp32 workspaces must have the shapes ``workspace_shapes`` gives, row-major (a mode of one may have any
    stride), 16-byte aligned: anything else would be read or reduced into at the wrong places."""
    from examples.attention_backward import _backward, workspace_shapes

    b, s, h, hk, d = 1, 300, 4, 1, 128
    q, kv, lse = spec("BFloat16", (b, s, h, d)), spec("BFloat16", (b, 517, hk, d)), spec("Float32", (b, h, s))
    good = [spec("Float32", shape) for shape in workspace_shapes(b, s, h, d)]
    assert workspace_shapes(b, s, h, d) == ((1, 4, 320), (1, 4, 320), (1 * 4 * 5 * 2 * 32, 128))
    cute.compile(_backward, q, kv, kv, q, lse, q, q, kv, kv, *good, True)
    bad = {
        "dsum": spec("Float32", (1, 4, 300)),
        "lse2": spec("Float32", (1, 4, 320), strides=(1280, 1, 4)),
        "dqa": spec("Float32", (1280, 64)),
    }
    for i, name in enumerate(("dsum", "lse2", "dqa")):
        work = list(good)
        work[i] = bad[name]
        with pytest.raises(cute.CuteValueError, match=f"the workspace {name} must be a row-major Float32 tensor"):
            cute.compile(_backward, q, kv, kv, q, lse, q, q, kv, kv, *work, True)
    work = list(good)
    work[2] = spec("BFloat16", workspace_shapes(b, s, h, d)[2])
    with pytest.raises(cute.CuteValueError, match="the workspace dqa must be a row-major Float32"):
        cute.compile(_backward, q, kv, kv, q, lse, q, q, kv, kv, *work, True)


def test_backward_output_rows_rule():
    with pytest.raises(cute.CuteValueError, match="dk's rows are stored in 16-byte chunks"):
        from examples.attention_backward import _backward

        bf, (b, s, h, d) = "BFloat16", (1, 64, 2, 64)
        q = spec(bf, (b, s, h, d))
        w = spec("Float32", (b, h, 64))
        cute.compile(_backward, q, q, q, q, spec("Float32", (b, h, s)), q, q,
                     spec(bf, (b, s, h, d), (s * h * 68 + 4, h * 68 + 4, 68, 1)), q, w, w,
                     spec("Float32", (b, h, 64, d)))
