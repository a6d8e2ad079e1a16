"""A kernel's own Python control flow, compiled: the AST rewrite of ``if``, ``for``, ``while``, ``and``/``or``/``not``.

:func:`transformed` returns a copy of a ``@kernel`` (or of a ``@jit`` function called inside a kernel) whose
statements go through the executors of :mod:`.flow`, which decide while tracing whether each one is a Python
(trace-time) statement or run-time control flow, as the CuTe DSL does:

- ``if c: A else: B`` becomes two functions (the branches) and ``flow.if_stmt(c, then, else_, values)``; a
  static ``c`` runs one of them, a run-time ``c`` traces both into a branch;
- ``for x in it: A`` becomes a body function and ``flow.for_stmt(range, args, kwargs, body, values)``: over
  ``range``/``cute.range`` a run-time loop, over ``range_constexpr`` or any other iterable a Python loop;
- ``while c: A`` becomes a condition and a body function and ``flow.while_stmt(...)``: a run-time loop (a
  Python loop when the condition is written ``const_expr(...)``);
- ``break``, ``continue`` and ``return`` inside them return a ``flow.Jump`` that the executors route;
- ``a and b``, ``a or b``, ``not a``, ``x if c else y`` and chained comparisons keep Python's meaning on
  static values and combine run-time booleans (both operands evaluated, as in the DSL).

Each branch or body takes and returns the variables the statement must carry (``liveness.carried``): the
executors give them back, merged over the paths, and the rewritten code rebinds them (unbinding a name no path
bound). Line numbers are the original ones, so tracebacks and errors name the user's lines. Nested functions,
lambdas and classes inside the kernel keep their Python meaning.
"""

from __future__ import annotations

import __future__
import ast
import inspect
import textwrap
import tokenize
import types
from collections.abc import Callable
from typing import Any

from ...errors import TraceError
from ..cache import deps as _deps
from . import liveness

__all__ = ["transformed", "source_tree"]

_FLOW = "__cute_flow"
_cache: dict[tuple[Any, bool], Any] = {}


def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _flow(attr):
    return ast.Attribute(value=_name(_FLOW), attr=attr, ctx=ast.Load())


def _call(func, args, keywords=()):
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def _tuple(elts, ctx=None):
    return ast.Tuple(elts=list(elts), ctx=ctx or ast.Load())


def _const(v):
    return ast.Constant(value=v)


def _lambda(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[]), body=body)


def _def(name, params, body):
    return ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                                                         vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                         defaults=[]),
                           body=body or [ast.Pass()], decorator_list=[], returns=None, type_params=[])


