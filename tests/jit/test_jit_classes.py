"""Class-based kernels: ``@cute.jit`` / ``@cute.kernel`` on methods bind ``self``; the instance's configuration is
part of the cache key by value (in a process and across processes), a kernel sees ``self`` as it was at its
launch and may not change it; static and class methods; jit methods called inline from kernels and hosts."""

import io
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import pytest

import cute_py as cute
from cute_py import arch
from cute_py.compiler import ArgumentError, DeviceArraySpec, TraceError
from cute_py.compiler.cache import store as cache
from cute_py.compiler.runtime import launch as L

ROOT = pathlib.Path(__file__).resolve().parents[2]
A = DeviceArraySpec("Float32", (1024,))
THREE, FIVE = "0f40400000", "0f40A00000"  # 3.0 and 5.0 as PTX float immediates


class Cfg:
    def __init__(self, threads=128):
        self.threads = threads


class Scale:
    """Multiplies each element by ``factor``: the DSL's class shape (config in ``__init__``, a jit ``__call__``
    that sets attributes and launches ``self.kernel``, a kernel reading ``self``)."""

    def __init__(self, factor, cfg=None):
        self.factor = factor
        self.cfg = cfg or Cfg()

    @cute.jit
    def __call__(self, src, dst):
        self.blocks = cute.size(src) // self.cfg.threads
        self.kernel(src, dst).launch(grid=self.blocks, block=self.cfg.threads)

    @cute.kernel
    def kernel(self, src, dst):
        tidx, _, _ = arch.thread_idx()
        bidx, _, _ = arch.block_idx()
        i = bidx * self.cfg.threads + tidx
        dst[i] = src[i] * self.factor


def _counted(fn):
    before = dict(cache.stats)
    out = fn()
    return out, {k: v - before.get(k, 0) for k, v in cache.stats.items()}


def _entries(cache_dir):
    return sorted(p for p in pathlib.Path(cache_dir).rglob("*.json"))


def _body(ptx, name):
    """The PTX of the entry ``name`` (up to the next entry)."""
    start = ptx.index(f".entry {name}(")
    end = ptx.find(".entry ", start + 1)
    return ptx[start:] if end < 0 else ptx[start:end]


def test_a_class_instance_compiles_and_its_attributes_are_constants():
    c = cute.compile(Scale(3.0), A, A)
    assert c.kernel_names == ["kernel_0"] and THREE in c.ptx
    assert c.launches[0].block == (128, 1, 1) and c.launches[0].grid == (8, 1, 1)
    # the compiled object takes the arguments without self
    assert [kind for kind, _ in c.sources] == ["tensor", "tensor"]


def test_compile_takes_the_instance_its_bound_call_or_a_bound_method():
    s = Scale(3.0)
    for target in (s, s.__call__):
        assert THREE in cute.compile(target, A, A).ptx


def test_equal_configurations_share_a_compile_and_any_changed_attribute_compiles_again():
    class Fresh(Scale):  # a class of its own: nothing compiled for it yet
        pass

    c1, n1 = _counted(lambda: cute.compile(Fresh(3.0, Cfg(128)), A, A))
    c2, n2 = _counted(lambda: cute.compile(Fresh(3.0, Cfg(128)), A, A))  # another instance, same values
    assert n1["compiles"] == 1 and c2 is c1 and n2["compiles"] == 0
    c3, n3 = _counted(lambda: cute.compile(Fresh(5.0, Cfg(128)), A, A))
    assert n3["compiles"] == 1 and FIVE in c3.ptx and THREE not in c3.ptx
    c4, n4 = _counted(lambda: cute.compile(Fresh(3.0, Cfg(256)), A, A))  # a nested attribute
    assert n4["compiles"] == 1 and c4.launches[0].block == (256, 1, 1)


def test_changing_an_attribute_of_the_same_instance_compiles_again_never_a_stale_hit():
    s = Scale(3.0)
    first = cute.compile(s, A, A)
    s.factor = 5.0
    again = cute.compile(s, A, A)
    assert again is not first and FIVE in again.ptx
    s.cfg.threads = 64  # inside a nested object
    assert cute.compile(s, A, A).launches[0].block == (64, 1, 1)


