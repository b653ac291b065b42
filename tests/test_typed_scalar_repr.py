"""JAX 0.10's typed Python scalars (`TypedInt`, `TypedFloat`, `TypedComplex`: a weak Python
number with its dtype) print as JAX's: `Literal(TypedInt(1, dtype=int32))` in an equation's
invars (the custom-interpreters tutorial prints them), while a jaxpr still shows `1:i32[]`."""
from __future__ import annotations

import numpy as np

import jaxlite
import jaxlite.numpy as jlnp
from conftest import oracle


def _texts(jax, jnp):
  out = []
  for fn, arg in ((lambda x: (x + 1, x * 2.0, x + 1j), 5), (lambda x: x + 1, 5.0),
                  (lambda w, x: jnp.dot(w, x) + jnp.ones(5), None)):
    args = (arg,) if arg is not None else (jnp.ones((5, 10)), jnp.ones(10))
    closed = jax.make_jaxpr(fn)(*args)
    out.append(str(closed))
    out += [str(e.invars).split(", ", 1)[-1] for e in closed.jaxpr.eqns
            if any(type(v).__name__ == "Literal" for v in e.invars)]
  return out


def test_literals_and_typed_scalars_print_as_jax():
  jax = oracle()
  import jax.numpy as jnp
  assert _texts(jaxlite, jlnp) == _texts(jax, jnp)
  from jax._src import literals
  from jaxlite._src.base import dtypes
  for ours, theirs, v, dt in ((dtypes.TypedInt, literals.TypedInt, 3, "int32"),
                              (dtypes.TypedFloat, literals.TypedFloat, 2.5, "float32"),
                              (dtypes.TypedComplex, literals.TypedComplex, 1j, "complex64")):
    a, b = ours(v, np.dtype(dt)), theirs(v, np.dtype(dt))
    assert (repr(a), str(a), f"{a}") == (repr(b), str(b), f"{b}")
