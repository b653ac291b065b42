"""`jax.debug.breakpoint`: drops into pdb with the traced values, when the program runs.

The breakpoint is a debug callback: eager, under jit (at execution) and per example under vmap,
the debugger opens in a frame whose locals are the values of the arguments (`x` below):

    jax.debug.breakpoint()          # opens pdb at the call site (frames of user code)

It runs `pdb.set_trace` in the caller's frame with the callback's Arrays bound in `locals()` as
`args`; set `JAXLITE_DEBUG_BREAKPOINT=0` (or pass `backend="none"`) to make it a no-op, e.g. in
batch runs.
"""
from __future__ import annotations

import os
import sys

from jaxlite._src.transforms import callbacks


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
  """Enters pdb at this point of the program when it runs (see the module docstring)."""
  del filter_frames, num_frames, token
  if backend == "none" or os.environ.get("JAXLITE_DEBUG_BREAKPOINT", "1") == "0":
    return None
  frame = sys._getframe(1)
  names = [k for k, v in frame.f_locals.items() if _is_value(v)]
  values = [frame.f_locals[k] for k in names]

  def _enter(*vals):
    import pdb
    env = dict(frame.f_globals)
    env.update(frame.f_locals)
    env.update(zip(names, vals))
    debugger = pdb.Pdb()
    debugger.reset()
    print(f"Entering jaxlite debugger at {frame.f_code.co_filename}:{frame.f_lineno}; "
          f"values of: {', '.join(names) or '(none)'}")
    code = compile("pass", frame.f_code.co_filename, "exec")
    debugger.run(code, env, env)
  callbacks.debug_callback(_enter, *values, ordered=ordered)
  return None


def _is_value(v) -> bool:
  from jaxlite._src.base import core
  return isinstance(v, core.Array)
