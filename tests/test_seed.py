"""The Key Concepts page (the seed) runs on jaxlite and prints exactly what JAX prints."""
import pathlib
import subprocess
import sys

import pytest

DEMO = pathlib.Path(__file__).resolve().parent.parent / "examples" / "key_concepts.py"

# What JAX 0.10.2 prints for the page's snippets (JAX-COMPAT §1, §2.6, §4.5, §5), each after
# the demo's label (issue 33: a new user saw unlabelled values).
EXPECTED_HEAD = """\
isinstance(x, jax.Array): True
x.devices(): {CpuDevice(id=0)}
x.sharding: SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
selu_jit(1.0): 1.05
traced x inside f: JitTracer(int32[5])
jax.make_jaxpr(selu)(x):
{ lambda ; a:f32[5]. let
    b:bool[5] = gt a 0.0:f32[]
    c:f32[5] = exp a
    d:f32[5] = mul 1.6699999570846558:f32[] c
    e:f32[5] = sub d 1.6699999570846558:f32[]
    f:f32[5] = jit[
      name=_where
      jaxpr={ lambda ; b:bool[5] a:f32[5] e:f32[5]. let
          f:f32[5] = select_n b e a
        in (f,) }
    ] b a e
    g:f32[5] = mul 1.0499999523162842:f32[] f
  in (g,) }
jax.tree.structure(params): PyTreeDef([*, *, (*, *)])
jax.tree.leaves(params): [1, 2, Array([0, 1, 2], dtype=int32), Array([1., 1.], dtype=float32)]
jax.tree.structure(params): PyTreeDef({'W': *, 'b': *, 'n': *})
jax.tree.leaves(params):
[Array([[1., 1.],
       [1., 1.]], dtype=float32), Array([0., 0.], dtype=float32), 5]
jax.tree.structure(params): PyTreeDef(CustomNode(namedtuple[Params], [*, *]))
jax.tree.leaves(params): [1, 5.0]
key:
Array((), dtype=key<fry>) overlaying:
[ 0 43]
random.normal(key): 0.07520543
random.normal(key) again (same key, same draw): 0.07520543
draw 0: -1.9133632183074951
draw 1: -1.4749839305877686
draw 2: -0.36703771352767944
"""


def _run(source: str) -> str:
  return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                        check=True).stdout


def test_seed_prints_what_jax_prints():
  out = _run(DEMO.read_text())
  assert out.startswith(EXPECTED_HEAD), out


def test_seed_matches_real_jax_line_by_line():
  pytest.importorskip("jax")
  src = DEMO.read_text()
  as_jax = src.replace("import jaxlite as jax", "import jax").replace(
      "import jaxlite.numpy as jnp", "import jax.numpy as jnp").replace(
      "from jaxlite import random", "from jax import random")
  assert _run(src) == _run(as_jax)