class _Rewriter(ast.NodeTransformer):
    """Rewrites one function body. ``frames``: the generated functions being written, innermost last, each
    ``(kind, jump names)`` with kind ``"branch"``/``"body"``; ``loops``: the carried names of enclosing loops."""

    def __init__(self, carried, kernel, filename, local_names):
        self.carried = carried
        self.locals = local_names
        self.kernel = kernel
        self.filename = filename
        self.count = 0
        self.depth = 0  # generated functions around the statement being rewritten
        self.loops = []  # the carried names of the enclosing loops (innermost last)

    # -- helpers ------------------------------------------------------------------------------
    def _fresh(self, what):
        self.count += 1
        return f"__cute_{what}_{self.count}"

    def _body(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r])
        return out

    def _safe_reads(self, names, into):
        """Statements binding ``into`` to the tuple of the current values of ``names`` (``flow.UNBOUND`` for an
        unbound one)."""
        out, temps = [], []
        for n in names:
            t = self._fresh("v")
            temps.append(t)
            out.append(ast.Try(body=[ast.Assign(targets=[_name(t, ast.Store())], value=_name(n))],
                               handlers=[ast.ExceptHandler(type=_name("NameError"), name=None,
                                                           body=[ast.Assign(targets=[_name(t, ast.Store())],
                                                                            value=_flow("UNBOUND"))])],
                               orelse=[], finalbody=[]))
        out.append(ast.Assign(targets=[_name(into, ast.Store())], value=_tuple([_name(t) for t in temps])))
        return out

    def _rebind(self, result, names, stmts=(), params=(), values=None):
        """After an executor call: route a jump, then rebind ``names`` (unbinding the unbound ones); an object that
        ``stmts`` change in place without rebinding its name (``params[i]``, its value before in ``values[i]``)
        takes its new state in place (``flow.in_place``), so that its other names see the change."""
        if self.depth:
            route = ast.Return(value=_name(result))
        else:  # the function's own level: only a return reaches it
            route = ast.Return(value=ast.Attribute(value=_name(result), attr="value", ctx=ast.Load()))
        out = [ast.If(test=_call(_flow("is_jump"), [_name(result)]), body=[route], orelse=[])]
        if names:
            out.append(ast.Assign(targets=[_tuple([_name(n, ast.Store()) for n in names], ast.Store())],
                                  value=_name(result)))
            bound = liveness.assigned(stmts)
            for n in dict.fromkeys(liveness.mutated(stmts) + liveness.passed(stmts)):
                if n in names and n in params and n not in bound:
                    before = ast.Subscript(value=_name(values), slice=_const(params.index(n)), ctx=ast.Load())
                    out.append(ast.Assign(targets=[_name(n, ast.Store())],
                                          value=_call(_flow("in_place"), [before, _name(n)])))
            for n in names:
                out.append(ast.If(test=ast.Compare(left=_name(n), ops=[ast.Is()], comparators=[_flow("UNBOUND")]),
                                  body=[ast.Delete(targets=[_name(n, ast.Del())])], orelse=[]))
        return out

    def _function(self, name, params, stmts, returns, node):
        """A generated function ``name(params)`` running ``stmts`` and returning the tuple of ``returns``."""
        self.depth += 1
        try:
            body = self._body(stmts)
        finally:
            self.depth -= 1
        # (a carried name may be unbound here: one that the body only passes on, unbound before the construct)
        out = self._fresh("out")
        body += self._safe_reads(returns, out) + [ast.Return(value=_name(out))]
        fn = _def(name, params, body)
        return ast.copy_location(fn, node)

    def _where(self, node):
        return _tuple([_const(self.filename), _const(node.lineno)])

    def _check_names(self, node, names):
        for n in names:
            if n.startswith("__cute_"):
                raise TraceError(f"the name {n} is reserved for the kernel compiler", where=(self.filename,
                                                                                            node.lineno))

    # -- statements ---------------------------------------------------------------------------
    def visit_If(self, node):
        names = self.carried.get(id(node), [])
        self._check_names(node, names)
        test = self.visit(node.test)
        jumps = self.loops[-1] if self.loops and _jumps(node.body + node.orelse) else []
        params = list(dict.fromkeys(names + jumps + self._inner(node.body + node.orelse)))
        then = self._fresh("then")
        else_ = self._fresh("else")
        values, result = self._fresh("values"), self._fresh("r")
        out = [self._function(then, params, node.body, names, node),
               self._function(else_, params, node.orelse, names, node)]
        out += self._safe_reads(params, values)
        call = _call(_flow("if_stmt"), [test, _name(then), _name(else_), _name(values), _const(len(names)),
                                        _tuple([_const(n) for n in names]), self._where(node)])
        out.append(ast.Assign(targets=[_name(result, ast.Store())], value=call))
        out += self._rebind(result, names, node.body + node.orelse, params, values)
        return [_located(s, node) for s in out]

    def _inner(self, stmts):
        """The local variables ``stmts`` bind or change (their generated function takes them as parameters, so
        that a name it rebinds is read from the enclosing function until then)."""
        return [n for n in dict.fromkeys(liveness.assigned(stmts) + liveness.mutated(stmts) + liveness.passed(stmts))
                if n in self.locals]

    def _loop(self, node, names, call_args, cond=None):
        self.loops.append(names)
        inner = list(dict.fromkeys(names + self._inner(node.body + node.orelse)))
        try:
            body, values, result = self._fresh("body"), self._fresh("values"), self._fresh("r")
            params = list(inner)
            stmts = list(node.body)
            if isinstance(node, ast.For):
                params = ["__cute_item"] + params
                stmts = [ast.copy_location(ast.Assign(targets=[node.target], value=_name("__cute_item")), node)] + stmts
            out = [self._function(body, params, stmts, names, node)]
        finally:
            self.loops.pop()
        else_ = None
        if node.orelse:
            else_ = self._fresh("orelse")
            out.append(self._function(else_, inner, node.orelse, names, node))
        if cond is not None:
            cond.args.args = [ast.arg(arg=p) for p in inner]
            out.append(cond)
        out += self._safe_reads(inner, values)
        targets = liveness.assigned([ast.Expr(node.target)]) if isinstance(node, ast.For) else []
        call = _call(_flow("for_stmt" if isinstance(node, ast.For) else "while_stmt"),
                     call_args + [_name(body), _name(values), _tuple([_const(n) for n in names]),
                                  _name(else_) if else_ else _const(None),
                                  _tuple([_const(t) for t in targets if t in names]), self._where(node)])
        out.append(ast.Assign(targets=[_name(result, ast.Store())], value=call))
        bound = [ast.Assign(targets=[node.target], value=_const(None))] if isinstance(node, ast.For) else []
        out += self._rebind(result, names, bound + node.body + node.orelse, inner, values)
        return [_located(s, node) for s in out]

    def visit_For(self, node):
        names = self.carried.get(id(node), [])
        self._check_names(node, names)
        it = node.iter
        if isinstance(it, ast.Call):
            func = self.visit(it.func)
            args = _tuple([self.visit(a) for a in it.args])
            kwargs = ast.Dict(keys=[_const(k.arg) if k.arg else None for k in it.keywords],
                              values=[self.visit(k.value) for k in it.keywords])
        else:
            func, args, kwargs = _const(None), _tuple([self.visit(it)]), ast.Dict(keys=[], values=[])
        return self._loop(node, names, [func, args, kwargs])

    def visit_While(self, node):
        names = self.carried.get(id(node), [])
        self._check_names(node, names)
        cond = self._fresh("cond")
        static = _is_const_expr(node.test)
        self.depth += 1
        try:
            test = self.visit(node.test)
        finally:
            self.depth -= 1
        cond_fn = ast.copy_location(_def(cond, names, [ast.Return(value=test)]), node)
        return self._loop(node, names, [_name(cond), _const(static)], cond_fn)

    def visit_Break(self, node):
        return self._jump(node, "break")

    def visit_Continue(self, node):
        return self._jump(node, "continue")

    def _jump(self, node, kind):
        names = self.loops[-1] if self.loops else []
        value = _call(_flow("Jump"), [_const(kind), _tuple([_name(n) for n in names])])
        return ast.copy_location(ast.Return(value=value), node)

    def visit_Return(self, node):
        value = self.visit(node.value) if node.value is not None else _const(None)
        if not self.depth:
            return ast.copy_location(ast.Return(value=value), node)
        jump = _call(_flow("Jump"), [_const("return"), value, _const(self.kernel)])
        return ast.copy_location(ast.Return(value=jump), node)

    def visit_Global(self, node):
        raise TraceError(f"`global {', '.join(node.names)}` in a kernel: its run-time control flow is compiled "
                         f"and cannot assign module variables", where=(self.filename, node.lineno))

    def visit_Nonlocal(self, node):
        raise TraceError(f"`nonlocal {', '.join(node.names)}` in a kernel: its run-time control flow is compiled "
                         f"and cannot assign variables of an enclosing function", where=(self.filename, node.lineno))

    # nested scopes keep their Python meaning
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    # -- expressions --------------------------------------------------------------------------
    def visit_BoolOp(self, node):
        values = [self.visit(v) for v in node.values]
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(_call(_flow(fn), [values[0]] + [_lambda(v) for v in values[1:]]), node)

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_flow("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        return ast.copy_location(_call(_flow("ifexp"), [node.test, _lambda(node.body), _lambda(node.orelse)]),
                                 node)

    def visit_Compare(self, node):
        node = self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        ops = _tuple([_const(type(op).__name__) for op in node.ops])
        return ast.copy_location(_call(_flow("compare"), [node.left, ops, _tuple([_lambda(c) for c in
                                                                                   node.comparators])]), node)

    def visit_Call(self, node):
        node = self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("min", "max") and f.id not in self.locals and not node.keywords \
                and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
            # min/max of two or more values: a run-time one among them is compared where it runs
            return ast.copy_location(_call(_flow(f"{f.id}_"), node.args), node)
        return node

    def visit_ListComp(self, node):  # comprehensions are their own scopes: their conditions stay Python's
        return node

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp


