"""Sharding as JAX's documentation pages use it (docs/parallel.md, notebooks/shard_map.md):
each case is a snippet of those pages run in a fresh 8-device process, its printed result
compared with what JAX 0.10.2 printed (recorded below, and re-checked against real JAX when it
is installed)."""
from conftest import printed_output_tests

_PROGRAM = r"""
import contextlib, io, json, sys
import numpy as np
mod = sys.argv[1]
jax = __import__(mod)
jnp = __import__(mod + ".numpy", fromlist=["numpy"])
jax.config.update("jax_num_cpu_devices", 8)
P = jax.P
out = {}

def case(name):
  def run(f):
    buf = io.StringIO()
    try:
      with contextlib.redirect_stdout(buf):
        r = f()
      if r is not None:
        print(r, file=buf)
    except Exception as e:
      print(f"{type(e).__name__}: {e}", file=buf)
    out[name] = buf.getvalue()
  return run

mesh = jax.make_mesh((4, 2), ("X", "Y"))
jax.set_mesh(mesh)
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P("X", "Y"))

@case("device_put_pspec_type")
def _():
  return jax.typeof(x)

@case("device_put_pspec_sharding")
def _():
  print(jax.device_put(x, P("Y", "X")).sharding)
  print(jax.device_put(x, P(("X", "Y"))).sharding)
  return jax.device_put({"a": x}, {"a": P("X", None)})["a"].sharding

@case("device_put_pspec_shards")
def _():
  y = jax.device_put(x, P("X", None))
  return [(str(s.device), s.data.tolist()) for s in y.addressable_shards[:3]]

@case("typeof_sharding_abstract_mesh")
def _():
  print(jax.typeof(x).sharding)
  jax.jit(lambda v: print(jax.typeof(v).sharding))(x)

@case("sin_transpose_type")
def _():
  return jax.typeof(jnp.sin(x).T)

@case("illegal_sharding_add")
def _():
  a = jax.device_put(np.arange(16).reshape(4, 4), P("X", None))
  b = jax.device_put(np.arange(16).reshape(4, 4), P(None, "X"))
  return a + b

@case("auto_axes_out_sharding")
def _():
  a = jax.device_put(np.arange(16).reshape(4, 4), P("X", None))
  b = jax.device_put(np.arange(16).reshape(4, 4), P(None, "X"))
  add2 = jax.sharding.auto_axes(lambda u, v: u + v)
  r = add2(a, b, out_sharding=P("X", None))
  return f"{jax.typeof(r)} {r.sum()}"

@case("shard_map_infers_in_specs_under_jit")
def _():
  with jax.set_mesh(jax.make_mesh((8,), ("batch",))):
    xb = jax.device_put(jnp.arange(32.).reshape(8, 4), P("batch"))
    w = jax.device_put(jnp.ones((4, 2)), P())
    f = jax.shard_map(lambda w, x: jax.lax.pmean(jnp.sum(x @ w), "batch"), out_specs=P())
    return jax.jit(f)(w, xb)

@case("grad_of_matmul_on_batch_sharded_explicit_axis")
def _():
  with jax.set_mesh(jax.make_mesh((8,), ("batch",))):
    xb = jax.device_put(np.arange(32. * 4).reshape(32, 4) / 100, P("batch"))
    w = jax.device_put(np.arange(12.).reshape(4, 3) / 10, P())
    f = lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)
    v, g = jax.value_and_grad(f)(w, xb)
    v2, g2 = jax.jit(jax.value_and_grad(f))(w, xb)
    gx = jax.grad(f, 1)(w, xb)
    return (f"{v:.4f} {np.round(np.asarray(g), 3).tolist()} {jax.typeof(g)}\n"
            f"{v2:.4f} {np.round(np.asarray(g2), 3).tolist()} {jax.typeof(g2)}\n"
            f"{jax.typeof(gx)} {float(gx.sum()):.3f}")

@case("jit_inside_shard_map_traced_per_varying_axes")
def _():
  traces = []
  g = jax.jit(lambda v: (traces.append(1), v * 2)[1])
  m = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("i",))
  f = jax.shard_map(lambda a, c: (g(a), g(c)), mesh=m, in_specs=(P("i"), P()),
                    out_specs=(P("i"), P()))
  with jax.set_mesh(m):
    return (f(jnp.arange(4.), jnp.arange(2.)), len(traces))

@case("eager_shard_map_prints_each_device_block")
def _():
  m = jax.make_mesh((2,), ("i",))
  with jax.set_mesh(m):
    @jax.shard_map(in_specs=P("i"), out_specs=P("i"))
    def f(v):
      print("BEFORE:\n", v)
      try:
        print(v + 1)
      except Exception:  # the switch to op-by-op is not an Exception a body catches
        print("caught")
      w = jax.lax.psum(v, "i")
      print("AFTER:", jax.typeof(w), w)
      return 2 * v
    print(f(jax.device_put(jnp.arange(6.), P("i"))))
    print(f(jax.device_put(jnp.arange(6.) + 10, P("i"))))  # again: every call prints
    g = jax.shard_map(lambda v: (print(v), v)[1], in_specs=P(), out_specs=P())
    print(g(jnp.arange(3)))
    print(jax.jit(g)(jnp.arange(3)))  # under jit: the tracer
  m2 = jax.sharding.Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("i", "j"))
  @jax.shard_map(mesh=m2, in_specs=P("i", "j"), out_specs=P(None, "j"))
  def f2(b):
    print(b)
    return jax.lax.psum(b, "i")
  with jax.set_mesh(m2):
    return f2(jnp.arange(16).reshape(4, 4))

@case("typeof_manual_axis_type")
def _():
  with jax.set_mesh(jax.make_mesh((4, 2), ("i", "j"))):
    @jax.shard_map(in_specs=P("i", "j"), out_specs=P("i"))
    def f(v):
      y = jax.lax.psum(v, "j")
      print(jax.typeof(y).manual_axis_type.varying == {"i"}, jax.typeof(y))
      return y
    return f(jax.device_put(jnp.arange(32.).reshape(8, 4), P("i", "j")))

@case("eager_replication_error_names_jax_helper")
def _():
  with jax.set_mesh(jax.make_mesh((2,), ("i",))):
    v = jax.device_put(jnp.arange(6.), P("i"))
    def named(v):
      return v * 2
    for fn in (named, lambda v: v):
      for wrap in (lambda f: f, jax.jit):
        try:
          wrap(jax.shard_map(fn, in_specs=P("i"), out_specs=P()))(v)
        except ValueError as e:
          print(str(e).splitlines()[0])

@case("shard_map_jaxpr_shows_context_abstract_mesh")
def _():
  m = jax.make_mesh((2,), ("i",))
  f = jax.shard_map(lambda a, b: a * b, in_specs=(P("i"), P()), out_specs=P("i"))
  g = jax.shard_map(lambda a, b: a * b, mesh=jax.sharding.Mesh(np.array(jax.devices()[:2]),
                                                                ("i",)),
                    in_specs=(P("i"), P()), out_specs=P("i"))
  with jax.set_mesh(m):
    a = jax.device_put(jnp.arange(6.), P("i"))
    print(jax.make_jaxpr(f)(a, jnp.arange(3.)))
  print(jax.make_jaxpr(g)(jnp.arange(6.), jnp.arange(3.)))  # JAX: the context mesh differs

@case("jit_dot_out_sharding_resharded_in_partitioner")
def _():
  with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
    a = jax.device_put(jnp.arange(8 * 16.).reshape(8, 16), P("x", "y"))
    b = jax.device_put(jnp.arange(16 * 4.).reshape(16, 4), P("y", None))
    c = jax.jit(lambda a, b: jnp.dot(a, b, out_sharding=P("x", None)))(a, b)
    return (jax.typeof(c), c.sharding.spec, float(c.sum()),
            bool(jnp.allclose(c, jnp.dot(a, b, out_sharding=P("x", None)))))

@case("auto_axes_out_sharding_over_auto_mesh")
def _():
  Auto = jax.sharding.AxisType.Auto
  with jax.set_mesh(jax.make_mesh((4, 2), ("X", "Y"), (Auto, Auto))):
    arr = jnp.sin(jax.device_put(np.arange(8), P("X")))
    @jax.sharding.auto_axes
    def check(v):
      print(v.sharding.spec if hasattr(v, "sharding") else None, jax.typeof(v).sharding.spec)
      return v
    r = check(arr, out_sharding=P("X"))
    return (r.sharding.spec, jax.typeof(r).sharding.spec)

@case("grad_of_pmean_loss_wrt_replicated_param_inside_shard_map")
def _():
  m = jax.sharding.Mesh(np.array(jax.devices()), ("i",))
  loss = lambda w, v: jax.lax.pmean(jnp.sum(v * w), "i")
  xs = jnp.arange(16.)
  g = jax.shard_map(lambda w, v: jax.grad(loss)(w, v), mesh=m, in_specs=(P(), P("i")),
                    out_specs=P())
  g2 = jax.shard_map(lambda w, v: jax.grad(lambda w: jax.lax.psum(jnp.sum(v * w) ** 2, "i"))(w),
                     mesh=m, in_specs=(P(), P("i")), out_specs=P())
  with jax.set_mesh(m):
    outer = jax.grad(jax.shard_map(loss, mesh=m, in_specs=(P(), P("i")), out_specs=P()))
    return (g(jnp.float32(2.), xs), jax.jit(g)(jnp.float32(2.), xs),
            g2(jnp.float32(2.), xs), outer(jnp.float32(2.), xs))

@case("device_put_unreduced_gives_partial_values_per_device")
def _():
  for src, spec in ((x, P("X", None, unreduced={"Y"})),
                    (jnp.arange(12.).reshape(4, 3), P(None, None, unreduced={"Y"})),
                    (jnp.arange(16.).reshape(2, 8), P(None, "X", unreduced={"Y"}))):
    y = jax.device_put(src, spec)
    print(y.sharding)
    print([(str(s.device), np.asarray(s.data).tolist()) for s in y.addressable_shards])

@case("reshard_to_another_mesh_under_use_abstract_mesh")
def _():
  @jax.jit
  def f(v):
    abstract_mesh = jax.sharding.AbstractMesh((8,), ("A",), (jax.sharding.AxisType.Explicit,))
    with jax.sharding.use_abstract_mesh(abstract_mesh):
      return jax.reshard(v, P("A", None)) * 2
  z = f(x)
  print(jax.typeof(z))
  print(z.sharding)
  print([(str(s.device), np.asarray(s.data).tolist()) for s in z.addressable_shards[:2]])

print(json.dumps(out))
"""

