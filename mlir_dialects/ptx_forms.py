"""PTX forms that known assembler releases get wrong, and what is done about each before the PTX is assembled.

:data:`KNOWN_BAD_FORMS` is the table: each :class:`BadForm` names the assembler (``"ptxas"`` or ``"nvjitlink"``,
in-process or in a child process alike), the range of its versions that mishandle the form, how the form is found
in PTX, what the bad assembler does with it, and either a rewrite that removes it without changing what the kernel
computes or ``None`` when it cannot be removed. :func:`adapt` applies the table to PTX for one assembler and
version: each form found is rewritten (the caller warns, naming :attr:`BadForm.effect` and the fix), or, for a
form that cannot be dropped, :class:`AssemblyError` is raised naming the fix. A version that is not known (a ptxas
that says no release) counts as bad: a dropped hint costs speed, a miscompiled kernel its results.

The entries:

- ``cp.async .L2::cache_hint`` (``cp.async.{ca,cg}.shared.global.L2::cache_hint [dst], [src], size{, src_size},
  policy;``): ptxas and nvJitLink older than 13.5 (13.0.88, say) turn it into code reading two uniform registers
  that nothing writes, and the kernel dies with an illegal instruction. An L2 cache policy is a performance hint
  only, so the rewrite drops ``.L2::cache_hint`` and the policy operand; the copy is otherwise the same.
"""

import re
from dataclasses import dataclass
from typing import Callable, Optional

from .errors import AssemblyError

__all__ = ["BadForm", "KNOWN_BAD_FORMS", "NVJITLINK_FIX", "forms_for", "adapt", "may_need_adapting"]

NVJITLINK_FIX = "pip install 'nvidia-nvjitlink>=13.5.37'"


@dataclass(frozen=True)
class BadForm:
    """A PTX form that ``assembler`` releases in ``[since, until)`` mishandle.

    ``detect`` finds every instance of the form (broadly: an instance ``rewrite`` cannot parse is an error, never
    left in place); ``rewrite`` (a ``re.sub`` replacement function for ``detect``'s matches) gives equivalent PTX
    without it, or is ``None`` when the form cannot be dropped. ``effect`` says what the bad release does, ``dropped``
    what the rewrite removes, ``fix`` how to get an assembler that handles it."""

    name: str
    assembler: str
    since: tuple
    until: tuple
    detect: "re.Pattern[str]"
    rewrite: Optional[Callable[["re.Match[str]"], str]]
    effect: str
    dropped: str = ""
    fix: str = NVJITLINK_FIX

    def applies_to(self, assembler, version):
        """Whether ``assembler`` at ``version`` (``(major, minor)``, or ``None`` when unknown) mishandles the form."""
        return assembler == self.assembler and (version is None or self.since <= tuple(version) < self.until)


# cp.async{.ca,.cg}.shared{::cta}.global with .L2::cache_hint among its qualifiers, up to the end of the instruction
_CP_ASYNC_HINT = re.compile(r"\bcp\.async\.(?:ca|cg)\.[^;\n]*\.L2::cache_hint\b[^;\n]*;")
_CP_ASYNC_HINT_PARTS = re.compile(
    r"(?P<op>cp\.async\.(?:ca|cg)\.shared(?:::cta)?\.global(?:\.L2::(?:64B|128B|256B))?)\.L2::cache_hint"
    r"(?P<size>\.L2::(?:64B|128B|256B))?"
    r"(?P<operands>[ \t]+\[[^\]\n;]*\][ \t]*,[ \t]*\[[^\]\n;]*\][ \t]*,[ \t]*[^,;\n]+?(?:[ \t]*,[ \t]*[^,;\n]+?)?)"
    r"[ \t]*,[ \t]*(?P<policy>%?[A-Za-z_$][\w$]*|\d+|0[xX][0-9a-fA-F]+)[ \t]*;")


def _drop_cp_async_hint(match):
    """The cp.async without ``.L2::cache_hint`` and its policy operand (the last one); ``match`` unchanged
    (and then refused by :func:`adapt`) when it is not that instruction's shape."""
    text = match.group(0)
    parts = _CP_ASYNC_HINT_PARTS.fullmatch(text)
    if parts is None:
        return text
    return f"{parts['op']}{parts['size'] or ''}{parts['operands']};"


_CP_ASYNC_HINT_EFFECT = ("assembles cp.async with .L2::cache_hint into code reading two uniform registers that "
                         "nothing writes (the kernel dies with an illegal instruction)")
_PTXAS_FIX = (f"{NVJITLINK_FIX} (then nvJitLink assembles in-process; PTX that ptxas assembles as a whole program "
              f"(setmaxnreg), or all PTX under MLIR_DIALECTS_ASSEMBLER=ptxas, needs a ptxas >= 13.5)")
KNOWN_BAD_FORMS = tuple(
    BadForm("cp.async .L2::cache_hint", assembler, (0, 0), (13, 5), _CP_ASYNC_HINT, _drop_cp_async_hint,
            _CP_ASYNC_HINT_EFFECT, "the L2 cache policy of its cp.async copies (a performance hint only)", fix)
    for assembler, fix in (("ptxas", _PTXAS_FIX), ("nvjitlink", NVJITLINK_FIX)))


def forms_for(assembler, version, forms=None):
    """The entries of ``forms`` (default :data:`KNOWN_BAD_FORMS`) that ``assembler`` at ``version`` mishandles."""
    return [f for f in (KNOWN_BAD_FORMS if forms is None else forms) if f.applies_to(assembler, version)]


def may_need_adapting(ptx, forms=None):
    """Whether ``ptx`` (str) holds a form of ``forms`` (default :data:`KNOWN_BAD_FORMS`) for any assembler: a
    cheap test before the assembler and its version are looked up."""
    return any(f.detect.search(ptx) for f in (KNOWN_BAD_FORMS if forms is None else forms))


def _describe(assembler, version):
    return f"{assembler} {'of unknown version' if version is None else '.'.join(map(str, version))}"


def adapt(ptx, assembler, version, forms=None):
    """``(ptx, dropped)``: ``ptx`` (str) with every form that ``assembler`` at ``version`` mishandles rewritten
    away, and the :class:`BadForm` entries that were (in table order). :class:`AssemblyError` naming the fix for a
    form that cannot be dropped, or an instance of a form the rewrite does not recognise."""
    dropped = []
    for form in forms_for(assembler, version, forms):
        if not form.detect.search(ptx):
            continue
        who = _describe(assembler, version)
        if form.rewrite is None:
            raise AssemblyError(f"the PTX uses {form.name}, which {who} {form.effect}; it cannot be dropped "
                                f"without changing the kernel: {form.fix}")
        ptx = form.detect.sub(form.rewrite, ptx)
        left = form.detect.search(ptx)
        if left is not None:
            raise AssemblyError(f"the PTX uses {form.name} in a shape that cannot be rewritten ({left.group(0)!r}), "
                                f"and {who} {form.effect}: {form.fix}")
        dropped.append(form)
    return ptx, dropped
