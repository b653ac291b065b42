"""Autodiff as JAX's documentation pages use it (gradient-checkpointing.md, autodiff_remat.md,
jax-primitives.md, Custom_derivative_rules_for_Python_code.md...): each case is a snippet of
those pages run in a fresh process (its code compiled as a notebook cell, `<cell N>`, as the
pages' suite runs them), its printed output compared with what JAX 0.10.2 printed (recorded
below, and re-checked against real JAX when it is installed)."""
from conftest import printed_output_tests

_PROGRAM = r'''
import contextlib, io, json, sys, warnings
import numpy as np
mod = sys.argv[1]
jax = __import__(mod)
__import__(mod + ".ad_checkpoint")
jnp = __import__(mod + ".numpy", fromlist=["numpy"])
out = {}
cells = {}

def case(name, code):
  buf = io.StringIO()
  ns = {"jax": jax, "jnp": jnp, "np": np, "lax": jax.lax,
        "print_saved_residuals": jax.ad_checkpoint.print_saved_residuals}
  try:
    with contextlib.redirect_stdout(buf), warnings.catch_warnings(record=True) as ws:
      warnings.simplefilter("always")
      exec(compile(code, f"<cell {len(cells)}>", "exec"), ns)
    for w in ws:
      print(f"warning: {w.category.__name__}: {w.message}", file=buf)
  except Exception as e:
    print(f"{type(e).__name__}: {e}", file=buf)
  cells[name] = code
  out[name] = buf.getvalue()

case("saved_residuals_source_locations", """
def g(W, x):
  y = jnp.dot(W, x)
  return jnp.sin(y)

def f(W1, W2, x):
  x = g(W1, x)
  x = g(W2, x)
  return x

W1, W2, x = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones(4)
print_saved_residuals(f, W1, W2, x)
print_saved_residuals(lambda *a: jnp.sin(f(*a)), W1, W2, x)
def f2(W1, W2, x):
  x = jax.checkpoint(g)(W1, x)
  return jax.checkpoint(g)(W2, x)
print_saved_residuals(f2, W1, W2, x)
f3 = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
print_saved_residuals(f3, W1, W2, x)
""")

case("grad_through_nested_checkpoints", """
def recursive_checkpoint(funs):
  if len(funs) == 1:
    return funs[0]
  elif len(funs) == 2:
    f1, f2 = funs
    return lambda x: f1(f2(x))
  else:
    f1 = recursive_checkpoint(funs[:len(funs)//2])
    f2 = recursive_checkpoint(funs[len(funs)//2:])
    return lambda x: f1(jax.checkpoint(f2)(x))
f = lambda x: jnp.sin(jax.checkpoint(lambda y: jnp.sin(jax.checkpoint(jnp.sin)(y)))(x))
print(jax.grad(f)(3.), jax.jit(jax.grad(f))(3.))
for n in (8, 16):
  g = recursive_checkpoint([jnp.sin] * n)
  print_saved_residuals(g, 3.)
  print(jax.grad(g)(3.))
""")

case("checkpoint_traces_a_function_once_per_signature", """
def predict(x):
  return jnp.sin(x)
def loss(x):
  return jnp.sum(predict(x) ** 2)
print_saved_residuals(jax.checkpoint(loss, policy=jax.checkpoint_policies.nothing_saveable),
                      jnp.ones(3))
def predict(x):  # redefined: a checkpoint of `loss` traced before does not see it (as JAX)
  return jax.ad_checkpoint.checkpoint_name(jnp.sin(x), "s")
print_saved_residuals(jax.checkpoint(loss, policy=jax.checkpoint_policies.save_any_names_but_these()),
                      jnp.ones(3))
print_saved_residuals(jax.checkpoint(lambda x: loss(x),
                                     policy=jax.checkpoint_policies.save_any_names_but_these()),
                      jnp.ones(3))
""")

case("jacobian_through_custom_root_whose_solve_closes_over_the_argument", """
def sqrt_root(a):
  def solve(g, y):  # Newton on x**2 - a, reading `a` from the closure
    x = y
    for _ in range(20):
      x = x - (x ** 2 - a) / (2 * x)
    return x
  return jax.lax.custom_root(lambda x: x ** 2 - a, 1.0, solve, lambda g, y: y / g(1.0))
print(sqrt_root(4.), jax.grad(sqrt_root)(4.), jax.jacobian(sqrt_root)(jnp.float32(4.)))
print(jax.jit(jax.grad(sqrt_root))(9.), jax.vmap(jax.grad(sqrt_root))(jnp.array([4., 16.])))
""")

case("no_numpy_warning_from_a_nan_cotangent", """
def log1pexp(x):
  return jnp.log(1. + jnp.exp(x))
print(jax.grad(log1pexp)(100.), jax.jit(jax.grad(log1pexp))(100.))
f = lambda x: jnp.sqrt(x) * 0.
print(jax.grad(f)(0.))
""")

print(json.dumps(out))
'''

