"""API surface JAX's documentation pages use (aot.md, external-callbacks.md, array_refs.md):
each case runs in a fresh process per library and prints; the output is compared with JAX
0.10.2's (recorded below, re-checked against real JAX when it is installed)."""
import pytest

from conftest import oracle, run_json_program

_PROGRAM = r'''
import contextlib, io, json, sys
import numpy as np
mod = sys.argv[1]
jax = __import__(mod)
jnp = __import__(mod + ".numpy", fromlist=["numpy"])
out = {}

def case(name):
  def run(f):
    buf = io.StringIO()
    try:
      with contextlib.redirect_stdout(buf):
        r = f()
      if r is not None:
        print(repr(r), file=buf)
    except Exception as e:
      print(f"{type(e).__name__}: {e}", file=buf)
    out[name] = buf.getvalue()
  return run

@case("shape_dtype_struct_like")
def _():
  for x in (jnp.arange(3.), 2.0, np.ones((2, 2), np.int32), jnp.float32(1.5)):
    print(jax.ShapeDtypeStruct.like(x))
  jax.jit(lambda v: print(jax.ShapeDtypeStruct.like(v)))(jnp.ones(2))
  f = lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct.like(x), x)
  return jax.jit(f)(jnp.arange(3.))

@case("stages_attributes")
def _():
  def f(x, y):
    return {"a": x * y, "b": (x + y, x)}
  t = jax.jit(f).trace(jnp.ones(3), jnp.float32(2.))
  lo = t.lower()
  c = lo.compile()
  for st in (t, lo, c):
    print(st.in_tree, st.out_tree, st.in_avals)
    print(st.out_info["a"].shape, st.out_info["a"].dtype, type(st.out_info["a"]).__name__)
  print(t.fun_name, t.out_avals)
  print(c.input_shardings)
  print(c.output_shardings)

@case("aot_compiled_results_have_the_traced_types")
def _():
  i32 = jax.ShapeDtypeStruct((), jnp.dtype("int32"))
  f = lambda x, y: 2 * x + y
  print(repr(jax.jit(f).trace(i32, i32).lower().compile()(3, 4)))
  print(repr(jax.jit(f, static_argnums=0).trace(10, i32).lower().compile()(5)))
  print(repr(jax.jit(f).trace(1, 2).lower().compile()(3, 4)))

print(json.dumps(out))
'''

_EXPECTED = {
  'shape_dtype_struct_like': (
    'ShapeDtypeStruct(shape=(3,), dtype=float32)\n'
    'ShapeDtypeStruct(shape=(), dtype=float32, weak_type=True)\n'
    'ShapeDtypeStruct(shape=(2, 2), dtype=int32)\n'
    'ShapeDtypeStruct(shape=(), dtype=float32)\n'
    'ShapeDtypeStruct(shape=(2,), dtype=float32)\n'
    'Array([0.       , 0.841471 , 0.9092974], dtype=float32)\n'
  ),
  'stages_attributes': (
    "PyTreeDef(((*, *), {})) PyTreeDef({'a': *, 'b': (*, *)}) ((ShapedArray(float32[3]), Shaped"
    'Array(float32[])), {})\n'
    '(3,) float32 ShapeDtypeStruct\n'
    "PyTreeDef(((*, *), {})) PyTreeDef({'a': *, 'b': (*, *)}) ((ShapedArray(float32[3]), Shaped"
    'Array(float32[])), {})\n'
    '(3,) float32 ShapeDtypeStruct\n'
    "PyTreeDef(((*, *), {})) PyTreeDef({'a': *, 'b': (*, *)}) ((ShapedArray(float32[3]), Shaped"
    'Array(float32[])), {})\n'
    '(3,) float32 ShapeDtypeStruct\n'
    "f {'a': ShapedArray(float32[3]), 'b': (ShapedArray(float32[3]), ShapedArray(float32[3]))}\n"
    '((SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device), SingleDeviceSharding(d'
    'evice=CpuDevice(id=0), memory_kind=device)), {})\n'
    "{'a': SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device), 'b': (SingleDevice"
    'Sharding(device=CpuDevice(id=0), memory_kind=device), SingleDeviceSharding(device=CpuDevic'
    'e(id=0), memory_kind=device))}\n'
  ),
  'aot_compiled_results_have_the_traced_types': (
    'Array(10, dtype=int32)\n'
    'Array(25, dtype=int32)\n'
    'Array(10, dtype=int32, weak_type=True)\n'
  ),
}


@pytest.fixture(scope="module")
def ours():
  return run_json_program(_PROGRAM, "jaxlite")


@pytest.mark.parametrize("name", sorted(_EXPECTED))
def test_prints_what_jax_printed(ours, name):
  assert ours[name] == _EXPECTED[name]


def test_recorded_outputs_are_jax_s():
  oracle()
  assert run_json_program(_PROGRAM, "jax") == _EXPECTED
