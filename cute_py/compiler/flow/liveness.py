"""Which variables a kernel's ``if``/``for``/``while`` statement must carry: assignments and liveness on the AST.

A run-time branch or loop (see ``rewrite`` and ``flow``) hands the variables its body assigns to the code after
it. Only the ones that code may still read need to be carried: a temporary that the body assigns and uses is
local to the body (it may be a Python object that cannot be carried at all). :func:`carried` returns, for each
``if``, ``for`` and ``while`` statement of a function, the names it must carry, in source order:

- the names the statement assigns (``x = ...``, ``x += ...``, ``for x in``, ``with ... as x``, ``x := ...``,
  imports, nested ``def``/``class``) that are live after it: read later in the function before being assigned
  again, on some path (through ``break``, ``continue``, ``return`` and loops' back edges, computed to a fixed
  point). For a loop, the names read at its head (by its next iteration) count too;
- every name whose object the statement mutates without binding the name (``x[i] = ...``, ``x.a = ...``,
  ``x.method(...)``: an object such as a pipeline state, rebuilt from carried values), live or not: the object
  may be read after the statement under another name, as a parameter's object is by the caller;
- the live names it passes to calls (``f(x)``): the callee may mutate their objects.

Nested functions, lambdas and comprehensions are not entered: the names they read count as read where they
are defined, and the names they assign are their own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

__all__ = ["carried", "assigned", "mutated", "passed", "loads"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _walk(node: ast.AST, into_scopes: bool = False) -> Iterable[ast.AST]:
    """The nodes under ``node`` (itself included), not entering nested scopes unless ``into_scopes``."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if into_scopes or not isinstance(child, _SCOPES):
                todo.append(child)
            else:
                yield from _scope_header(child)


def _scope_header(node):
    """The parts of a nested scope evaluated where it is defined (defaults, decorators, base classes, the
    first iterable of a comprehension) and the node itself."""
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            yield from _walk(d)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for d in node.decorator_list:
            yield from _walk(d)
    if isinstance(node, ast.ClassDef):
        for d in list(node.bases) + [k.value for k in node.keywords]:
            yield from _walk(d)