def test_a_class_attribute_is_part_of_the_key():
    class Tiled(Scale):
        BIAS = 3.0

        @cute.kernel
        def kernel(self, src, dst):
            tidx, _, _ = arch.thread_idx()
            dst[tidx] = src[tidx] * self.BIAS

    assert THREE in cute.compile(Tiled(1.0), A, A).ptx
    Tiled.BIAS = 5.0
    assert FIVE in cute.compile(Tiled(1.0), A, A).ptx


def test_the_jit_method_may_set_attributes_and_they_stay_on_the_instance():
    s = Scale(3.0, Cfg(32))
    cute.compile(s, A, A)
    # as in the DSL's examples, the jit method's assignments are the instance's (made when it is traced)
    assert s.blocks == 32


def test_a_kernel_sees_self_as_it_was_at_its_launch():
    class TwoLaunches:
        @cute.jit
        def __call__(self, a):
            self.scale = 3.0
            self.kernel(a).launch(grid=1, block=32)
            self.scale = 5.0
            self.kernel(a).launch(grid=1, block=32)

        @cute.kernel
        def kernel(self, a):
            tidx, _, _ = arch.thread_idx()
            a[tidx] = a[tidx] * self.scale

    c = cute.compile(TwoLaunches(), A)
    assert THREE in _body(c.ptx, "kernel_0") and FIVE not in _body(c.ptx, "kernel_0")
    assert FIVE in _body(c.ptx, "kernel_1") and THREE not in _body(c.ptx, "kernel_1")


def test_a_kernel_that_assigns_an_attribute_of_self_is_a_trace_error_naming_it():
    class Assigns:
        @cute.jit
        def __call__(self, a):
            self.kernel(a).launch(grid=1, block=32)

        @cute.kernel
        def kernel(self, a):
            self.count = 1

    with pytest.raises(TraceError, match=r"the kernel kernel changed self\.count: in a kernel the attributes of self "
                                         r"are compile-time constants"):
        cute.compile(Assigns(), A)


def test_a_kernel_that_changes_an_object_self_holds_is_a_trace_error_naming_the_attribute():
    class Nested:
        def __init__(self):
            self.cfg = Cfg(32)

        @cute.jit
        def __call__(self, a):
            self.kernel(a).launch(grid=1, block=32)

        @cute.kernel
        def kernel(self, a):
            self.cfg.threads = 64

    with pytest.raises(TraceError, match=r"changed self\.cfg"):
        cute.compile(Nested(), A)


def test_an_attribute_with_no_key_compiles_without_any_cache_and_says_which(cache_dir, tmp_path):
    s = Scale(3.0)
    s.log = io.StringIO()  # an open stream: no key by value
    with pytest.warns(RuntimeWarning, match=r"self\.log is a _io\.StringIO"):
        _, n1 = _counted(lambda: cute.compile(s, A, A))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c2, n2 = _counted(lambda: cute.compile(s, A, A))
    assert n1["compiles"] == 1 and n2["compiles"] == 1 and n2["memory_hits"] == 0  # never served from a cache
    assert _entries(cache_dir) == []  # nor stored
    assert THREE in c2.ptx


def test_functions_held_as_attributes_are_keyed_by_their_code():
    class Mapped:
        def __init__(self, op):
            self.op = op

        @cute.jit
        def __call__(self, a):
            self.kernel(a).launch(grid=1, block=32)

        @cute.kernel
        def kernel(self, a):
            tidx, _, _ = arch.thread_idx()
            a[tidx] = self.op(a[tidx])

    def make(k):
        return lambda x: x * k

    c3 = cute.compile(Mapped(make(3.0)), A)
    c5 = cute.compile(Mapped(make(5.0)), A)  # the same code, another closure value
    assert THREE in c3.ptx and FIVE in c5.ptx
    assert cute.compile(Mapped(make(3.0)), A) is c3  # a new lambda of the same code and closure: the same key
    assert FIVE in cute.compile(Mapped(lambda x: x * 5.0), A).ptx


