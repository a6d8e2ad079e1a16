"""Time cute_py's layout algebra against pycute on the same interpreter.

    pip install --no-deps nvidia-cutlass==4.2.0.0   # ships pycute (pure Python)
    python benchmarks/bench_algebra.py [--quick] [--before DIR [--processes N]]

For each op it prints the time per call of pycute, of cute_py with memoisation
off (every call computes), and of cute_py on repeated identical calls
(memoised), with the ratios pycute/cute_py.  Both libraries' results are checked
to be the same function before timing.  With ``--before DIR`` it prints before/after columns side by side: the
cute_py of another checkout (``git worktree add DIR <commit>``) and this checkout's, timed in fresh worker
processes (pycute in the latter), in ``--processes`` rounds over the suite, the fastest round kept.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import timeit

if __name__ == "__main__" and "--worker" not in sys.argv:
    # the cute_py of the checkout this script is in (a worker times the one on its PYTHONPATH)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cute_py as cute  # noqa: E402

try:
    import pycute as pc
except ImportError:  # pragma: no cover - optional baseline
    pc = None


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def suite():
    """(name, cute_py thunk, pycute thunk or None where pycute lacks the op) for the fixed suite."""
    C, P = cute, pc
    nested_c = C.Layout(((2, (3, 4)), (5, (1, 6))), ((1, (2, 6)), (24, (0, 120))))
    nested_p = P.Layout(((2, (3, 4)), (5, (1, 6))), ((1, (2, 6)), (24, (0, 120))))
    a1c, b1c = C.Layout((6, 2), (8, 2)), C.Layout((4, 3), (3, 1))
    a1p, b1p = P.Layout((6, 2), (8, 2)), P.Layout((4, 3), (3, 1))
    a2c, b2c = C.Layout((10, 2), (16, 4)), C.Layout((5, 4), (1, 5))
    a2p, b2p = P.Layout((10, 2), (16, 4)), P.Layout((5, 4), (1, 5))
    a3c, b3c = C.Layout((8, 16, 4), (64, 1, 16)), C.Layout((4, (2, 8)), (2, (1, 32)))
    a3p, b3p = P.Layout((8, 16, 4), (64, 1, 16)), P.Layout((4, (2, 8)), (2, (1, 32)))
    cc, cp = C.Layout((2, 2), (1, 6)), P.Layout((2, 2), (1, 6))
    gc, gp = C.Layout((128, 128), (128, 1)), P.Layout((128, 128), (128, 1))
    tile = (64, 32)
    blk_c, til_c = C.Layout((2, 5), (5, 1)), C.Layout((3, 4), (1, 3))
    blk_p, til_p = P.Layout((2, 5), (5, 1)), P.Layout((3, 4), (1, 3))
    lp_c, lp_p = C.Layout((2, 2), (4, 1)), P.Layout((2, 2), (4, 1))
    six_c, six_p = C.Layout(6, 1), P.Layout(6, 1)
    inv_c, inv_p = C.Layout((4, (2, 8)), (16, (1, 2))), P.Layout((4, (2, 8)), (16, (1, 2)))
    shape, stride = (64, 64), (64, 1)
    coords = [(i % 64, i // 64) for i in range(4096)]

    def crd_c():
        f = C.crd2idx
        return [f(c, shape, stride) for c in coords]

    def crd_p():
        f = P.crd2idx
        return [f(c, shape, stride) for c in coords]

    # hierarchical coordinates of ((8,8),(8,8)):((1,512),(8,64)), and the same points as plain indices
    n_shape, n_stride = ((8, 8), (8, 8)), ((1, 512), (8, 64))
    n_coords = [((i % 8, (i // 8) % 8), ((i // 64) % 8, i // 512)) for i in range(4096)]
    n_indices = list(range(4096))

    def crd_nested_c():
        f = C.crd2idx
        return [f(c, n_shape, n_stride) for c in n_coords]

    def crd_nested_p():
        f = P.crd2idx
        return [f(c, n_shape, n_stride) for c in n_coords]

    def crd_index_c():
        f = C.crd2idx
        return [f(i, n_shape, n_stride) for i in n_indices]

    def crd_index_p():
        f = P.crd2idx
        return [f(i, n_shape, n_stride) for i in n_indices]

    # shape_div of every form (int/int, tuple/int, int/tuple, tuple/tuple), flat and nested shapes
    sd_flat = [[(64 << (i % 4), 8 << (i % 3)), ((4, 2 << (i % 3), 6), 8), (64 << (i % 2), (2, 4)),
                ((64, 32 << (i % 2)), (8, 4))][i % 4] for i in range(4096)]
    sd_nested = [[(((4, 2 << (i % 3)), 8), (2, 4)), (((2, 4), (8 << (i % 2), 2)), 16),
                  (((16, 2), (4, (2, 8 << (i % 3)))), (4, (2, 8))), ((((4, 2), 8), 2), ((8, 2), 2))][i % 4]
                 for i in range(4096)]

    def sd_c(pairs):
        f = C.shape_div
        return lambda: [f(a, b) for a, b in pairs]

    def sd_p(pairs):
        f = P.shape_div
        return lambda: [f(a, b) for a, b in pairs]

    from pycute.swizzle import ComposedLayout as PComposed
    from pycute.swizzle import Swizzle as PSwizzle

    sw_c, sw_p = C.Swizzle(3, 4, 3), PSwizzle(3, 4, 3)
    cl_c = C.composition(C.Swizzle(3, 3, 3), C.Layout((8, 64), (64, 1)))
    cl_p = PComposed(PSwizzle(3, 3, 3), 0, P.Layout((8, 64), (64, 1)))
    offsets = list(range(4096))
    cl_coords = [(i % 8, (i // 8) % 64) for i in range(4096)]

    def swz_c():
        return [sw_c(x) for x in offsets]

    def swz_p():
        return [sw_p(x) for x in offsets]

    def cl_eval_c():
        return [cl_c(c) for c in cl_coords]

    def cl_eval_p():
        return [cl_p(c) for c in cl_coords]

    strided = [((8, 16, 4), (64, 1, 16)), ((128, 128), (128, 1)), (((2, 4), (8, 2)), ((1, 64), (2, 16))),
               ((16, 8), (1, 32)), ((4, 8), (2, 16))]
    ri_rows = []
    for sh, st in strided:
        lc, lp = C.Layout(sh, st), P.Layout(sh, st)
        ri_rows.append((f"right_inverse {lc}", lambda lc=lc: C.right_inverse(lc), lambda lp=lp: P.right_inverse(lp)))

    return [
        ("coalesce (nested, rank 2 depth 3)", lambda: C.coalesce(nested_c), lambda: P.coalesce(nested_p)),
        ("composition (6,2):(8,2) o (4,3):(3,1)", lambda: C.composition(a1c, b1c), lambda: P.composition(a1p, b1p)),
        ("composition (10,2):(16,4) o (5,4):(1,5)", lambda: C.composition(a2c, b2c), lambda: P.composition(a2p, b2p)),
        ("composition rank-3 o nested", lambda: C.composition(a3c, b3c), lambda: P.composition(a3p, b3p)),
        ("complement (2,2):(1,6), 24", lambda: C.complement(cc, 24), lambda: P.complement(cp, 24)),
        ("logical_divide 128x128 by (64,32)", lambda: C.logical_divide(gc, tile), lambda: P.logical_divide(gp, tile)),
        ("zipped_divide 128x128 by (64,32)", lambda: C.zipped_divide(gc, tile), lambda: P.zipped_divide(gp, tile)),
        ("logical_product (2,2):(4,1) x 6:1", lambda: C.logical_product(lp_c, six_c),
         lambda: P.logical_product(lp_p, six_p)),
        ("blocked_product (2,5) x (3,4)", lambda: C.blocked_product(blk_c, til_c), None),
        ("raked_product (2,5) x (3,4)", lambda: C.raked_product(blk_c, til_c), None),
        ("right_inverse (4,(2,8)):(16,(1,2))", lambda: C.right_inverse(inv_c), lambda: P.right_inverse(inv_p)),
        *ri_rows,
        ("left_inverse (4,(2,8)):(16,(1,2))", lambda: C.left_inverse(inv_c), lambda: P.left_inverse(inv_p)),
        ("crd2idx x 4096 coordinates", crd_c, crd_p),
        ("crd2idx x 4096 nested coordinates", crd_nested_c, crd_nested_p),
        ("crd2idx x 4096 indices, nested shape", crd_index_c, crd_index_p),
        ("shape_div x 4096 flat shapes", sd_c(sd_flat), sd_p(sd_flat)),
        ("shape_div x 4096 nested shapes", sd_c(sd_nested), sd_p(sd_nested)),
        ("Swizzle S<3,4,3> x 4096 offsets", swz_c, swz_p),
        ("S<3,3,3> o 0 o (8,64):(64,1) x 4096 coords", cl_eval_c, cl_eval_p),
    ]


def _same_function(rc, rp):
    if isinstance(rc, list):
        return rc == rp
    n = cute.size(rc)
    return n == pc.size(rp) and all(rc(i) == rp(i) for i in range(n))


def _per_call(fn, quick):
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    repeats = 3 if quick else 7
    return min(timer.repeat(repeat=repeats, number=number)) / number


def _time_cute(fc, name, quick):
    """(uncached µs, memoised µs or None) of one cute_py op: uncached with memoisation off (every call computes),
    memoised on repeated identical calls from empty caches; the ``x 4096`` rows have nothing to memoise."""
    with cute.memoization(False):
        t_c = _per_call(fc, quick)
    if " x 4096 " in name:
        return t_c, None
    cute.clear_caches()
    return t_c, _per_call(fc, quick)


def _worker(quick):
    """Time ops of the suite in this process, one request per line on stdin (``cute <op>`` or ``pycute <op>``),
    a JSON line per request on stdout: ``[uncached, memoised or null]`` seconds per call (pycute: ``[t, null]``)."""
    ops = {name: (fc, fp) for name, fc, fp in suite()}
    print(json.dumps({"version": cute.__version__, "file": cute.__file__}), flush=True)
    for line in sys.stdin:
        kind, name = line.rstrip("\n").split(" ", 1)
        fc, fp = ops[name]
        print(json.dumps(_time_cute(fc, name, quick) if kind == "cute" else (_per_call(fp, quick), None)), flush=True)
    return 0


class _Worker:
    """A process timing the suite with the cute_py found at ``path`` (this checkout's, or an older one)."""

    def __init__(self, path, quick):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (path, os.environ.get("PYTHONPATH")) if p))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker"] + (["--quick"] if quick else [])
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = json.loads(self.proc.stdout.readline())

    def time(self, kind, name):
        self.proc.stdin.write(f"{kind} {name}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def _best(times):
    # the fastest of the processes' measurements (a process's placement in memory moves its times by ~10%)
    return None if times[0] is None else min(times)


def _compare(before_path, processes, quick):
    """Before/after columns: ``processes`` worker processes per checkout; in round ``r`` every op is timed in the
    ``r``-th before and after processes (and pycute in the after one), so that each op is measured at ``processes``
    different times; the fastest is kept.  The ratios are pycute / cute_py."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    before = [_Worker(before_path, quick) for _ in range(processes)]
    after = [_Worker(here, quick) for _ in range(processes)]
    try:
        print(f"# before: cute_py {before[0].info['version']} from {os.path.dirname(before[0].info['file'])}")
        print(f"# after:  cute_py {after[0].info['version']} from {os.path.dirname(after[0].info['file'])}")
        print(f"# each: the fastest of {processes} rounds over the suite, each round in fresh processes")
        print()
        ops = []
        for name, fc, fp in suite():
            if fp is not None:
                with cute.memoization(False):
                    if not _same_function(fc(), fp()):
                        print(f"{name}: results differ between cute_py and pycute, not timed")
                        continue
            ops.append((name, fp is not None))
        times = {name: {"before": [], "after": [], "pycute": []} for name, _ in ops}
        for wb, wa in zip(before, after):
            for name, has_pycute in ops:
                times[name]["before"].append(wb.time("cute", name))
                times[name]["after"].append(wa.time("cute", name))
                if has_pycute:
                    times[name]["pycute"].append(wa.time("pycute", name)[0])
        head = (f"| {'op':42} | {'pycute µs':>10} | {'before µs':>10} | {'ratio':>6} | {'after µs':>10} | {'ratio':>6} "
                f"| {'memo before':>11} | {'memo after':>10} |")
        print(head)
        print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
        worst = {"before": None, "after": None}
        for name, _ in ops:
            row = times[name]
            t_p = min(row["pycute"]) if row["pycute"] else None
            cells = [f"{'n/a':>10}" if t_p is None else f"{t_p * 1e6:10.2f}"]
            memo = []
            for key in ("before", "after"):
                t = min(r[0] for r in row[key])
                memo.append(_best([r[1] for r in row[key]]))
                cells.append(f"{t * 1e6:10.2f}")
                if t_p is None:
                    cells.append(f"{'':>6}")
                else:
                    cells.append(f"{t_p / t:5.2f}x")
                    worst[key] = t_p / t if worst[key] is None else min(worst[key], t_p / t)
            cells += [f"{'-':>11}" if memo[0] is None else f"{memo[0] * 1e6:11.3f}",
                      f"{'-':>10}" if memo[1] is None else f"{memo[1] * 1e6:10.3f}"]
            print(f"| {name:42} | " + " | ".join(cells) + " |")
        print()
        print(f"worst uncached ratio: before {worst['before']:.2f}x, after {worst['after']:.2f}x (target >= 1.0x)")
    finally:
        for w in before + after:
            w.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--before", metavar="DIR", help="before/after columns: the cute_py of another checkout (the "
                    "folder holding its cute_py package) and this one's, op by op in worker processes")
    ap.add_argument("--processes", type=int, default=3, metavar="N",
                    help="with --before: rounds over the suite, each in its own worker processes (default 3); the "
                    "fastest kept")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args.quick)
    if pc is None:
        print("pycute is not installed: pip install --no-deps nvidia-cutlass==4.2.0.0", file=sys.stderr)
        return 2
    print(f"# cute_py algebra vs pycute — {datetime.date.today().isoformat()}")
    print(f"# CPU: {_cpu_name()}; Python {platform.python_version()}; cute_py {cute.__version__}")
    if args.before:
        _compare(args.before, args.processes, args.quick)
        return 0
    print()
    head = f"| {'op':42} | {'pycute µs':>10} | {'cute_py µs':>10} | {'ratio':>6} | {'memo µs':>8} | {'memo ratio':>10} |"
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    worst = None
    for name, fc, fp in suite():
        if fp is not None:
            with cute.memoization(False):
                if not _same_function(fc(), fp()):
                    print(f"| {name:42} | results differ between cute_py and pycute |")
                    continue
        t_c, t_m = _time_cute(fc, name, args.quick)
        if t_m is None:
            # not memoised: every call is a different input
            t_p = _per_call(fp, args.quick)
            ratio = t_p / t_c
            worst = min(worst, ratio) if worst is not None else ratio
            print(f"| {name:42} | {t_p * 1e6:10.2f} | {t_c * 1e6:10.2f} | {ratio:5.2f}x | {'-':>8} | {'-':>10} |")
            continue
        if fp is None:
            print(f"| {name:42} | {'n/a':>10} | {t_c * 1e6:10.2f} | {'':>6} | {t_m * 1e6:8.3f} | {t_c / t_m:6.1f}x(*) |")
            continue
        t_p = _per_call(fp, args.quick)
        ratio, mratio = t_p / t_c, t_p / t_m
        worst = ratio if worst is None else min(worst, ratio)
        print(f"| {name:42} | {t_p * 1e6:10.2f} | {t_c * 1e6:10.2f} | {ratio:5.2f}x | {t_m * 1e6:8.3f} | {mratio:9.1f}x |")
    print()
    print("(*) pycute has no such op: the ratio is cute_py uncached / cute_py memoised")
    print(f"worst uncached ratio: {worst:.2f}x (target >= 1.0x); memoised target >= 20x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
