"""`jax.jit`: the public entry point over `jit_function.PjitFunction` (tracing once per abstract
signature, staging a `jit` eqn, running the backend's executable).
"""
from __future__ import annotations

import functools

from jaxlite._src.transforms.jit_function import PjitFunction


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=(), keep_unused=False, inline=False, in_shardings=None,
        out_shardings=None, device=None, backend=None, abstracted_axes=None,
        compiler_options=None):
  """Compiles `fun` with tracing: one trace per abstract signature, NumPy codegen to run."""
  if fun is None:
    return functools.partial(jit, static_argnums=static_argnums,
                             static_argnames=static_argnames, donate_argnums=donate_argnums,
                             donate_argnames=donate_argnames, keep_unused=keep_unused,
                             inline=inline, in_shardings=in_shardings,
                             out_shardings=out_shardings)
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  return PjitFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                      keep_unused, inline, in_shardings=in_shardings,
                      out_shardings=out_shardings)