# What JAX 0.10.2 printed (the same program with mod="jax", 8 CPU devices).
_EXPECTED = {
  'reshard_to_another_mesh_under_use_abstract_mesh': (
    "float32[8@A,4]\nNamedSharding(mesh=Mesh('A': 8, axis_types=(Explicit,)), spec=P('A', None), "
    "memory_kind=device)\n[('cpu:0', [[0.0, 2.0, 4.0, 6.0]]), ('cpu:1', [[8.0, 10.0, 12.0, "
    "14.0]])]\n"),
  'device_put_pspec_type': 'float32[8@X,4@Y]\n',
  'device_put_pspec_sharding': (
    "NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit)), spec=P('Y', 'X')"
    ', memory_kind=device)\n'
    "NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit)), spec=P(('X', 'Y'"
    '),), memory_kind=device)\n'
    "NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit)), spec=P('X', None"
    '), memory_kind=device)\n'
  ),
  'device_put_pspec_shards': (
    "[('cpu:0', [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]), ('cpu:1', [[0.0, 1.0, 2.0, 3.0],"
    " [4.0, 5.0, 6.0, 7.0]]), ('cpu:2', [[8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]])]\n"
  ),
  'typeof_sharding_abstract_mesh': (
    "NamedSharding(mesh=AbstractMesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit), device_ki"
    "nd=cpu, num_cores=None, platform=cpu), spec=P('X', 'Y'))\n"
    "NamedSharding(mesh=AbstractMesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit), device_ki"
    "nd=cpu, num_cores=None, platform=cpu), spec=P('X', 'Y'))\n"
  ),
  'sin_transpose_type': 'float32[4@Y,8@X]\n',
  'illegal_sharding_add': (
    'ShardingTypeError: add operation with inputs: i32[4@X,4], i32[4,4@X] produces an illegally'
    ' sharded result: i32[4@X,4@X]\n'
  ),
  'auto_axes_out_sharding': 'int32[4@X,4] 240\n',
  'shard_map_infers_in_specs_under_jit': '124.0\n',
  'grad_of_matmul_on_batch_sharded_explicit_axis': (
    '61.6559 [[6.565000057220459, 4.678999900817871, 3.427000045776367], [6.698999881744385, 4.'
    '790999889373779, 3.5230000019073486], [6.833000183105469, 4.9029998779296875, 3.6189999580'
    '3833], [6.966000080108643, 5.014999866485596, 3.7139999866485596]] float32[4,3]\n'
    '61.6559 [[6.565000057220459, 4.678999900817871, 3.427000045776367], [6.698999881744385, 4.'
    '790999889373779, 3.5230000019073486], [6.833000183105469, 4.9029998779296875, 3.6189999580'
    '3833], [6.966000080108643, 5.014999866485596, 3.7139999866485596]] float32[4,3]\n'
    'float32[32@batch,4] 73.603\n'
  ),
  'jit_inside_shard_map_traced_per_varying_axes': '((Array([0., 2., 4., 6.], dtype=float32), Array([0., 2.], dtype=float32)), 2)\n',
  'eager_shard_map_prints_each_device_block': (
    'BEFORE:\n'
    ' On cpu:0 at mesh coordinates (i,) = (0,):\n'
    '[0. 1. 2.]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i,) = (1,):\n'
    '[3. 4. 5.]\n'
    '\n'
    'On cpu:0 at mesh coordinates (i,) = (0,):\n'
    '[1. 2. 3.]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i,) = (1,):\n'
    '[4. 5. 6.]\n'
    '\n'
    'AFTER: float32[3] On cpu:0 at mesh coordinates (i,) = (0,):\n'
    '[3. 5. 7.]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i,) = (1,):\n'
    '[3. 5. 7.]\n'
    '\n'
    '[ 0.  2.  4.  6.  8. 10.]\n'
    'BEFORE:\n'
    ' On cpu:0 at mesh coordinates (i,) = (0,):\n'
    '[10. 11. 12.]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i,) = (1,):\n'
    '[13. 14. 15.]\n'
    '\n'
    'On cpu:0 at mesh coordinates (i,) = (0,):\n'
    '[11. 12. 13.]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i,) = (1,):\n'
    '[14. 15. 16.]\n'
    '\n'
    'AFTER: float32[3] On cpu:0 at mesh coordinates (i,) = (0,):\n'
    '[23. 25. 27.]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i,) = (1,):\n'
    '[23. 25. 27.]\n'
    '\n'
    '[20. 22. 24. 26. 28. 30.]\n'
    'On cpu:0 at mesh coordinates (i,) = (0,):\n'
    '[0 1 2]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i,) = (1,):\n'
    '[0 1 2]\n'
    '\n'
    '[0 1 2]\n'
    'JitTracer(int32[3])\n'
    '[0 1 2]\n'
    'On cpu:0 at mesh coordinates (i, j,) = (0, 0):\n'
    '[[0 1]\n'
    ' [4 5]]\n'
    '\n'
    'On cpu:1 at mesh coordinates (i, j,) = (0, 1):\n'
    '[[2 3]\n'
    ' [6 7]]\n'
    '\n'
    'On cpu:2 at mesh coordinates (i, j,) = (1, 0):\n'
    '[[ 8  9]\n'
    ' [12 13]]\n'
    '\n'
    'On cpu:3 at mesh coordinates (i, j,) = (1, 1):\n'
    '[[10 11]\n'
    ' [14 15]]\n'
    '\n'
    '[[ 8 10 12 14]\n'
    ' [16 18 20 22]]\n'
  ),
  'typeof_manual_axis_type': (
    'True float32[2,2]{V:i}\n'
    '[[ 2.  4.]\n'
    ' [10. 12.]\n'
    ' [18. 20.]\n'
    ' [26. 28.]\n'
    ' [34. 36.]\n'
    ' [42. 44.]\n'
    ' [50. 52.]\n'
    ' [58. 60.]]\n'
  ),
  'eager_replication_error_names_jax_helper': (
    "shard_map applied to the function '_rem_singleton' was given out_specs which require repli"
    "cation which can't be statically inferred given the mesh:\n"
    "shard_map applied to the function 'named' was given out_specs which require replication wh"
    "ich can't be statically inferred given the mesh:\n"
    "shard_map applied to the function '_rem_singleton' was given out_specs which require repli"
    "cation which can't be statically inferred given the mesh:\n"
    "shard_map applied to the function '<lambda>' was given out_specs which require replication"
    " which can't be statically inferred given the mesh:\n"
  ),
  'shard_map_jaxpr_shows_context_abstract_mesh': (
    '{ lambda ; a:f32[6@i] b:f32[3]. let\n'
    '    c:f32[6@i] = shard_map[\n'
    '      check_vma=True\n'
    "      in_specs=(P('i',), P())\n"
    '      jaxpr={ lambda ; d:f32[3]{V:i} e:f32[3]. let\n'
    "          f:f32[3]{V:i} = pvary[axes=('i',)] e\n"
    '          g:f32[3]{V:i} = mul d f\n'
    '        in (g,) }\n'
    "      mesh=AbstractMesh('i': 2, axis_types=(Explicit,), device_kind=cpu, num_cores=None, p"
    'latform=cpu)\n'
    "      newly_manual_axes=frozenset({'i'})\n"
    "      out_specs=(P('i',),)\n"
    '    ] a b\n'
    '  in (c,) }\n'
    "ValueError: The context mesh AbstractMesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit),"
    ' device_kind=cpu, num_cores=None, platform=cpu) should match the mesh passed to shard_map '
    "Mesh('i': 2, axis_types=(Auto,))\n"
  ),
  'jit_dot_out_sharding_resharded_in_partitioner': "(ShapedArray(float32[8@x,4]), P('x', None), 1067648.0, True)\n",
  'auto_axes_out_sharding_over_auto_mesh': "P('X',) P(None,)\n(P('X',), P(None,))\n",
  'grad_of_pmean_loss_wrt_replicated_param_inside_shard_map': (
    '(Array(15., dtype=float32), Array(15., dtype=float32), Array(9888., dtype=float32), Array('
    '15., dtype=float32))\n'
  ),
  'device_put_unreduced_gives_partial_values_per_device': (
    "NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit)), spec=P('X', None"
    ", unreduced={'Y'}), memory_kind=device)\n"
    "[('cpu:0', [[0.0, 1.0, 0.0, 0.0], [4.0, 5.0, 0.0, 0.0]]), ('cpu:1', [[0.0, 0.0, 2.0, 3.0],"
    " [0.0, 0.0, 6.0, 7.0]]), ('cpu:2', [[8.0, 9.0, 0.0, 0.0], [12.0, 13.0, 0.0, 0.0]]), ('cpu:"
    "3', [[0.0, 0.0, 10.0, 11.0], [0.0, 0.0, 14.0, 15.0]]), ('cpu:4', [[16.0, 17.0, 0.0, 0.0], "
    "[20.0, 21.0, 0.0, 0.0]]), ('cpu:5', [[0.0, 0.0, 18.0, 19.0], [0.0, 0.0, 22.0, 23.0]]), ('c"
    "pu:6', [[24.0, 25.0, 0.0, 0.0], [28.0, 29.0, 0.0, 0.0]]), ('cpu:7', [[0.0, 0.0, 26.0, 27.0"
    '], [0.0, 0.0, 30.0, 31.0]])]\n'
    "NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit)), spec=P(None, Non"
    "e, unreduced={'Y'}), memory_kind=device)\n"
    "[('cpu:0', [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]), ('cpu:"
    "1', [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), ('cpu:2', [[0.0"
    ", 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]), ('cpu:3', [[0.0, 0.0, "
    "0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), ('cpu:4', [[0.0, 1.0, 2.0], [3."
    "0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]), ('cpu:5', [[0.0, 0.0, 0.0], [0.0, 0.0,"
    " 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), ('cpu:6', [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6"
    ".0, 7.0, 8.0], [9.0, 10.0, 11.0]]), ('cpu:7', [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0"
    ', 0.0], [0.0, 0.0, 0.0]])]\n'
    "NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit)), spec=P(None, 'X'"
    ", unreduced={'Y'}), memory_kind=device)\n"
    "[('cpu:0', [[0.0, 1.0], [8.0, 9.0]]), ('cpu:1', [[0.0, 0.0], [0.0, 0.0]]), ('cpu:2', [[2.0"
    ", 3.0], [10.0, 11.0]]), ('cpu:3', [[0.0, 0.0], [0.0, 0.0]]), ('cpu:4', [[4.0, 5.0], [12.0,"
    " 13.0]]), ('cpu:5', [[0.0, 0.0], [0.0, 0.0]]), ('cpu:6', [[6.0, 7.0], [14.0, 15.0]]), ('cp"
    "u:7', [[0.0, 0.0], [0.0, 0.0]])]\n"
  ),
}


ours, test_prints_what_jax_printed, test_recorded_outputs_are_jax_s = printed_output_tests(
    _PROGRAM, _EXPECTED)
