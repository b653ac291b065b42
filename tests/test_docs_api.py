"""API surface JAX's documentation pages use (aot.md, external-callbacks.md, array_refs.md):
each case runs in a fresh process per library and prints; the output is compared with JAX
0.10.2's (recorded below, re-checked against real JAX when it is installed)."""
from conftest import printed_output_tests

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

@case("primitive_with_only_an_impl_runs_eagerly")
def _():
  core = __import__(mod + ".extend.core", fromlist=["core"])
  p = core.Primitive("multiply_add")
  p.def_impl(lambda x, y, z: (print("impl", x, y, z), np.add(np.multiply(x, y), z))[1])
  r = p.bind(2., 2., 10.)
  return (r, type(r).__name__)

@case("var_repr_long_dtype")
def _():
  c = jax.make_jaxpr(lambda x: x + 1)(1)
  return [str(v).split(":")[1] for v in c.jaxpr.invars + c.jaxpr.eqns[0].outvars]

@case("reshape_to_a_traced_size_is_a_type_error")
def _():
  try:
    jax.jit(lambda x: x.reshape(jnp.array(x.shape).prod()))(jnp.ones((2, 3)))
  except Exception as e:
    return type(e).__name__

@case("ref_shows_the_weak_type_of_its_value")
def _():
  r = jax.new_ref(0)
  print(r)
  for i in range(3):
    r[...] += jnp.int32(i)
  print(r)
  x = jax.new_ref(jnp.arange(3.))
  p0 = x.unsafe_buffer_pointer()
  @jax.jit
  def sin_inplace(x_ref):
    x_ref[...] = jnp.sin(x_ref[...])
  sin_inplace(x)
  return (type(p0).__name__, p0 == x.unsafe_buffer_pointer(), np.round(np.asarray(x[...]), 4).tolist())

@case("broadcasting_error_names_the_operands_shapes")
def _():
  for a, b in (((100,), (100, 10)), ((3,), (2, 1, 3)), ((4,), (2, 3)), ((2, 1), (5, 3, 4))):
    try:
      print((jnp.ones(a) * jnp.ones(b)).shape)
    except ValueError as e:
      print(e)

@case("array_of_tracers_staged_as_jax")
def _():
  f = lambda x: jnp.sum(jnp.array(x))
  print(jax.make_jaxpr(f)(list(range(3))))
  print(jax.make_jaxpr(lambda a, b: jnp.array([[a, 1.], [b, 2]]))(1., 2))
  print(jax.jit(lambda a, b: jnp.array([a, b]))(1, 2.5))
  print(jax.vmap(lambda a: jnp.array([a, a * 2]))(jnp.arange(3.)))
  return jax.grad(lambda a: jnp.sum(jnp.array([a, a * 2]) ** 2))(1.)

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
  'primitive_with_only_an_impl_runs_eagerly': "impl 2.0 2.0 10.0\n(np.float64(14.0), 'float64')\n",
  'var_repr_long_dtype': "['int32[]', 'int32[]']\n",
  'reshape_to_a_traced_size_is_a_type_error': "'TypeError'\n",
  'ref_shows_the_weak_type_of_its_value': (
    'Ref(0, dtype=int32, weak_type=True)\n'
    'Ref(3, dtype=int32)\n'
    "('int', True, [0.0, 0.8414999842643738, 0.9093000292778015])\n"
  ),
  'broadcasting_error_names_the_operands_shapes': (
    'Incompatible shapes for broadcasting: shapes=[(100,), (100, 10)]\n'
    '(2, 1, 3)\n'
    'Incompatible shapes for broadcasting: shapes=[(4,), (2, 3)]\n'
    'Incompatible shapes for broadcasting: shapes=[(2, 1), (5, 3, 4)]\n'
  ),
  'array_of_tracers_staged_as_jax': (
    '{ lambda ; a:i32[] b:i32[] c:i32[]. let\n'
    '    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n'
    '    e:i32[1] = broadcast_in_dim d\n'
    '    f:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b\n'
    '    g:i32[1] = broadcast_in_dim f\n'
    '    h:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c\n'
    '    i:i32[1] = broadcast_in_dim h\n'
    '    j:i32[3] = concatenate[dimension=0] e g i\n'
    '    k:i32[] = reduce_sum[axes=(0,) out_sharding=None] j\n'
    '  in (k,) }\n'
    '{ lambda ; a:f32[] b:i32[]. let\n'
    '    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
    '    d:f32[1] = broadcast_in_dim c\n'
    '    e:f32[1] = broadcast_in_dim 1.0:f32[]\n'
    '    f:f32[2] = concatenate[dimension=0] d e\n'
    '    g:f32[1,2] = broadcast_in_dim[broadcast_dimensions=(1,)] f\n'
    '    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n'
    '    i:f32[1] = broadcast_in_dim h\n'
    '    j:f32[1] = broadcast_in_dim 2.0:f32[]\n'
    '    k:f32[2] = concatenate[dimension=0] i j\n'
    '    l:f32[1,2] = broadcast_in_dim[broadcast_dimensions=(1,)] k\n'
    '    m:f32[2,2] = concatenate[dimension=0] g l\n'
    '  in (m,) }\n'
    '[1.  2.5]\n'
    '[[0. 0.]\n'
    ' [1. 2.]\n'
    ' [2. 4.]]\n'
    'Array(10., dtype=float32, weak_type=True)\n'
  ),
}


ours, test_prints_what_jax_printed, test_recorded_outputs_are_jax_s = printed_output_tests(
    _PROGRAM, _EXPECTED)
