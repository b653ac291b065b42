"""`jax._src.dispatch` as far as JAX libraries reach into it (equinox imports it at module level).

`wait_for_tokens` in JAX blocks until the runtime tokens of ordered effects (io_callback,
ordered debug prints) have been delivered. jaxlite runs every computation, callbacks included,
synchronously on the calling thread in program order, so by the time any call returns its
effects have happened: there is never an outstanding token, and waiting returns at once.
"""
from __future__ import annotations


def wait_for_tokens() -> None:
  """Blocks until ordered effects dispatched so far are done: always already true in jaxlite."""
  return None
