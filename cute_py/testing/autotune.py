"""``autotune_jit``: the CuTe DSL's tuning decorator, with the winners kept on disk.

``@autotune_jit(params_dict={"tile_n": [128, 256], "stages": [3, 4]}, update_on_change=["a"])`` over a
``@cute.jit`` function tunes the parameters ``params_dict`` names (each a parameter of the function, taken by
keyword) over the product of their values, the first time a call brings new values of the parameters
``update_on_change`` names (a device array counts by its element type, shape, strides and alignment; a parameter
left out counts by its default), and calls the function with the fastest configuration from then on. As in the
DSL, each candidate runs the call itself (so its outputs are written several times) ``warmup_iterations`` times,
then ``iterations`` times, each from a cold L2 and timed by CUDA events; the median call wins
(:func:`~cute_py.testing.benchmark`).

What this adds to the DSL's:

- **The winner is kept on disk** (under the compile cache, ``CUTE_PY_CACHE_DIR``; empty turns it off), per
  function, configuration space, key and GPU name, with the SHA-256 of every candidate's cubin: a later process
  compiles the candidates (from the compile cache) and reuses the winner only if every cubin is the same, so an
  edit to the kernel or the library tunes again.
- **A configuration that breaks a rule is skipped**: one whose compile or launch raises a ``CuteError`` is left
  out (``tuned_errors`` says why); if every one does, the call raises a ``CuteError`` listing them.
- **A tuned parameter given by the caller is refused** (the DSL replaces it silently).

``fn.tuned`` maps each key tuned so far to its configuration (a dict).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
from collections.abc import Callable
from typing import Any

from ..errors import CuteError, CuteTypeError, CuteValueError

__all__ = ["autotune_jit"]


def _measure(call: Callable[[], Any], warmup_iterations: int, iterations: int) -> float:
    """The median time of ``call()`` in microseconds on the GPU's clock, each call from a cold L2."""
    from .bench import benchmark

    return benchmark(call, warmup_iterations=warmup_iterations, iterations=iterations, cold_l2=True).median


def _device_name() -> str:
    """The name of GPU 0 (the winner of one GPU is not another's)."""
    from cuda.bindings import driver as cu

    err, dev = cu.cuDeviceGet(0)
    err2, name = cu.cuDeviceGetName(64, dev)
    if int(err) or int(err2):
        raise CuteValueError(f"autotune_jit: cannot read the GPU's name ({err!r}, {err2!r})")
    return name.split(b"\0", 1)[0].decode()


class autotune_jit:
    """The decorator (see the module): ``params_dict`` ``{name: [values]}``, ``update_on_change`` ``[names]``."""

    def __init__(self, params_dict: dict[str, list[Any]] | None = None, update_on_change: list[str] | None = None,
                 warmup_iterations: int = 10, iterations: int = 100) -> None:
        params_dict = {} if params_dict is None else params_dict
        if not isinstance(params_dict, dict) or not all(type(k) is str for k in params_dict):
            raise CuteTypeError(f"autotune_jit: params_dict maps parameter names to lists of values, got "
                                f"{params_dict!r}")
        for name, values in params_dict.items():
            if not isinstance(values, (list, tuple)) or len(values) == 0:
                raise CuteValueError(f"autotune_jit: params_dict[{name!r}] must be a non-empty list of values, got "
                                     f"{values!r}")
        update = [] if update_on_change is None else update_on_change
        if not isinstance(update, (list, tuple)) or not all(type(n) is str for n in update):
            raise CuteTypeError(f"autotune_jit: update_on_change is a list of parameter names, got {update!r}")
        for what, v, least in (("warmup_iterations", warmup_iterations, 0), ("iterations", iterations, 1)):
            if type(v) is not int or v < least:
                raise CuteValueError(f"autotune_jit: {what} must be an int >= {least}, got {v!r}")
        self.params_dict = {k: list(v) for k, v in params_dict.items()}
        self.update_on_change = list(update)
        self.warmup_iterations, self.iterations = warmup_iterations, iterations

    def __call__(self, fn: Any) -> "_Tuned":
        from ..compiler.host.kernel import JitFunction

        if not isinstance(fn, JitFunction):
            raise CuteTypeError(f"autotune_jit decorates a @cute.jit function, got {fn!r}")
        names = fn.params.names
        for name in list(self.params_dict) + self.update_on_change:
            if name not in names:
                raise CuteValueError(f"autotune_jit: {name!r} is not a parameter of {fn.fn.__name__}"
                                     f"({', '.join(names)})")
        both = sorted(set(self.params_dict) & set(self.update_on_change))
        if both:
            raise CuteValueError(f"autotune_jit: {', '.join(both)} both tuned and in update_on_change")
        return _Tuned(fn, self)