def _located(stmt, node):
    """``stmt`` (generated for the statement ``node``) placed on ``node``'s first line: its generated parts get
    that line (a user's expression inside keeps its own), so errors in it name the statement's line. A statement
    inside it that an inner call placed already (marked ``_cute_located``) is not walked again: the rewrite of a
    nested block would otherwise walk each level's statements once per enclosing level."""
    todo = [stmt]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.expr, ast.stmt, ast.excepthandler)) and getattr(n, "lineno", None) is None:
            n.lineno = n.end_lineno = node.lineno
            n.col_offset = n.end_col_offset = 0
        todo.extend(c for c in ast.iter_child_nodes(n) if not getattr(c, "_cute_located", False))
    stmt._cute_located = True
    return stmt


def _jumps(stmts):
    """Whether ``stmts`` hold a ``break`` or ``continue`` of the enclosing loop (not of a loop inside them)."""
    todo = list(stmts)
    while todo:
        s = todo.pop()
        if isinstance(s, (ast.Break, ast.Continue)):
            return True
        if isinstance(s, (ast.For, ast.While)):
            todo.extend(s.orelse)
        elif not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(c for c in ast.iter_child_nodes(s) if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case)))
    return False


def _is_const_expr(test):
    f = test.func if isinstance(test, ast.Call) else None
    return (isinstance(f, ast.Name) and f.id == "const_expr") or (isinstance(f, ast.Attribute)
                                                                 and f.attr == "const_expr")


