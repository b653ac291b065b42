"""Shared fixtures: the optional real-JAX oracle, and x64 toggling that always restores."""
import contextlib

import pytest

import jaxlite


def oracle():
  """Real JAX if installed (test oracle only), else skip."""
  return pytest.importorskip("jax")


@contextlib.contextmanager
def x64(enabled: bool = True):
  old = jaxlite.config.jax_enable_x64
  jaxlite.config.update("jax_enable_x64", enabled)
  try:
    yield
  finally:
    jaxlite.config.update("jax_enable_x64", old)