class _Tuned:
    """A tuned ``@cute.jit`` function: calls it with the winner of its key (tuning it first)."""

    def __init__(self, fn: Any, spec: autotune_jit) -> None:
        self.fn, self.spec = fn, spec
        self.tuned: dict[tuple, dict[str, Any]] = {}
        self.tuned_errors: dict[tuple, list[tuple[dict[str, Any], str]]] = {}
        functools.update_wrapper(self, fn.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        given = sorted(set(kwargs) & set(self.spec.params_dict))
        params = self.fn.params.names
        given += [n for n in self.spec.params_dict if params.index(n) < len(args) and n not in given]
        if given:
            raise CuteValueError(f"autotune_jit: {', '.join(given)} of {self.fn.fn.__name__} is tuned: leave it "
                                 f"out of the call")
        key = self._key(args, kwargs)
        config = self.tuned.get(key)
        if config is None:
            config = self._load(key, args, kwargs)
            if config is None:
                config = self._tune(key, args, kwargs)
            self.tuned[key] = config
        return self.fn(*args, **kwargs, **config)

    # -- the key of a call -------------------------------------------------------------------------------------
    def _key(self, args, kwargs) -> tuple:
        from ..compiler.cache.config_key import config_key
        from ..compiler.specs.args import array_spec, is_device_array

        params = self.fn.params.params
        out = []
        for name in self.spec.update_on_change:
            i = self.fn.params.names.index(name)
            if name in kwargs:
                v = kwargs[name]
            elif i < len(args):
                v = args[i]
            else:
                v = params[i].default
                if v is params[i].empty:
                    raise CuteValueError(f"autotune_jit: the call gives no {name}, which update_on_change names")
            if is_device_array(v):
                out.append((name, "array", repr(array_spec(v)[0])))
            else:
                out.append((name, config_key(v, name)))
        return tuple(out)

    def _configs(self) -> list[dict[str, Any]]:
        names = list(self.spec.params_dict)
        return [dict(zip(names, values)) for values in itertools.product(*self.spec.params_dict.values())]

    # -- tuning ------------------------------------------------------------------------------------------------
    def _compiled(self, args, kwargs, config):
        from ..compiler.host.kernel import compile_fn

        return compile_fn(self.fn, *args, **kwargs, **config)

    def _tune(self, key, args, kwargs) -> dict[str, Any]:
        best, best_time, cubins, errors = None, float("inf"), [], []
        for config in self._configs():
            try:
                cubins.append(_digest(self._compiled(args, kwargs, config)))
                t = _measure(functools.partial(self.fn, *args, **kwargs, **config), self.spec.warmup_iterations,
                             self.spec.iterations)
            except CuteError as e:
                cubins.append(None)
                errors.append((config, f"{type(e).__name__}: {e}"))
                continue
            if t < best_time:
                best, best_time = config, t
        self.tuned_errors[key] = errors
        if best is None:
            listed = "; ".join(f"{c}: {why}" for c, why in errors)
            raise CuteValueError(f"autotune_jit: no configuration of {self.fn.fn.__name__} runs: {listed}")
        self._store(key, best, cubins)
        return best

    # -- the winners on disk -----------------------------------------------------------------------------------
    def _path(self, key) -> str | None:
        from ..compiler.cache.config_key import config_key
        from ..compiler.cache.store import cache_dir

        root = cache_dir()
        if root is None:
            return None
        fn = self.fn.fn
        ident = json.dumps([fn.__module__, fn.__qualname__, config_key(self.spec.params_dict, "params_dict"),
                            repr(key), _device_name()])
        return os.path.join(root, "autotune", hashlib.sha256(ident.encode()).hexdigest() + ".json")

    def _store(self, key, best, cubins) -> None:
        from ..compiler.cache.store import atomic_write

        path = self._path(key)
        if path is None:
            return
        index = self._configs().index(best)
        entry = {"format": 1, "winner": index, "cubins": cubins}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, json.dumps(entry).encode())

    def _load(self, key, args, kwargs) -> dict[str, Any] | None:
        """The winner on disk for ``key``, if every candidate compiles to the cubin it was timed with."""
        path = self._path(key)
        if path is None or not os.path.exists(path):
            return None
        try:
            with open(path, "rb") as f:
                entry = json.loads(f.read(1 << 20))
            configs = self._configs()
            winner, cubins = entry["winner"], entry["cubins"]
            if entry.get("format") != 1 or type(winner) is not int or not 0 <= winner < len(configs) or \
                    not isinstance(cubins, list) or len(cubins) != len(configs) or cubins[winner] is None:
                return None
        except (OSError, ValueError, KeyError, TypeError):  # unreadable or not ours: tune again
            return None
        for config, digest in zip(configs, cubins):
            try:
                now = _digest(self._compiled(args, kwargs, config))
            except CuteError:
                now = None
            if now != digest:
                return None
        return configs[winner]


def _digest(compiled: Any) -> str:
    """The SHA-256 of a compile's cubin (its PTX where it has none)."""
    data = compiled.cubin if compiled.cubin is not None else compiled.ptx.encode()
    return hashlib.sha256(data).hexdigest()
