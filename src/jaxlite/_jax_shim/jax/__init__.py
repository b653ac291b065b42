"""A stand-in `jax` package: on first import it installs jaxlite as `jax` (see jaxlite._install).

Put its parent directory first on PYTHONPATH (`python -m jaxlite --shim-path` prints it).
"""
import sys

del sys.modules["jax"]  # this shim; install_as_jax puts jaxlite's `jax` module in its place
import jaxlite  # noqa: E402

jaxlite.install_as_jax()
