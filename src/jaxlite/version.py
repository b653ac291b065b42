"""`jax.version`: the JAX API version jaxlite implements, for libraries' version checks.

`__version__` is the JAX release whose behaviour jaxlite follows (0.10.2), not jaxlite's own
package version (`jaxlite.__version__`): libraries such as flax compare
`jax.version.__version_info__` against JAX releases, and jaxlite answers as that release.
"""
__version__ = "0.10.2"
_version = __version__
__version_info__ = (0, 10, 2)
_minimum_jaxlib_version = "0.10.2"
_minimum_jaxlib_version_info = (0, 10, 2)
