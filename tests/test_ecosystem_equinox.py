"""JAX behaviours equinox 0.13.8's own suite depends on (issue 34), each against real JAX when it
is installed and against values recorded from JAX 0.10.2 otherwise.
"""
import logging

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp


def _jax_or_none():
  try:
    import jax as real
  except ImportError:
    return None
  return real


# --- a failing pure_callback / io_callback -----------------------------------------------------


def _callback_failures(m, caplog):
  """(exception type name, its message's head and tail, what was logged) for a callback that
  raises, eagerly and under jit, through pure_callback and io_callback."""
  experimental = __import__(m.__name__ + ".experimental", fromlist=["io_callback"])

  def boom(x):
    raise ValueError("boom")

  sds = m.ShapeDtypeStruct((), np.float32)
  calls = {
    "pure eager": lambda x: m.pure_callback(boom, sds, x),
    "pure jit": m.jit(lambda x: m.pure_callback(boom, sds, x)),
    "io eager": lambda x: experimental.io_callback(boom, sds, x),
    "io jit": m.jit(lambda x: experimental.io_callback(boom, sds, x)),
  }
  seen = {}
  for name, call in calls.items():
    caplog.clear()
    with caplog.at_level(logging.ERROR):
      try:
        call(m.numpy.array(1.0))
        seen[name] = None
        continue
      except Exception as e:  # noqa: BLE001 - what it raises is what is compared
        err = e
    text = str(err)
    seen[name] = (type(err).__name__, isinstance(err, RuntimeError), err.__cause__ is None,
                  text.split("Traceback")[0], text.rstrip().splitlines()[-1],
                  sorted({(r.name, r.getMessage()) for r in caplog.records}))
  return seen


_RECORDED_CALLBACK_FAILURES = {  # JAX 0.10.2 on CPU
  "pure eager": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
                 "ValueError: boom", [("jax._src.callback", "jax.pure_callback failed")]),
  "pure jit": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
               "ValueError: boom", [("jax._src.callback", "jax.pure_callback failed")]),
  "io eager": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
               "ValueError: boom", [("jax._src.callback", "jax.io_callback failed")]),
  "io jit": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
             "ValueError: boom", [("jax._src.callback", "jax.io_callback failed")]),
}


def test_a_failing_callback_raises_jax_runtime_error_with_the_traceback(caplog):
  """equinox's `error_if` raises inside a pure_callback; its `filter_jit` catches JAX's
  JaxRuntimeError, finds its own error's name in the message and re-raises it as
  EquinoxRuntimeError, and filters the `jax._src.callback` logger's record."""
  real = _jax_or_none()
  want = _RECORDED_CALLBACK_FAILURES if real is None else _callback_failures(real, caplog)
  assert want == _RECORDED_CALLBACK_FAILURES
  assert _callback_failures(jax, caplog) == want


# --- a 0-d result of a compiled program, updated in place ---------------------------------------


def _scalar_updates(m):
  x = m.jit(lambda k: m.random.normal(k, ()))(m.random.PRNGKey(0))  # a 0-d program output
  y = m.jit(lambda a: a * 2 + 1)(m.numpy.float32(1.5))
  return [float(x.at[()].set(3)), float(x.at[()].add(1) - x), float(y.at[...].multiply(2)),
          float(y.at[()].get())]


def test_scalar_program_output_updates_with_at():
  """equinox's ω operators (`test_misc.py::test_ω_inplace`) `.at[()].set` a 0-d array that a
  jitted function returned; jaxlite's compiled programs may hand those back as NumPy scalars."""
  real = _jax_or_none()
  want = [3.0, 1.0, 8.0, 4.0] if real is None else _scalar_updates(real)
  np.testing.assert_allclose(want, [3.0, 1.0, 8.0, 4.0], rtol=1e-6)
  np.testing.assert_allclose(_scalar_updates(jax), want, rtol=1e-6)
  assert jnp.asarray(2.0).at[()].set(5).shape == ()