def _is_loop_break(stmt):
    """Whether ``stmt`` is the statement ``loop_break()`` (or ``<module>.loop_break()``), without arguments."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call) or stmt.value.args or \
            stmt.value.keywords:
        return False
    f = stmt.value.func
    return (isinstance(f, ast.Name) and f.id == "loop_break") or (isinstance(f, ast.Attribute)
                                                                 and f.attr == "loop_break")


def _loop_breaks(stmts, in_loop):
    """Replace each ``loop_break()`` statement inside a loop of ``stmts`` (not inside a nested function) by
    ``break``, in place; one outside any loop stays a call (an error when it runs)."""
    for i, s in enumerate(stmts):
        if in_loop and _is_loop_break(s):
            stmts[i] = ast.copy_location(ast.Break(), s)
        elif isinstance(s, (ast.For, ast.While, ast.AsyncFor)):
            _loop_breaks(s.body, True)
            _loop_breaks(s.orelse, in_loop)
        elif isinstance(s, (ast.If, ast.With, ast.AsyncWith)):
            _loop_breaks(s.body, in_loop)
            _loop_breaks(getattr(s, "orelse", []), in_loop)
        elif isinstance(s, ast.Try):
            for block in (s.body, s.orelse, s.finalbody, *[h.body for h in s.handlers]):
                _loop_breaks(block, in_loop)


def source_tree(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, str] | None:
    """The ``def`` of ``fn`` with its original line numbers, and its file (``None`` without a source)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    try:  # the file on disk may not hold this code (exec'd under another file's name): no source then
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        return None
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if fdef.name != code.co_name:
        return None
    return fdef, code.co_filename


def transformed(fn: Callable[..., Any], kernel: bool) -> Callable[..., Any]:
    """``fn`` with its control flow going through the executors of ``flow`` (``fn`` itself when its source is
    not available: then Python's statements apply, and a run-time condition in them is a TraceError)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return fn
    key = (code, kernel)
    inner = _cache.get(key)
    if inner is None:
        paused = _deps.pause()  # reading and rewriting the source runs no user code: not recorded (see deps)
        try:
            inner = _cache[key] = _compile(fn, kernel)
        finally:
            _deps.resume(paused)
    if inner is False:
        return fn
    from . import executors as flow

    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] if n in cells else types.CellType(flow) for n in inner.co_freevars)
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__wrapped__ = fn
    return new


def _compile(fn, kernel):
    found = source_tree(fn)
    if found is None:
        return False
    fdef, filename = found
    code = fn.__code__
    fdef.decorator_list = []
    if any(isinstance(s, (ast.Global, ast.Nonlocal)) for s in ast.walk(fdef)) and not any(
            isinstance(s, (ast.If, ast.For, ast.While)) for s in ast.walk(fdef)):
        return False
    _loop_breaks(fdef.body, False)
    args = fdef.args
    local_names = {p.arg for p in args.posonlyargs + args.args + args.kwonlyargs}
    local_names |= {p.arg for p in (args.vararg, args.kwarg) if p is not None} | set(liveness.assigned(fdef.body))
    rewriter = _Rewriter(liveness.carried(fdef), kernel, filename, local_names)
    fdef.body = rewriter._body(fdef.body) or [ast.Pass()]
    factory = _def("__cute_factory", list(code.co_freevars) + [_FLOW], [fdef, ast.Return(value=_name(fdef.name))])
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    flags = code.co_flags & __future__.annotations.compiler_flag
    compiled = compile(module, filename, "exec", flags=flags, dont_inherit=True)
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    return next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name)
