"""Recording the code objects that start running through ``sys.monitoring`` (Python 3.12 on), for
:class:`cute_py.compiler.cache.deps.Recorder`.

The recordings listen to ``PY_START`` under a tool id of this module's (the first of 3 and 4 that is free, taken
once for the process). A code location is silenced after its first start (``DISABLE``) and a recording's start
re-arms them all (``restart_events``), so a code object costs one event a recording however often it runs. Every
recording live at a start records it: recordings may nest, and the code of other threads is recorded too (more
checks, never fewer). During a :func:`pause` nothing is recorded or silenced (the code may start again unpaused).

Before Python 3.12, or with both tool ids held by other tools, :func:`listen` says no and the recorder uses a trace
hook instead.
"""

from __future__ import annotations

import sys

__all__ = ["listen", "stop", "pause", "resume"]

_MONITORING = getattr(sys, "monitoring", None)
_TOOL = []  # the tool id this module holds, once taken
_LIVE = []  # the ``codes`` dicts of the recordings listening now
_PAUSED = [0]  # pauses in force


def _started(code, offset, _frame=sys._getframe):
    """``PY_START``'s callback: ``code`` (now running, in the caller's frame) into every live recording with its
    globals, then silenced until the next recording starts; nothing during a pause."""
    if _PAUSED[0]:
        return None
    entry = None
    for codes in _LIVE:
        if id(code) not in codes:
            entry = entry or (code, _frame(1).f_globals)
            codes[id(code)] = entry
    return _MONITORING.DISABLE


def _tool():
    if not _TOOL and _MONITORING is not None:
        for tool in (3, 4):
            if _MONITORING.get_tool(tool) is None:
                _MONITORING.use_tool_id(tool, "cute_py")
                _MONITORING.register_callback(tool, _MONITORING.events.PY_START, _started)
                _TOOL.append(tool)
                break
    return _TOOL[0] if _TOOL else None


def listen(codes: dict) -> bool:
    """Record into ``codes`` (``{id(code): (code, globals)}``) every code object that starts from now on, until
    :func:`stop`; ``False`` (and nothing done) where ``sys.monitoring`` cannot be used."""
    tool = _tool()
    if tool is None:
        return False
    _LIVE.append(codes)
    _MONITORING.set_events(tool, _MONITORING.events.PY_START)
    _MONITORING.restart_events()
    return True


def stop(codes: dict) -> None:
    """End the recording into ``codes`` (the events are switched off with the last one)."""
    for i, live in enumerate(_LIVE):
        if live is codes:
            del _LIVE[i]
            break
    if not _LIVE and _TOOL:
        _MONITORING.set_events(_TOOL[0], 0)


def pause() -> bool:
    """Record nothing until :func:`resume` (library code that calls no user code); ``False`` when no recording
    listens (nothing to resume then)."""
    if not _LIVE:
        return False
    _PAUSED[0] += 1
    return True


def resume() -> None:
    """End a :func:`pause` that returned ``True``."""
    _PAUSED[0] -= 1