def test_static_and_class_methods_in_either_order():
    class Methods:
        SCALE = 3.0

        @staticmethod
        @cute.kernel
        def k1(a):
            tidx, _, _ = arch.thread_idx()
            a[tidx] = a[tidx] + 1.0

        @cute.kernel
        @staticmethod
        def k2(a):
            tidx, _, _ = arch.thread_idx()
            a[tidx] = a[tidx] + 2.0

        @classmethod
        @cute.kernel
        def k3(cls, a):
            tidx, _, _ = arch.thread_idx()
            a[tidx] = a[tidx] * cls.SCALE

        @classmethod
        @cute.jit
        def run(cls, a):
            cls.k1(a).launch(grid=1, block=32)
            cls.k2(a).launch(grid=1, block=32)
            cls.k3(a).launch(grid=1, block=32)

        @cute.jit
        @classmethod
        def run2(cls, a):
            cls.k3(a).launch(grid=1, block=32)

        @staticmethod
        @cute.jit
        def run3(a):
            Methods.k1(a).launch(grid=1, block=32)

    for target in (Methods.run, Methods().run, Methods.run2, Methods().run2, Methods.run3, Methods().run3):
        c = cute.compile(target, A)
        assert c.kernel_names[0].startswith(("k1_", "k3_")), target
    assert THREE in cute.compile(Methods.run, A).ptx


def test_a_jit_method_called_in_a_kernel_is_traced_inline_with_its_control_flow():
    class WithHelper:
        def __init__(self):
            self.bias = 3.0

        @cute.jit
        def add_bias(self, x, n):
            if n > 2:  # a run-time condition: compiled control flow in the helper
                x = x + self.bias
            return x

        @cute.jit
        def __call__(self, a, n: cute.Int32):
            self.kernel(a, n).launch(grid=1, block=32)

        @cute.kernel
        def kernel(self, a, n):
            tidx, _, _ = arch.thread_idx()
            a[tidx] = self.add_bias(a[tidx], n)

    c = cute.compile(WithHelper(), A, 5)
    assert c.kernel_names == ["kernel_0"] and THREE in c.ptx
    assert "llvm.cond_br" in c.mlir  # the helper's `if` on a run-time value is a branch


def test_a_jit_method_called_by_the_host_method_runs_inline():
    class Setup:
        @cute.jit
        def setup(self, a):
            self.threads = cute.size(a) // 8
            return self.threads

        @cute.jit
        def __call__(self, a):
            threads = self.setup(a)
            self.kernel(a).launch(grid=8, block=threads)

        @cute.kernel
        def kernel(self, a):
            pass

    assert cute.compile(Setup(), A).launches[0].block == (128, 1, 1)


def test_the_kernel_of_a_method_takes_a_name_prefix_and_a_stream_argument():
    from cuda.bindings import driver as cu

    class Streamed:
        @cute.jit
        def __call__(self, a, stream):
            self.kernel(a).launch(grid=1, block=32, stream=stream)

        @cute.kernel
        def kernel(self, a):
            pass

    Streamed.kernel.set_name_prefix("streamed")
    c = cute.compile(Streamed(), A, cu.CUstream(7))
    assert c.kernel_names == ["streamed_kernel_0"] and ".entry streamed_kernel_0(" in c.ptx
    assert [kind for kind, _ in c.sources] == ["tensor", "stream"] and c.launches[0].stream == 1


def test_a_stream_made_inside_the_jit_function_is_rejected():
    class Bad:
        @cute.jit
        def __call__(self, a):
            self.kernel(a).launch(grid=1, block=32, stream=7)

        @cute.kernel
        def kernel(self, a):
            pass

    with pytest.raises(ArgumentError, match=r"launch\(stream=\.\.\.\) takes a stream argument of the jit function"):
        cute.compile(Bad(), A)


def test_compile_rejects_a_kernel_and_non_callables():
    with pytest.raises(ArgumentError, match="compile takes the @cute_py.jit function that launches a kernel"):
        cute.compile(Scale(1.0).kernel, A, A)
    with pytest.raises(ArgumentError, match="compile needs a @cute_py.jit function"):
        cute.compile(42, A)


# -- direct calls (a stand-in driver records the launches) ------------------------------------------


@pytest.fixture
def fake_driver(monkeypatch):
    from tests.jit.test_jit_compiled_call import FakeDriver

    d = FakeDriver()
    monkeypatch.setitem(L._STATE, "driver", d)
    monkeypatch.setattr(L, "load_module", lambda cubin, kernels, *rest: (None, {name: f"F:{name}" for name in kernels}))
    return d