def _stores(node: ast.AST) -> list[str]:
    """The names a node binds in the current scope (not entering nested scopes)."""
    out = []
    for n in _walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.append(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            out.append(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.extend((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.append(n.name)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.append(node.name)
    return out


def _free_loads(scope: ast.AST) -> set[str]:
    """Every name a nested scope reads (a superset of its free variables: enough for liveness)."""
    return {n.id for n in _walk(scope, into_scopes=True) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def loads(node: ast.AST) -> set[str]:
    """The names ``node`` reads in the current scope, and every name its nested scopes read."""
    out = set()
    for n in _walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        elif isinstance(n, _SCOPES) and n is not node:
            out |= _free_loads(n)
    return out


def _base_name(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def assigned(stmts: Iterable[ast.stmt]) -> list[str]:
    """The names the statements bind (in order of first appearance)."""
    out = {}
    for s in stmts:
        for name in _stores(s):
            out.setdefault(name, None)
    return list(out)


def mutated(stmts: Iterable[ast.stmt]) -> list[str]:
    """The names whose objects the statements change in place: ``x[i] = v``, ``x.a = v``, ``x.f(...)``."""
    out = {}
    for s in stmts:
        for n in _walk(s):
            target = None
            if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                target = n.value
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                target = n.func.value
            name = _base_name(target) if target is not None else None
            if name is not None:
                out.setdefault(name, None)
    return list(out)


def passed(stmts: Iterable[ast.stmt]) -> list[str]:
    """The names the statements pass to calls (``f(x)``, ``f(*x)``, ``f(k=x)``): the callee may change their
    objects in place, as a helper advancing a pipeline state does."""
    out = {}
    for s in stmts:
        for n in _walk(s):
            if isinstance(n, ast.Call):
                for a in [a.value if isinstance(a, ast.Starred) else a for a in n.args] + [k.value for k in n.keywords]:
                    if isinstance(a, ast.Name):
                        out.setdefault(a.id, None)
    return list(out)


def _carried(body, live):
    """The names a construct with ``body`` carries: those it binds that ``live`` holds, and every name whose object
    it changes in place or passes to a call (the callee may change it) without binding it. (Such an object may be
    read after the construct under another name: a parameter's object by the caller, as a pipeline state that a
    helper advances in a loop, or one unpacked from a tuple the caller holds.)"""
    bound = assigned(body)
    changed = [m for m in dict.fromkeys(mutated(body) + passed(body)) if m not in bound]
    return [n for n in bound if n in live] + changed


class _Analysis:
    """Backward liveness over a function body; ``result[id(stmt)]`` holds each construct's carried names."""

    def __init__(self):
        self.result = {}
        self.loops = []  # (live after the loop, live at its head) of the enclosing loops

    def block(self, stmts, live):
        for s in reversed(stmts):
            live = self.stmt(s, live)
        return live

    def _record(self, node, body, live):
        self.result[id(node)] = _carried(body, live)

    def stmt(self, s, live):
        if isinstance(s, ast.If):
            after = live
            inside = self.block(s.body, after) | self.block(s.orelse, after)
            self._record(s, s.body + s.orelse, after)
            return loads(s.test) | inside
        if isinstance(s, (ast.For, ast.While)):
            return self._loop(s, live)
        if isinstance(s, ast.Break):
            return set(self.loops[-1][0]) if self.loops else set()
        if isinstance(s, ast.Continue):
            return set(self.loops[-1][1]) if self.loops else set()
        if isinstance(s, ast.Return):
            return loads(s.value) if s.value is not None else set()
        if isinstance(s, ast.Raise):
            return loads(s)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            inner = self.block(s.body, live)
            targets = set(_stores(ast.Module([ast.Expr(i.optional_vars) for i in s.items if i.optional_vars],
                                              type_ignores=[])))
            return (inner - targets) | set().union(*(loads(i.context_expr) for i in s.items))
        if isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            # any statement may raise into a handler: everything read anywhere stays live throughout
            parts = [s.body, s.orelse, s.finalbody] + [h.body for h in s.handlers]
            inner = set(live)
            for p in parts:
                inner |= self.block(p, live | inner)
            for h in s.handlers:
                if h.type is not None:
                    inner |= loads(h.type)
            return inner
        if isinstance(s, ast.Match):
            inner = set()
            for case in s.cases:
                inner |= self.block(case.body, live) | loads(case.pattern)
                if case.guard is not None:
                    inner |= loads(case.guard)
            return inner | live | loads(s.subject)
        # a simple statement: it reads, then binds
        reads = loads(s)
        binds = set(_stores(s))
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            reads |= _free_loads(s)
        return (live - binds) | reads

    def _loop(self, s, live):
        after = live
        head = set(after)
        targets = set(_stores(ast.Module([ast.Expr(s.target)], type_ignores=[]))) if isinstance(s, ast.For) else set()
        test = loads(s.test) if isinstance(s, ast.While) else set()
        else_in = self.block(s.orelse, after) if s.orelse else set(after)
        while True:  # the fixed point of the live set at the loop's head
            self.loops.append((after, head))
            body_in = self.block(s.body, head)
            self.loops.pop()
            new_head = else_in | (body_in - targets) | test | head
            if new_head == head:
                break
            head = new_head
        names = _carried(s.body, head | after)
        if isinstance(s, ast.For):
            names = list(dict.fromkeys(names + [t for t in assigned([ast.Expr(s.target)]) if t in after]))
        self.result[id(s)] = names
        return head | (loads(s.iter) if isinstance(s, ast.For) else set())


def carried(fn: ast.FunctionDef) -> dict[int, list[str]]:
    """``id(statement) -> names`` for every ``if``/``for``/``while`` in ``fn``'s body (not in nested scopes).

    Only the function's local variables (its parameters and the names it binds) are carried: a module or a
    global object whose method a statement calls is not."""
    a = _Analysis()
    a.block(fn.body, set())
    args = fn.args
    local = {p.arg for p in args.posonlyargs + args.args + args.kwonlyargs}
    local |= {p.arg for p in (args.vararg, args.kwarg) if p is not None}
    local |= set(assigned(fn.body))
    return {k: [n for n in names if n in local] for k, names in a.result.items()}
