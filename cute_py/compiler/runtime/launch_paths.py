"""The generated launch paths of a ``Compiled`` (``compiled``): one Python function per compiled object, made
when its state machine reaches the fast path, whose checks of the tensor arguments, parameter refills and
launches are unrolled for that object (the attribute reads are most of a launch's host time). A call that does
not match goes to the general path (the checked one, ``Compiled._call``) untouched.

Each check runs torch's one-call tensor guard first where it applies (``torch_guard``), and the Python checks
only when it refuses. Where the guard applies and a native launcher can be made (``native``, armed as
``native_arming`` says), the object is called through it: it launches a call that passes the guard with the
addresses it was armed with, and passes every other call to the generated Python path, which arms it again
after a call the guard accepted. The parameter arrays change only in ``Compiled._fill``, which disarms it first.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, NamedTuple

from . import native_arming
from ..specs.annotations import stream_handle
from .launch import launch_config
from .native_arming import launcher_for, native_plan
from .torch_guard import tensor_guard

__all__ = ["FastPath", "make_fast_call", "make_dynamic_fast_call"]


class FastPath(NamedTuple):
    """A generated launch path: ``call`` (the generated function, ``call(c, *args, stream=...)``), ``native`` (the
    native launcher in front of it, or ``None``) and ``entry``, what the object's calls go to (the launcher, else
    ``call`` bound to the object)."""

    entry: Callable[..., Any]
    call: Callable[..., Any]
    native: Any


_MISSING = object()  # a positional parameter of a generated call that the caller left out


def _given(values, rest):
    """The positional arguments of a generated call: its parameters up to the last one given, then the rest."""
    n = len(values)
    while n and values[n - 1] is _MISSING:
        n -= 1
    return values[:n] + rest


def _prologue(c, env):
    """The first lines of a generated ``__call__``: positional-only parameters ``x0, x1...`` (one per source; more,
    or fewer than the run-time ones, go to the general path, which names the count) and the stream (the legacy
    default stream's handle, made once, when none or ``None`` is given: the jit function passes ``None``). Returns
    the lines and the expression of the argument tuple (for the general path and ``_fill``)."""
    n = len(c.sources)
    env.update({"default_stream": c._default_stream, "MISSING": _MISSING, "given": _given, "handle": stream_handle,
                "lock": c._lock})
    params = "".join(f"x{i}=MISSING, " for i in range(n))
    values = f"({''.join(f'x{i}, ' for i in range(n))})"
    # a run-time argument left out is MISSING where a tensor is checked: the checks send the call to the general path
    return [f"def call(c, {params}/, *rest, stream=default_stream):",
            "    if rest:",
            f"        return general(c, given({values}, rest), stream)",
            "    if stream is not default_stream:  # checked: a stream object, a handle in [0, 2**64), None",
            "        stream = default_stream if stream is None else handle(stream)"], f"given({values}, rest)"


def make_fast_call(c: Any, fast: tuple, args: tuple, general: Callable[..., Any]) -> FastPath | None:
    """The fast path of ``c``'s common call: every run-time argument a torch tensor of its compiled type,
    dtype, shape and strides on the GPU, no run-time scalars, no stream arguments, no cooperative launches
    (otherwise ``None``); a cluster launch goes through ``cuLaunchKernelEx`` with a launch configuration made
    once (only its stream set per call), and keeps the native launcher out (it launches plain kernels). ``args``
    are the arguments of the call that made it (tensors that pass its checks), ``general`` the general path
    (``Compiled._call``).

    Generated code: the checks of ``Compiled._fast_pointers`` (one torch guard for all tensors, or unrolled per
    argument: see ``_checked``), a refill of the parameters when an address changed, the launches. Any argument that does
    not match goes to the general path (``Compiled._call``) untouched. Its entry is called with the call's
    arguments (a call is then one Python frame, or none through the native launcher).
    """
    if c._binder is not None or not _applies(c, clusters=True):
        return None
    env = {"ok": c._ok, "general": general}
    lines, argx = _prologue(c, env)
    lines += _checked(env, [_static_check(env, k, i, spec) for k, (i, *spec) in enumerate(fast)], args, argx)
    # the guard's answer (``armed``) decides whether a call arms the native launcher
    form = getattr(c, "call_form", None)
    spread = form is not None and form.spreads      # (the native launcher takes flat calls only)
    plain = all(p[-1] is None for p in c._plan)
    native = launcher_for(c, [i for i, *_ in fast], env) if "guard" in env and not spread and plain else None
    lines += [f"    p{k} = x{i}.data_ptr()" for k, (i, *_) in enumerate(fast)]
    key = f"({''.join(f'p{k}, ' for k in range(len(fast)))})"
    # the addresses of the last call were aligned: new ones are tested, one test per alignment (an OR of powers of
    # two), and against null, before the parameters are filled for them
    lines += [f"    key = {key}",
              "    if key != c._last:",
              f"        if not ({' and '.join(f'p{k}' for k in range(len(fast)))}):",
              f"            return general(c, {argx}, stream)"]
    by_align = {}
    for k, (*_, align, _) in enumerate(fast):
        by_align.setdefault(align, []).append(f"p{k}")
    for align, ps in by_align.items():
        test = f"({' | '.join(ps)}) & {align - 1}" if align & (align - 1) == 0 else \
            " or ".join(f"{p} % {align}" for p in ps)
        lines += [f"        if {test}:",
                  f"            return general(c, {argx}, stream)"]
    # under the lock: the refill, the launches and the arming (another thread's refill waits for the driver's copy)
    lines += ["    with lock:",
              "        if key != c._last:",
              f"            c._fill(key, {argx})",
              "            c._last = key"]
    for j, (func, gx, gy, gz, bx, by, bz, smem, params, ex) in enumerate(c._plan):
        env[f"F{j}"] = func
        if ex is not None:  # a cluster: its configuration made once, under the lock given the call's stream
            env[f"G{j}"] = launch_config((gx, gy, gz), (bx, by, bz), ex[0], smem)
            lines += [f"        G{j}.hStream = stream",
                      f"        err, = c._launch_kernel_ex(G{j}, F{j}, {params}, 0)",
                      "        if err is not ok and err != ok:",
                      f"            c._launch_error(err, ({gx}, {gy}, {gz}), ({bx}, {by}, {bz}), {ex[0]}, {smem}, "
                      f"lambda: c._launch_kernel_ex(G{j}, F{j}, {params}, 0))"]
            continue
        lines += [f"        err, = c._launch_kernel(F{j}, {gx}, {gy}, {gz}, {bx}, {by}, {bz}, {smem}, stream, {params}, 0)",
                  "        if err is not ok and err != ok:",
                  f"            c._launch_error(err, ({gx}, {gy}, {gz}), ({bx}, {by}, {bz}), (1, 1, 1), {smem}, "
                  f"lambda: c._launch_kernel(F{j}, {gx}, {gy}, {gz}, {bx}, {by}, {bz}, {smem}, stream, {params}, 0))"]
    if native is not None:  # launched, with the parameters filled for these addresses: the launcher replays it
        env["plan"] = native_plan(c._plan)
        env["refill"] = native_arming.refill(c, [i for i, *_ in fast], [f[5] for f in fast], ("_last",), c._last,
                                             lambda d: d)
        lines += ["        if armed:",
                  "            native.arm(guard, key, plan, refill)"]
    exec(compile("\n".join(lines), f"<cute_py launch of {c.jit_function.fn.__name__}>", "exec"), env)
    if spread:
        return _spreading_path(c, env["call"], form.flat)
    return _fast_path(c, env["call"], native)


def _applies(c, clusters=False):
    """Whether a generated path can take ``c``'s calls: no run-time scalars, no stream arguments, only plain
    launches (or with ``clusters``, cluster launches too; never cooperative ones)."""
    return not c._scalar_args and c._plan is not None and \
        all(p[-1] is None or (clusters and not p[-1][1]) for p in c._plan) and \
        all(at is None for at in c._streams) and c._stream_at is None


def _static_check(env, k, i, spec):
    """The check of the static tensor ``x<i>`` (``k``-th tensor; ``spec``: the torch type, dtype, shape, strides,
    alignment and row-major-ness recorded for it), as ``_checked`` takes it; its constants go in ``env``."""
    cls, dtype, shape, strides, _, dense = spec
    env.update({f"C{k}": cls, f"D{k}": dtype, f"S{k}": shape, f"T{k}": strides})
    layout = f"x{i}.is_contiguous()" if dense else f"x{i}.stride() == T{k}"
    return i, (f"type(x{i}) is not C{k} or x{i}.dtype is not D{k} or x{i}.shape != S{k} or not x{i}.is_cuda or "
               f"not {layout}"), False


def _checked(env, checks, args, argx):
    """Lines that send a generated call to the general path unless every tensor argument passes its check:
    ``checks`` holds ``(position, Python condition of a mismatch on x<position>, run-time extents?)``. Where
    torch's guard applies (``torch_guard``: the tensors of this call ``args`` pass every condition, and the guard
    made of them passes its probes), one guard call accepts the usual call (its answer kept as ``armed``) and the
    Python conditions run only when it refuses; otherwise they run on every call."""
    fallback = []
    for i, cond, _ in checks:
        fallback += [f"    if {cond}:", f"        return general(c, {argx}, stream)"]
    templates = [args[i] for i, _, _ in checks]
    names = {f"x{i}": args[i] for i, _, _ in checks}
    if not all(eval(f"not ({cond})", env, names) for _, cond, _ in checks):  # noqa: S307 (our own expressions)
        return fallback
    guard = tensor_guard(templates, [dynamic for _, _, dynamic in checks])
    if guard is None:
        return fallback
    env["guard"] = guard
    return [f"    armed = guard({', '.join(f'x{i}' for i, _, _ in checks)})",
            "    if not armed:"] + ["    " + ln for ln in fallback]


def make_dynamic_fast_call(c: Any, args: tuple, general: Callable[..., Any]) -> FastPath | None:
    """The fast path of ``c``'s calls of a compile with run-time extents whose tensor arguments are torch tensors
    of the types and dtypes seen before (else ``None``): each tensor's type, dtype, device, address, alignment, extents
    and strides are read; when they are those of the previous call the recorded launches are replayed (the
    parameters, descriptors and grids bound for them stay valid), otherwise the general path binds and checks
    the call (``Compiled._call``) and the key is remembered. No run-time scalars, stream arguments or clusters.
    ``args`` are the arguments of the call that made it (see ``_checked``), ``general`` the general path.

    Where torch's guard applies, the second call with a key is also remembered as a guard of its tensors' exact
    extents and strides and their addresses: a call that passes that guard with the same addresses is replayed
    after one guard call and the address reads, without the reads of its extents and strides. Every call of the
    general path forgets both (it binds for its own arguments)."""
    if not _applies(c) or len(c._dynamic_torch) != len(c._dynamic_args):
        return None
    env = {"ok": c._ok, "general": general}
    lines, argx = _prologue(c, env)
    keys, checks, aligns = [], [], []
    static = {i: c._torch_specs[i] for i, _ in c._tensor_args}
    for k, (i, spec) in enumerate(sorted(list(c._tensor_args) + list(c._dynamic_args))):
        if i in static:
            checks.append(_static_check(env, k, i, static[i]))
            keys.append(f"x{i}.data_ptr()")
            aligns.append(static[i][4])
        else:
            cls, dtype = c._dynamic_torch[i]
            env.update({f"C{k}": cls, f"D{k}": dtype})
            checks.append((i, f"type(x{i}) is not C{k} or x{i}.dtype is not D{k} or not x{i}.is_cuda", True))
            keys += [f"x{i}.data_ptr()", f"x{i}.shape", f"x{i}.stride()"]
            aligns.append(spec[3])
    checked = _checked(env, checks, args, argx)
    native = launcher_for(c, [i for i, _, _ in checks], env) if "guard" in env else None
    launches = ["launch = c._launch_kernel"]
    for j in range(len(c._plan)):
        launches += [f"f, gx, gy, gz, bx, by, bz, smem, params, _ = c._plan[{j}]",
                     "err, = launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, 0)",
                     "if err is not ok and err != ok:",
                     "    c._launch_error(err, (gx, gy, gz), (bx, by, bz), (1, 1, 1), smem, "
                     "lambda: launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, 0))"]
    xs = ", ".join(f"x{i}" for i, _, _ in checks)
    ptrs = f"({''.join(f'x{i}.data_ptr(), ' for i, _, _ in checks)})"
    exact = "guard" in env  # torch's guard applies: a repeated call is checked by one guard of its exact extents
    # the records (_exact, _fast_last) and the parameters they describe change together, under the lock (the
    # general path's commit, the native launcher's refill): each is read again under it before the launches
    if exact:
        env["exact_guard"] = lambda *ts: tensor_guard(ts, [False] * len(ts)) or _never
        lines += ["    e = c._exact",
                  f"    if e is not None and e[0]({xs}) and {ptrs} == e[1]:  # as the last call: replayed",
                  "        with lock:",
                  "            if c._exact is e:"]
        lines += ["                " + ln for ln in launches] + ["                return"]
    lines += checked
    lines += [f"    key = ({', '.join(keys)},)",
              "    with lock:",
              "        if key == c._fast_last:  # as the call the general path bound last"]
    if exact:  # the same call twice: its extents and strides are worth one guard
        lines += ["            if c._exact is None:",
                  f"                c._exact = (exact_guard({xs}), {ptrs})"]
    lines += ["            " + ln for ln in launches]
    if native is not None:  # launched as bound by the general path: the launcher replays it for the exact guard
        positions = [i for i, _, _ in checks]

        def refill(c, addresses):  # its descriptors as bound for these extents (those the parameters hold)
            env = c._binder.env(c._last[2])
            return native_arming.refill(c, positions, aligns, ("_last", "_fast_last", "_exact"), addresses,
                                        lambda d: d.bind(env) if d.is_dynamic else d)

        env.update({"never": _never, "native_plan": native_plan, "refill": refill})
        lines += ["            e = c._exact",
                  "            if e[0] is not never and not native.armed:",
                  "                native.arm(e[0], e[1], native_plan(c._plan), refill(c, e[1]))"]
    lines += ["            return",
              "    # new addresses or extents: bound, checked and filled by the general path, which records the key",
              f"    general(c, {argx}, stream, key)"]
    exec(compile("\n".join(lines), f"<cute_py dynamic launch of {c.jit_function.fn.__name__}>", "exec"), env)
    return _fast_path(c, env["call"], native)


def _fast_path(c, call, launcher):
    """The ``FastPath`` of the generated ``call``: its entry is the native launcher in front of it where there is
    one (``native_arming.attach``), else ``call`` bound to ``c``."""
    if launcher is None:
        return FastPath(types.MethodType(call, c), call, None)
    native_arming.attach(c, call, launcher)
    return FastPath(launcher, call, launcher)


def _spreading_path(c, call, flat):
    """The ``FastPath`` of a generated ``call`` whose compile takes containers of arrays: its entry spreads a call's
    containers (as the general path does: another length is an ``ArgumentError``) and calls ``call``, whose
    general path takes the spread arguments."""
    def entry(*args, **kwargs):
        return call(c, *flat(args), **kwargs)

    return FastPath(entry, call, None)


def _never(*tensors):
    """The exact guard of a call whose tensors torch's guard does not take: the checks of every call then run."""
    return False
