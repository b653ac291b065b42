"""Bad-input rows for the public modules beyond the core families (tests/test_bad_input.py runs
them): one or more per module, and one generated row per scipy.stats distribution module."""
from __future__ import annotations

import importlib
import inspect
from typing import NamedTuple


class R(NamedTuple):
  family: str  # the public module the row exercises, or a family mapped to one
  id: str
  exc: str  # the class JAX raises, by name (jaxlite's class or one of its bases)
  pattern: str  # jaxlite's message must match (re.search)
  fn: object


def O(m, shape=3, dtype=None):  # noqa: E743 - a short name keeps the table to one line a row
  return m.jnp.ones(shape, dtype)


def M(m, path: str):
  """Public module `path` of `jaxlite` or of `jax` (`M(m, "experimental.ode")`)."""
  return importlib.import_module(f"{m.jax.__name__}.{path}")


MODULE_ROWS = [
    # --- the other public modules (one or more rows each; see test_every_public_module_has_rows)
    R("ad_checkpoint", "print-saved-residuals-str", "TypeError",
      r"Error interpreting argument to .* as an abstract array.*type <class 'str'>",
      lambda m: M(m, "ad_checkpoint").print_saved_residuals(lambda x: x * 2, "a")),
    R("api_util", "flatten-axes-prefix", "ValueError",
      r"vmap in_axes specification must be a tree prefix of the corresponding value",
      lambda m: M(m, "api_util").flatten_axes(
          "vmap in_axes", m.tree.tree_structure((1, 2)), (0, 0, 0))),
    R("core", "eval-jaxpr-arg-count", "ValueError",
      r"eval_jaxpr: the jaxpr has 1 invars, got 2 arguments",
      lambda m: M(m, "core").eval_jaxpr(m.jax.make_jaxpr(lambda x: x + 1)(1.).jaxpr, [], 1., 2.)),
    R("core", "eval-jaxpr-const-count", "ValueError",
      r"eval_jaxpr: the jaxpr has 0 constvars, got 1 consts",
      lambda m: M(m, "core").eval_jaxpr(m.jax.make_jaxpr(lambda x: x + 1)(1.).jaxpr, [1.], 1.)),
    R("custom_batching", "custom-vmap-no-rule", "AttributeError",
      r"No batching rule defined for custom_vmap function <lambda> using def_vmap\.",
      lambda m: m.jax.vmap(M(m, "custom_batching").custom_vmap(lambda x: x))(O(m))),
    R("custom_derivatives", "closure-convert-not-callable", "TypeError",
      r"closure_convert: the first argument must be callable, got 3",
      lambda m: M(m, "custom_derivatives").closure_convert(3, 1.)),
    R("custom_derivatives", "linear-call-not-callable", "TypeError",
      r"linear_call: fun must be callable, got 3",
      lambda m: M(m, "custom_derivatives").linear_call(3, lambda r, t: t, 1., 1.)),
    R("debug", "callback-not-callable", "TypeError",
      r"first argument to jax.debug.callback must be callable, but got an object of type <class "
      r"'int'>", lambda m: M(m, "debug").callback(3, 1.)),
    R("debug", "visualize-rank3", "ValueError",
      r"`visualize_sharding` only works for shapes with 1 and 2 dimensions",
      lambda m: M(m, "debug").visualize_array_sharding(O(m, (2, 2, 2)))),
    R("distributed", "initialize-kw", "TypeError",
      r"initialize\(\) got an unexpected keyword argument 'bogus'",
      lambda m: M(m, "distributed").initialize(bogus=1)),
    R("dlpack", "from-dlpack-list", "TypeError",
      r"The array passed to from_dlpack must have __dlpack__ and __dlpack_device__ methods; got "
      r"list", lambda m: M(m, "dlpack").from_dlpack([1, 2])),
    R("experimental", "io-callback-result-shape", "JaxRuntimeError",
      r"Incorrect output shape for return value #0: Expected: \(4,\), Actual: \(3,\)",
      lambda m: M(m, "experimental").io_callback(
          lambda v: v, m.jax.ShapeDtypeStruct((4,), "float32"), O(m))),
    R("experimental.checkify", "check-pred-shape", "TypeError",
      r"check takes a scalar pred as argument, got \[ True  True  True\]",
      lambda m: M(m, "experimental.checkify").check(O(m) > 0, "msg")),
    R("experimental.layout", "format-layout", "TypeError",
      r"invalid value for the layout argument; expected None, `Layout.AUTO` or a `Layout`, got "
      r"3 of type <class 'int'>", lambda m: M(m, "experimental.layout").Format(3)),
    R("experimental.sparse", "bcoo-matmul-contracting", "TypeError",
      r"dot_general requires contracting dimensions to have the same shape, got \(2,\) and \(3,\)",
      lambda m: M(m, "experimental.sparse").BCOO.fromdense(O(m, (2, 2))) @ O(m)),
    R("experimental.mesh_utils", "create-mesh-size", "ValueError",
      r"Number of devices 1 must equal the product of mesh_shape \(3, 5\)",
      lambda m: M(m, "experimental.mesh_utils").create_device_mesh((3, 5))),
    R("experimental.multihost_utils", "sync-name-not-str", "AttributeError",
      r"'int' object has no attribute 'encode'",  # JAX's own text: the name must be a str
      lambda m: M(m, "experimental.multihost_utils").sync_global_devices(3)),
    R("experimental.ode", "odeint-int-times", "TypeError",
      r"t must be an array of floats, but got \[0 1 2\]\.",
      lambda m: M(m, "experimental.ode").odeint(lambda y, t: -y, O(m), m.jnp.arange(3))),
    R("experimental.ode", "odeint-not-callable", "TypeError",
      r"closure_convert: the first argument must be callable, got 3",
      lambda m: M(m, "experimental.ode").odeint(3, O(m), O(m))),
    R("experimental.random", "stateful-rng-float-seed", "TypeError",
      r"PRNG key seed must be an integer; got JitTracer\(~float32\[\]\)",
      lambda m: M(m, "experimental.random").stateful_rng(1.5)),
    R("experimental.shard_map", "shard-map-not-callable", "TypeError",
      r"shard_map requires a callable for its first argument, got 3",
      lambda m: M(m, "experimental.shard_map").shard_map(
          3, mesh=None, in_specs=None, out_specs=None)),
    R("extend.core", "primitive-without-rule", "NotImplementedError",
      r"Evaluation rule for 'p' not implemented",
      lambda m: M(m, "extend.core").Primitive("p").bind(1.)),
    R("extend.core", "primitive-without-abstract-eval", "NotImplementedError",
      r"Abstract evaluation for 'p' not implemented",
      lambda m: m.jax.jit(lambda x: M(m, "extend.core").Primitive("p").bind(x))(1.)),
    R("extend.core.primitives", "add-p-shapes", "TypeError",
      r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)\.",
      lambda m: M(m, "extend.core.primitives").add_p.bind(O(m, 3), O(m, 4))),
    R("extend.linear_util", "wrap-init-not-callable", "TypeError",
      r"wrap_init: the first argument must be callable, got 3",
      lambda m: M(m, "extend.linear_util").wrap_init(3, debug_info=None)),
    R("extend.random", "threefry-dtype", "TypeError",
      r"threefry_2x32 requires uint32 arguments, got \[dtype\('uint32'\), dtype\('uint32'\), "
      r"dtype\('float32'\)\]",
      lambda m: M(m, "extend.random").threefry_2x32(O(m, 2, "uint32"), O(m, 3))),
    R("extend.random", "threefry-key-not-pair", "ValueError",
      r"threefry_2x32: keypair must be a pair of uint32 values, got",
      lambda m: M(m, "extend.random").threefry_2x32(O(m, 3, "uint32"), O(m, 4, "uint32"))),
    R("flatten_util", "unravel-size", "ValueError",
      r"Sum of sizes 5 must be equal to dimension 0 of the operand shape \[4\]",
      lambda m: M(m, "flatten_util").ravel_pytree([O(m, 2), O(m, 3)])[1](O(m, 4))),
    R("interpreters.ad", "add-jaxvals-shapes", "TypeError",
      r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)\.",
      lambda m: M(m, "interpreters.ad").add_jaxvals(O(m, 3), O(m, 4))),
    R("interpreters.ad", "no-transpose-rule", "NotImplementedError",
      r"Transpose rule \(for reverse-mode differentiation\) for 'p' not implemented",
      lambda m: M(m, "interpreters.ad").get_primitive_transpose(
          M(m, "extend.core").Primitive("p"))),
    R("interpreters.batching", "bdim-at-front-axis", "ValueError",
      r"axis 5 is out of bounds for array of dimension 1",
      lambda m: M(m, "interpreters.batching").bdim_at_front(O(m, 3), 5, 3)),
    R("interpreters.partial_eval", "dce-used-outputs-len", "ValueError",
      r"dce_jaxpr: used_outputs has 1 entries for a jaxpr with 2 outputs",
      lambda m: M(m, "interpreters.partial_eval").dce_jaxpr(
          m.jax.make_jaxpr(lambda x: (x, x))(1.).jaxpr, [True])),
    R("lax.linalg", "qr-rank1", "TypeError",
      r"Input 0 to qr must have rank at least 2, but got shape=\(3,\)",
      lambda m: M(m, "lax.linalg").qr(O(m))),
    R("lax.linalg", "svd-int", "TypeError",
      r"svd does not accept dtype int32 at position 0\. Accepted dtypes at position 0 are "
      r"subtypes of floating, complexfloating\.",
      lambda m: M(m, "lax.linalg").svd(O(m, (2, 2), "int32"))),
    R("lax.linalg", "triangular-solve-shapes", "ValueError",
      r"Incompatible shapes for arguments to triangular_solve: \(2, 2\) and \(3, 3\)\.",
      lambda m: M(m, "lax.linalg").triangular_solve(O(m, (2, 2)), O(m, (3, 3)))),
    R("lax.linalg", "triangular-solve-square", "ValueError",
      r"The first input to triangular_solve must be a square matrix\. Got shape \(2, 3\)\.",
      lambda m: M(m, "lax.linalg").triangular_solve(O(m, (2, 3)), O(m, (2, 2)))),
    R("profiler", "stop-without-start", "RuntimeError", r"No profile started",
      lambda m: M(m, "profiler").stop_trace()),
    R("profiler", "trace-annotation-name", "TypeError",
      r"TraceAnnotation: name must be a str, got 3 of type int",
      lambda m: M(m, "profiler").TraceAnnotation(3)),
    R("ref", "get-not-ref", "ValueError",
      r"Can only call `ref_get` on a `Ref`: jax.ref.get expected a Ref as first argument, got",
      lambda m: M(m, "ref").get(O(m), ())),
    R("ref", "swap-shape", "ValueError",
      r"Invalid shape for `swap`\. Ref shape: \(3,\)\. Expected shape: \(3,\)\. Value shape: "
      r"\(4,\)", lambda m: M(m, "ref").swap(M(m, "ref").new_ref(O(m)), (), O(m, 4))),
    R("scipy.sparse.linalg", "gmres-solve-method", "ValueError",
      r"invalid solve_method 'bogus', must be either 'incremental' or 'batched'",
      lambda m: M(m, "scipy.sparse.linalg").gmres(O(m, (3, 3)), O(m), solve_method="bogus")),
    R("scipy.sparse.linalg", "bicgstab-tree", "ValueError",
      r"bicgstab: x0 and b must have matching tree structure: PyTreeDef\(\*\) vs "
      r"PyTreeDef\(\(\*, \*\)\)",
      lambda m: M(m, "scipy.sparse.linalg").bicgstab(lambda x: x, (O(m), O(m, 2)), x0=O(m))),
    R("scipy.spatial.transform", "from-euler-seq", "ValueError",
      r"Expected axis specification to be a string of up to 3 characters, got 'xyzw'",
      lambda m: M(m, "scipy.spatial.transform").Rotation.from_euler("xyzw", O(m))),
    R("scipy.spatial.transform", "slerp-one-rotation", "ValueError",
      r"`rotations` must be a sequence of at least 2 rotations\.",
      lambda m: M(m, "scipy.spatial.transform").Slerp.init(
          O(m), M(m, "scipy.spatial.transform").Rotation.identity())),
    R("sharding", "mesh-axis-names", "ValueError",
      r"Mesh requires the ndim of its first argument \(`devices`\) to equal the length of its "
      r"second argument \(`axis_names`\)",
      lambda m: m.jax.sharding.Mesh(m.jax.devices(), ("a", "b"))),
    R("sharding", "spec-axis-not-in-mesh", "ValueError",
      r"Resource axis: b of P\('b',\) is not found in mesh: \('a',\)\.",
      lambda m: m.jax.sharding.NamedSharding(m.jax.sharding.Mesh(m.jax.devices(), ("a",)),
                                             m.jax.sharding.PartitionSpec("b"))),
    R("sharding", "reshard-not-sharding", "TypeError",
      r"reshard: expected a NamedSharding or a PartitionSpec, got int",
      lambda m: m.jax.sharding.reshard(O(m), 3)),
    R("stages", "compiled-arg-shape", "TypeError",
      r"Argument types differ from the types for which this computation was compiled\.[\s\S]*"
      r"Argument 'x' compiled with float32\[3\] and called with float32\[4\]",
      lambda m: m.jax.jit(lambda x: x).lower(O(m)).compile()(O(m, 4))),
    R("stages", "compiled-arg-dtype", "TypeError",
      r"Argument 'x' compiled with float32\[3\] and called with int32\[3\]",
      lambda m: m.jax.jit(lambda x: x).lower(O(m)).compile()(O(m, 3, "int32"))),
    R("stages", "compiled-pytree", "TypeError",
      r"Function compiled with input pytree does not match the input pytree it was called with",
      lambda m: m.jax.jit(lambda x: x).lower(O(m)).compile()(x=O(m), y=1)),
    R("test_util", "check-grads-not-callable", "TypeError", r"Expected a callable value, got 3",
      lambda m: M(m, "test_util").check_grads(3, (1.,), order=1)),
    R("tree", "unflatten-leaf-count", "ValueError",
      r"Too few leaves for PyTreeDef; expected 2, got 1",
      lambda m: m.jax.tree.unflatten(m.jax.tree.structure([1, 2]), [1])),
    R("tree", "map-structure", "ValueError",
      r"pytree structure error: different lengths of list at key path",
      lambda m: m.jax.tree.map(lambda a, b: a, [1, 2], [1])),
    R("tree", "leaves-kw", "TypeError", r"unexpected keyword argument 'bogus'",
      lambda m: m.jax.tree.leaves([1], bogus=1)),
]


def _stats_row(dist: str) -> R:
  """A string where a scipy.stats distribution's log-density wants an array (its other
  parameters given as 1.0): TypeError naming the function, the position and the type."""
  def fn(m):
    mod = M(m, f"scipy.stats.{dist}")
    f = getattr(mod, "logpmf", None) or mod.logpdf
    n = sum(p.default is inspect.Parameter.empty for p in inspect.signature(f).parameters.values())
    return f("a", *[1.] * (n - 1))
  name = "logpmf" if dist in _DISCRETE else "logpdf"
  return R(f"scipy.stats.{dist}", f"stats-{dist}-{name}-str", "TypeError",
           rf"{dist}\.{name} requires ndarray or scalar arguments, got <class 'str'> at position 0",
           fn)


_DISCRETE = {"bernoulli", "betabinom", "binom", "geom", "multinomial", "nbinom", "poisson"}
_STATS = ("bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon",
          "gamma", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic",
          "multinomial", "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t",
          "truncnorm", "uniform", "vonmises", "wrapcauchy")
MODULE_ROWS += [_stats_row(d) for d in _STATS]
