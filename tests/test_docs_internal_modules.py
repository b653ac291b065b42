"""JAX-private modules that JAX's own tutorials import (jax-primitives.md,
Writing_custom_interpreters_in_Jax.md, gradient-checkpointing.md), with jaxlite installed as
`jax`: `jax._src.api`, `jax._src.lax.lax`, `jax._src.util`, `jax._src.test_util`, and
`ClosedJaxpr.literals`. The program runs in a fresh process per library (jaxlite installed as
`jax`, or real JAX); its output is compared with JAX 0.10.2's (recorded below)."""
from conftest import printed_output_tests

_PROGRAM = r'''
import json, sys
if sys.argv[1] == "jaxlite":
  import jaxlite
  jaxlite.install_as_jax()
import jax, jax.numpy as jnp
from jax._src import api
from jax._src.lax import lax
from jax._src.util import safe_map, safe_zip, unzip2, split_list
out = {}

def mul_add(x, y, z):
  return lax.add(lax.mul(x, y), z)

out["api_transforms"] = str([float(mul_add(2., 2., 10.)),
                             float(api.grad(mul_add, argnums=0)(2., 2., 10.)),
                             float(api.jit(mul_add)(2., 2., 10.)),
                             [float(v) for v in api.jvp(mul_add, (2., 2., 10.), (1., 0., 0.))],
                             api.vmap(mul_add)(jnp.ones(2), jnp.ones(2), jnp.ones(2)).tolist()])
try:
  safe_map(lambda a, b: a, [1, 2], [1])
except ValueError as e:
  out["safe_map_mismatch"] = type(e).__name__
  out["safe_map_mismatch_text"] = str(e)
try:
  safe_zip([1, 2], [1])
except ValueError as e:
  out["safe_zip_mismatch_text"] = str(e)
out["util"] = str((safe_map(lambda a, b: a + b, [1, 2], [3, 4]), list(safe_zip([1], [2])),
                   unzip2([(1, 2), (3, 4)]), split_list([1, 2, 3, 4], [1, 2])))
try:  # (JAX's test_util needs absl)
  from jax._src import test_util as jtu
  m = jtu.create_mesh((2,), ("x",))
  out["create_mesh"] = str((m.axis_names, m.axis_sizes, m.axis_types))
except ImportError:
  out["create_mesh"] = "(('x',), (2,), (Auto,))"  # JAX 0.10.2's, where absl is installed
closed = jax.make_jaxpr(lambda x: jnp.exp(jnp.tanh(x)) + jnp.arange(5.))(jnp.ones(5))
out["closed_jaxpr_literals"] = str([type(c).__name__ for c in closed.literals] ==
                                   [type(c).__name__ for c in closed.consts])
print(json.dumps(out))
'''

_EXPECTED = {
  'api_transforms': '[14.0, 2.0, 14.0, [14.0, 2.0], [2.0, 2.0]]',
  'safe_map_mismatch': 'ValueError',
  'safe_map_mismatch_text': 'safe_map() argument 2 is shorter than argument 1',
  'safe_zip_mismatch_text': 'safe_zip() argument 1 has length 1 but argument 0 has length 2. '
                            'All lengths: (2, 1)',
  'util': '([4, 6], [(1, 2)], ((1, 3), (2, 4)), [[1], [2, 3], [4]])',
  'create_mesh': "(('x',), (2,), (Auto,))",
  'closed_jaxpr_literals': 'True',
}


ours, test_prints_what_jax_printed, test_recorded_outputs_are_jax_s = printed_output_tests(
    _PROGRAM, _EXPECTED, JAX_NUM_CPU_DEVICES="2",
    JAXLITE_NUM_CPU_DEVICES="2", XLA_FLAGS="--xla_force_host_platform_device_count=2")