def test_an_instance_called_directly_compiles_once_per_configuration(fake_driver):
    class Direct(Scale):
        pass

    s = Direct(3.0)
    _, n1 = _counted(lambda: s(A, A))
    _, n2 = _counted(lambda: s(A, A))  # the jit method set self.blocks: a new key, the same launches
    _, n3 = _counted(lambda: s(A, A))
    assert n1["compiles"] == 1 and n2["compiles"] == 0 and n3["compiles"] == 0
    assert len(fake_driver.calls) == 3 and fake_driver.calls[0][0] == "F:kernel_0"
    s.factor = 5.0
    _, n4 = _counted(lambda: s(A, A))
    assert n4["compiles"] == 1 and len(fake_driver.calls) == 4


def test_a_stream_argument_is_the_stream_of_its_launch(fake_driver):
    from cuda.bindings import driver as cu

    class Streamed:
        @cute.jit
        def __call__(self, a, stream):
            self.kernel(a).launch(grid=1, block=32, stream=stream)

        @cute.kernel
        def kernel(self, a):
            pass

    s1, s2 = cu.CUstream(11), cu.CUstream(22)
    obj = Streamed()
    obj(A, s1)
    obj(A, s2)
    c = cute.compile(obj, A, s1)
    c(A, s2)
    c(A, stream=s1)  # the stream parameter given by name
    assert [call[8] for call in fake_driver.calls] == [s1, s2, s2, s1]
    assert sum(1 for _ in fake_driver.calls) == 4


# -- the disk cache across processes ----------------------------------------------------------------

_MODULE = '''
import cute_py as cute
from cute_py import arch


class Cfg:
    def __init__(self, threads):
        self.threads = threads


class Scale:
    def __init__(self, factor, cfg):
        self.factor = factor
        self.cfg = cfg

    @cute.jit
    def __call__(self, src, dst):
        self.blocks = cute.size(src) // self.cfg.threads
        self.kernel(src, dst).launch(grid=self.blocks, block=self.cfg.threads)

    @cute.kernel
    def kernel(self, src, dst):
        tidx, _, _ = arch.thread_idx()
        bidx, _, _ = arch.block_idx()
        dst[bidx * self.cfg.threads + tidx] = src[bidx * self.cfg.threads + tidx] * self.factor
'''

_CHILD = '''
import json, sys
import cute_py as cute
from class_kernels import Cfg, Scale
a = cute.compiler.DeviceArraySpec("Float32", (1024,))
c = cute.compile(Scale({factor}, Cfg({threads})), a, a)
print(json.dumps(dict(cute.compiler.stats, ptx=c.ptx)))
'''