# What JAX 0.10.2 printed (the same program with mod="jax").
_EXPECTED = {
  'saved_residuals_source_locations': (
    'f32[5,4] from the argument W1\n'
    'f32[6,5] from the argument W2\n'
    'f32[4] from the argument x\n'
    'f32[5] output of sin from <cell 0>:4:9 (g)\n'
    'f32[5] output of cos from <cell 0>:4:9 (g)\n'
    'f32[6] output of cos from <cell 0>:4:9 (g)\n'
    'f32[5,4] from the argument a[0]\n'
    'f32[6,5] from the argument a[1]\n'
    'f32[4] from the argument a[2]\n'
    'f32[5] output of sin from <cell 0>:4:9 (g)\n'
    'f32[5] output of cos from <cell 0>:4:9 (g)\n'
    'f32[6] output of cos from <cell 0>:4:9 (g)\n'
    'f32[6] output of cos from <cell 0>:13:33 (<lambda>)\n'
    'f32[5,4] from the argument W1\n'
    'f32[6,5] from the argument W2\n'
    'f32[4] from the argument x\n'
    'f32[5] output of sin from <cell 0>:4:9 (g)\n'
    'f32[5,4] from the argument W1\n'
    'f32[6,5] from the argument W2\n'
    'f32[4] from the argument x\n'
    'f32[5] output of dot_general from <cell 0>:3:6 (g)\n'
    'f32[6] output of dot_general from <cell 0>:3:6 (g)\n'
  ),
  'grad_through_nested_checkpoints': (
    '-0.9704719 -0.9704719\n'
    'f32[] from the argument x\n'
    'f32[] output of sin from <cell 1>:7:21 (recursive_checkpoint.<locals>.<lambda>)\n'
    'f32[] output of cos from <cell 1>:7:24 (recursive_checkpoint.<locals>.<lambda>)\n'
    'f32[] output of cos from <cell 1>:7:21 (recursive_checkpoint.<locals>.<lambda>)\n'
    '-0.92438275\n'
    'f32[] from the argument x\n'
    'f32[] output of sin from <cell 1>:7:21 (recursive_checkpoint.<locals>.<lambda>)\n'
    'f32[] output of sin from <cell 1>:7:21 (recursive_checkpoint.<locals>.<lambda>)\n'
    'f32[] output of cos from <cell 1>:7:24 (recursive_checkpoint.<locals>.<lambda>)\n'
    'f32[] output of cos from <cell 1>:7:21 (recursive_checkpoint.<locals>.<lambda>)\n'
    '-0.8578497\n'
  ),
  'checkpoint_traces_a_function_once_per_signature': (
    'f32[3] from the argument x\n'
    'f32[3] from the argument x\n'
    'f32[3] from the argument x\n'
    "f32[3] named 's' from <cell 2>:9:9 (predict)\n"
  ),
  'jacobian_through_custom_root_whose_solve_closes_over_the_argument': '2.0 0.25 0.25\n0.16666667 [0.25  0.125]\n',
  'no_numpy_warning_from_a_nan_cotangent': 'nan nan\nnan\n',
}


ours, test_prints_what_jax_printed, test_recorded_outputs_are_jax_s = printed_output_tests(
    _PROGRAM, _EXPECTED)
