"""NumPy's floating-point warnings (invalid value, divide by zero, overflow) silenced inside
jaxlite's kernels: JAX computes in XLA, which never warns, so a user never sees one from JAX.

`quiet()` / `loud(token)` bracket a kernel call. They set NumPy's error state (a context
variable in NumPy 2) directly: `np.errstate` does the same at several times the cost, too much
for eager dispatch, which pays this on every op. The user's own NumPy calls keep their state.
"""
from __future__ import annotations

import functools

import numpy as np

try:  # NumPy >= 2: the error state is a context variable holding an opaque "extobj"
  from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
  _IGNORE = _make_extobj(all="ignore")

  # C-level callables, not Python functions: a Python frame each would double the bracket's
  # cost (~0.3 µs on the eager `x + 1` path, ~2 µs in all).
  quiet = functools.partial(_extobj_contextvar.set, _IGNORE)
  loud = _extobj_contextvar.reset
except ImportError:  # another NumPy: the public context manager, entered and left by hand
  def quiet():
    state = np.errstate(all="ignore")
    state.__enter__()
    return state

  def loud(token) -> None:
    token.__exit__(None, None, None)