def _child(cache_dir, module_dir, factor, threads):
    path = os.pathsep.join(p for p in (str(module_dir), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, CUTE_PY_CACHE_DIR=str(cache_dir), PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", _CHILD.format(factor=factor, threads=threads)], env=env, cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_class_based_kernel_is_found_in_the_disk_cache_by_a_new_process(cache_dir, tmp_path):
    (tmp_path / "class_kernels.py").write_text(textwrap.dedent(_MODULE))
    first = _child(cache_dir, tmp_path, 3.0, 128)
    assert first["compiles"] == 1 and THREE in first["ptx"]
    again = _child(cache_dir, tmp_path, 3.0, 128)  # a new process, a new instance with the same values
    assert again["compiles"] == 0 and again["disk_hits"] == 1 and again["ptx"] == first["ptx"]
    other = _child(cache_dir, tmp_path, 5.0, 128)  # one attribute changed
    assert other["compiles"] == 1 and other["disk_hits"] == 0 and FIVE in other["ptx"]
    nested = _child(cache_dir, tmp_path, 3.0, 64)  # an attribute of a nested object changed
    assert nested["compiles"] == 1 and nested["disk_hits"] == 0
    assert len(_entries(cache_dir)) == 3


def test_direct_calls_through_the_generated_launch_path_use_the_default_stream(fake_driver, monkeypatch):
    import cute_py.compiler.specs.args as args_mod
    from tests.jit.test_jit_compiled_call import FakeTorchTensor

    monkeypatch.setattr(args_mod, "_is_torch", lambda x: False)  # specs through __cuda_array_interface__

    class Pair:
        @cute.jit
        def __call__(self, src, dst):
            self.kernel(src, dst).launch(grid=1, block=32)

        @cute.kernel
        def kernel(self, src, dst):
            pass

    obj = Pair()
    t1, t2 = FakeTorchTensor(1 << 26), FakeTorchTensor(1 << 27)
    for _ in range(4):
        obj(t1, t2)
    assert callable(cute.compile(obj, t1, t2)._fast_call)  # the last calls went through the generated path
    obj(t1, t2, stream=9)
    assert [call[8] for call in fake_driver.calls] == [0, 0, 0, 0, 9]


@cute.kernel
def _scale(a, s):
    tidx, _, _ = arch.thread_idx()
    a[tidx] = a[tidx] * s


def test_a_negative_zero_is_not_mistaken_for_zero_by_a_direct_call(fake_driver):
    @cute.jit
    def host(a, s):
        _scale(a, s).launch(grid=1, block=32)

    host(A, 0.0)
    host(A, 0.0)  # the previous call's specialisation
    _, n = _counted(lambda: host(A, -0.0))  # equal by ==, another constant in the code
    assert n["compiles"] == 1 and "0f80000000" in cute.compile(host, A, -0.0).ptx


def test_a_float_static_of_the_same_value_reuses_the_last_call_and_another_one_does_not(fake_driver, monkeypatch):
    """The last call's float statics are compared by value and sign (no key built per call): an equal float (another
    object) reuses its specialisation; another value, or a NaN, goes through the keyed lookup and its own code."""
    import cute_py.compiler.host.last_call as last_call

    @cute.jit
    def host(a, s):
        _scale(a, s).launch(grid=1, block=32)

    host(A, 1.5)
    keyed, real = [], last_call.config_key
    monkeypatch.setattr(last_call, "config_key", lambda *a, **k: keyed.append(a) or real(*a, **k))
    _, n = _counted(lambda: host(A, float("1.5")))
    assert n.get("compiles", 0) == 0 and n.get("memory_hits", 0) == 0, "the last call's specialisation, unkeyed"
    assert keyed == [], "no key built to compare a float"
    monkeypatch.setattr(last_call, "config_key", real)
    _, n = _counted(lambda: host(A, 2.5))
    assert n["compiles"] == 1 and "0f40200000" in cute.compile(host, A, 2.5).ptx
    nan = float("nan")
    host(A, nan)
    _, n = _counted(lambda: host(A, float("nan")))   # unequal to itself: looked up by its key, found
    assert n.get("compiles", 0) == 0 and n["memory_hits"] == 1


def test_a_cached_property_read_in_a_kernel_is_not_a_change_of_self():
    import functools

    class Lazy:
        def __init__(self, factor):
            self.factor = factor

        @functools.cached_property
        def scale(self):
            return self.factor * 1.0

        @cute.jit
        def __call__(self, a):
            self.kernel(a).launch(grid=1, block=32)

        @cute.kernel
        def kernel(self, a):
            tidx, _, _ = arch.thread_idx()
            a[tidx] = a[tidx] * self.scale

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the class (and its cached property) has a key: cached as usual
        assert FIVE in cute.compile(Lazy(5.0), A).ptx


def test_keyword_arguments_take_the_previous_calls_specialisation_and_a_changed_one_its_own(fake_driver):
    @cute.jit
    def host(a, s=1.0, blocks=1):
        _scale(a, s).launch(grid=blocks, block=32)

    host(A, blocks=2)
    _, n = _counted(lambda: host(A, blocks=2))  # by keyword, as before: no key is built
    assert n["compiles"] == 0 and n["memory_hits"] == 0
    _, n = _counted(lambda: host(A, 1.0, 2))  # the same arguments by position
    assert n["compiles"] == 0 and n["memory_hits"] == 0
    _, n = _counted(lambda: host(A, blocks=3))  # another value: its own specialisation
    assert n["compiles"] == 1
    _, n = _counted(lambda: host(A, s=1.0, blocks=2))  # back to the first: from memory
    assert n["compiles"] == 0 and n["memory_hits"] == 1
    assert [call[1] for call in fake_driver.calls] == [2, 2, 2, 3, 2]
