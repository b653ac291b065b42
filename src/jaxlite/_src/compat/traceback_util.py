"""`jax._src.traceback_util`: an exception leaving a jaxlite API boundary (a jitted function, the
functions grad/vmap/make_jaxpr... return, lax's control flow) loses jaxlite's own frames, so a
user's traceback shows the user's lines, as JAX's shows no JAX frames.

`jax_traceback_filtering` (env JAX_TRACEBACK_FILTERING) picks the mode, as in JAX:
  off                  the traceback is left whole;
  tracebackhide        jaxlite's frames are marked `__tracebackhide__` (IPython and pytest skip
                       them) and left in place;
  remove_frames        the frames are removed; the whole traceback rides along as the
                       exception's `__cause__` (an `UnfilteredStackTrace`);
  quiet_remove_frames  the frames are removed and a note says so (the whole one is dropped);
  auto (default)       tracebackhide under IPython, quiet_remove_frames elsewhere.
Only the outermost boundary an exception leaves filters it; the boundary's own cost is a
try/except (nothing on the success path); the stack is only walked when an exception passes.
"""
from __future__ import annotations

import functools
import os
import sys
import types

from jaxlite._src.base.config import config

# jaxlite's package directory (two up from this file): every frame of a file under it is internal.
_exclude_paths: list = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep]

# The code objects of boundary frames: an exception raised below one of them is filtered there.
_boundary_codes: set = set()

SIMPLIFIED_TB_MSG = ("For simplicity, JAX has removed its internal frames from the traceback "
                     "of the following exception. Set JAX_TRACEBACK_FILTERING=off to include "
                     "these.")
_UNFILTERED_MSG = ("The stack trace below excludes JAX-internal frames.\n"
                   "The preceding is the original exception that occurred, unmodified.\n"
                   "\n--------------------")
MODES = ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto")


class UnfilteredStackTrace(Exception):
  """The whole traceback of an exception whose jaxlite frames were removed (remove_frames)."""


# Told of each path registered: `jax.extend.source_info_util` keeps its own list and adds itself
# here at its import (this bottom module never imports the public one).
exclusion_listeners: list = []


def register_exclusion(path: str) -> None:
  """Frames of files under `path` are internal too (libraries built on jaxlite register)."""
  _exclude_paths.append(path)
  for listener in exclusion_listeners:
    listener(path)


def include_filename(filename: str) -> bool:
  return not any(filename.startswith(p) for p in _exclude_paths)


def include_frame(frame) -> bool:
  return include_filename(frame.f_code.co_filename)


def filter_traceback(tb):
  """`tb` without the frames of excluded files (a new chain; the frames are shared)."""
  kept = [(t.tb_frame, t.tb_lasti, t.tb_lineno) for t in _walk(tb)
          if include_frame(t.tb_frame)]
  out = None
  for frame, lasti, lineno in reversed(kept):
    out = types.TracebackType(out, frame, lasti, lineno)
  return out


def _walk(tb):
  while tb is not None:
    yield tb
    tb = tb.tb_next


def _with_callers(tb, frame):
  """`tb` preceded by the frames that called the boundary, up to the first module level (the
  whole stack as the user would see it; a REPL's own frames above stay out)."""
  module_level = False
  while frame is not None and not (module_level and frame.f_code.co_name != "<module>"):
    if include_frame(frame):
      tb = types.TracebackType(tb, frame, frame.f_lasti, frame.f_lineno)
    module_level = module_level or frame.f_code.co_name == "<module>"
    frame = frame.f_back
  return tb


def _running_under_ipython() -> bool:
  return "IPython" in sys.modules and getattr(sys.modules["IPython"], "get_ipython",
                                              lambda: None)() is not None


def filtering_mode() -> str:
  mode = config.jax_traceback_filtering
  if mode in (None, "auto"):
    return "tracebackhide" if _running_under_ipython() else "quiet_remove_frames"
  return mode


def _below_another_boundary(depth: int) -> bool:
  """Whether a boundary frame encloses the one `depth` frames up: it filters instead."""
  frame = sys._getframe(depth + 1)
  while frame is not None:
    if frame.f_code in _boundary_codes:
      return True
    frame = frame.f_back
  return False


def filter_at_boundary(e: BaseException, depth: int = 1) -> None:
  """Filters `e`'s traceback in place if this boundary (`depth` frames above the caller of this
  function) is the outermost one; the boundary then re-raises `e` with a bare `raise`."""
  if e.__traceback__ is None or _below_another_boundary(depth + 1):
    return
  _filter(e, filtering_mode(), sys._getframe(depth + 1))


def _filter(e: BaseException, mode: str, caller) -> None:
  if mode == "off":
    return
  tb = e.__traceback__
  if mode == "tracebackhide":
    for t in _walk(tb):
      if not include_frame(t.tb_frame):
        t.tb_frame.f_locals["__tracebackhide__"] = True
    return
  e.with_traceback(filter_traceback(tb))
  if mode == "quiet_remove_frames":
    note = "--------------------\n" + SIMPLIFIED_TB_MSG
    if note not in getattr(e, "__notes__", ()):  # an exception re-raised through a second one
      e.add_note(note)
    return
  if mode != "remove_frames":
    raise ValueError(f"JAX_TRACEBACK_FILTERING={mode} is not a valid value.")
  whole = UnfilteredStackTrace(f"{type(e).__name__}: {e}\n\n{_UNFILTERED_MSG}")
  whole.with_traceback(_with_callers(tb, caller) if caller is not None else tb)
  whole.__cause__, whole.__context__ = e.__cause__, e.__context__
  whole.__suppress_context__ = e.__suppress_context__
  e.__cause__, e.__context__ = whole, None


def api_boundary(fun=None, *, repro_api_name=None, repro_user_func=False):
  """Marks `fun` as a public entry point: exceptions leaving it lose jaxlite's frames."""
  if fun is None:
    return lambda f: api_boundary(f)

  @functools.wraps(fun)
  def boundary(*args, **kwargs):
    __tracebackhide__ = True  # noqa: F841 - read by IPython and pytest
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      filter_at_boundary(e)
      raise
  _boundary_codes.add(boundary.__code__)
  return boundary


def register_boundary_code(code) -> None:
  """A method that filters inline (PjitFunction.__call__) counts as a boundary frame too."""
  _boundary_codes.add(code)


def _excepthook(exc_type, e, tb):
  """An uncaught exception (a script's eager `jnp.dot` of mismatched shapes, not under any
  boundary) loses jaxlite's frames too before Python prints it, when jaxlite's are in it."""
  if isinstance(e, Exception) and tb is not None and \
      not all(include_frame(t.tb_frame) for t in _walk(tb)):
    e.__traceback__ = tb
    mode = filtering_mode()
    _filter(e, "quiet_remove_frames" if mode == "tracebackhide" else mode, None)
    tb = e.__traceback__
  _previous_excepthook(exc_type, e, tb)  # Python's own hook prints e.__traceback__


_previous_excepthook = sys.excepthook


def install_excepthook() -> None:
  """Takes over Python's default hook only (IPython and other tools keep theirs)."""
  global _previous_excepthook
  if sys.excepthook is sys.__excepthook__:
    _previous_excepthook = sys.excepthook
    sys.excepthook = _excepthook
