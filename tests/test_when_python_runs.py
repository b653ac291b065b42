"""When user Python runs: custom_jvp/custom_vjp functions and rules, pure_callback, io_callback
and jax.debug run at the moments JAX 0.10.2 runs them, seeing values or tracers as JAX's do.

A table: each row is one small program with side effects (its user functions log events such as
`jvp(C,T)`: the rule ran with a concrete primal and a tracer tangent; printed lines join the log
as `print ...`; an error ends it) under one transformation. The log must equal the sequence
recorded from JAX 0.10.2 below and, when the oracle is installed, JAX's own run of the row.
A second table does the same for dtypes and weak types of complex gradients and custom rules.
"""
import contextlib
import functools
import io
import re

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp_
from conftest import oracle


def _kind(jx, *xs) -> str:
  return ",".join("T" if isinstance(x, jx.core.Tracer) else "C" for x in xs)


def _custom_jvp(jx, log):
  jnp = jx.numpy

  @jx.custom_jvp
  def f(x):
    log.append(f"f({_kind(jx, x)})")
    return jnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    log.append(f"jvp({_kind(jx, x, t)})")
    return f(x), jnp.cos(x) * t
  return f


def _custom_jvp_if(jx, log):
  """Python control flow on the primal inside the rule: works where the rule sees values."""
  jnp = jx.numpy

  @jx.custom_jvp
  def f(x):
    log.append(f"f({_kind(jx, x)})")
    return jnp.abs(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    log.append(f"jvp({_kind(jx, x, t)})")
    if x < 0:
      return -x, -t
    return x, t
  return f


def _custom_vjp(jx, log):
  jnp = jx.numpy

  @jx.custom_vjp
  def f(x):
    log.append(f"f({_kind(jx, x)})")
    return jnp.sin(x)

  def fwd(x):
    log.append(f"fwd({_kind(jx, x)})")
    return jnp.sin(x), jnp.cos(x)

  def bwd(res, g):
    log.append(f"bwd({_kind(jx, res, g)})")
    return (res * g,)
  f.defvjp(fwd, bwd)
  return f


def _custom_vjp_if(jx, log):
  @jx.custom_vjp
  def f(x):
    log.append(f"f({_kind(jx, x)})")
    return x * 2.

  def fwd(x):
    log.append(f"fwd({_kind(jx, x)})")
    if x < 0:
      return -x * 2., -1.
    return x * 2., 1.

  def bwd(res, g):
    log.append(f"bwd({_kind(jx, res, g)})")
    return (res * g * 2.,)
  f.defvjp(fwd, bwd)
  return f


def _debug_in_rules(jx, log):
  """jax.debug.print from the function and from both rules of a custom_vjp."""
  jnp = jx.numpy

  @jx.custom_vjp
  def f(x):
    jx.debug.print("f x={}", x)
    return jnp.sin(x)

  def fwd(x):
    jx.debug.print("fwd x={}", x)
    return jnp.sin(x), jnp.cos(x)

  def bwd(res, g):
    jx.debug.print("bwd res={} g={}", res, g)
    return (res * g,)
  f.defvjp(fwd, bwd)
  return f


def _debug_callback(jx, log):
  jnp = jx.numpy

  def f(x):
    jx.debug.callback(lambda v: log.append(f"dbg({_kind(jx, v)}{np.shape(v)})"), x)
    y = jnp.sin(x)
    jx.debug.callback(lambda v: log.append(f"dbg2({_kind(jx, v)}{np.shape(v)})"), y)
    return y
  return f


def _debug_print(jx, log):
  jnp = jx.numpy

  def f(x):
    jx.debug.print("x={x}", x=x)
    y = x * 2.
    jx.debug.print("y={}", y, ordered=True)
    return jnp.sin(y)
  return f


def _pure_callback_in_custom_jvp(jx, log):
  """The usual way to differentiate a host function: pure_callback under a custom_jvp."""
  jnp = jx.numpy

  def cb(v):
    log.append(f"cb({_kind(jx, v)}{np.shape(v)})")
    return np.sin(v)  # float64: canonicalized to float32 as in JAX

  @jx.custom_jvp
  def f(x):
    log.append(f"f({_kind(jx, x)})")
    return jx.pure_callback(cb, jx.ShapeDtypeStruct(jnp.shape(x), jnp.float32), x,
                            vmap_method="sequential")

  @f.defjvp
  def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    log.append(f"jvp({_kind(jx, x, t)})")
    return f(x), jnp.cos(x) * t
  return f


def _io_callback(jx, log):
  jnp = jx.numpy

  def cb(v):
    log.append(f"io({_kind(jx, v)}{np.shape(v)})")
    return np.asarray(v)

  def f(x):
    y = jx.experimental.io_callback(cb, jx.ShapeDtypeStruct(jnp.shape(x), jnp.float32), x)
    return jnp.sin(x) + 0. * y
  return f


def _custom_jvp_nondiff(jx, log):
  """A nondiff (static) argument steering Python control flow in the rule; the rule calls the
  function again, on other static arguments."""
  jnp = jx.numpy

  @functools.partial(jx.custom_jvp, nondiff_argnums=(0,))
  def f(n, x):
    log.append(f"f({n},{_kind(jx, x)})")
    return x ** n

  @f.defjvp
  def f_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    log.append(f"jvp({n},{_kind(jx, x, t)})")
    if n == 0:
      return f(n, x), jnp.zeros_like(t)
    return f(n, x), n * f(n - 1, x) * t
  return lambda x: f(3, x)


def _debug_in_jvp_rule(jx, log):
  jnp = jx.numpy

  @jx.custom_jvp
  def f(x):
    jx.debug.print("f {}", x)
    return jnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    jx.debug.print("jvp {} {}", primals[0], tangents[0])
    return f(primals[0]), jnp.cos(primals[0]) * tangents[0]
  return f


def _symbolic_zeros(jx, log):
  """fwd sees CustomVJPPrimal values and which arguments are perturbed."""
  @jx.custom_vjp
  def f(x, y):
    log.append(f"f({_kind(jx, x, y)})")
    return x * y

  def fwd(x, y):
    log.append(f"fwd({type(x).__name__},{x.perturbed},{y.perturbed})")
    return x.value * y.value, (x.value, y.value)

  def bwd(res, g):
    log.append(f"bwd({_kind(jx, *res, g)})")
    return (g * res[1], g * res[0])
  f.defvjp(fwd, bwd, symbolic_zeros=True)
  return lambda x: f(x, 2.)


def _pure_callback_expand_dims(jx, log):
  """One call per vmap with vmap_method="expand_dims", whatever the batch size."""
  jnp = jx.numpy

  def cb(v):
    log.append(f"cb({np.shape(v)})")
    return np.asarray(v) * 2

  return lambda x: jx.pure_callback(cb, jx.ShapeDtypeStruct(jnp.shape(x), jnp.float32), x,
                                    vmap_method="expand_dims")


def _io_callback_ordered(jx, log):
  jnp = jx.numpy

  def cb(v):
    log.append(f"io({_kind(jx, v)})")
    return np.asarray(v)

  def f(x):
    y = jx.experimental.io_callback(cb, jx.ShapeDtypeStruct(jnp.shape(x), jnp.float32), x,
                                    ordered=True)
    jx.debug.print("after {}", y, ordered=True)
    return x * 2.
  return f


PROGRAMS = {
    "custom_jvp": _custom_jvp,
    "custom_jvp_if": _custom_jvp_if,
    "custom_vjp": _custom_vjp,
    "custom_vjp_if": _custom_vjp_if,
    "debug_in_rules": _debug_in_rules,
    "debug_callback": _debug_callback,
    "debug_print": _debug_print,
    "pure_callback_in_custom_jvp": _pure_callback_in_custom_jvp,
    "io_callback": _io_callback,
    "custom_jvp_nondiff": _custom_jvp_nondiff,
    "debug_in_jvp_rule": _debug_in_jvp_rule,
    "symbolic_zeros": _symbolic_zeros,
    "pure_callback_expand_dims": _pure_callback_expand_dims,
    "io_callback_ordered": _io_callback_ordered,
}

X, NEG = 0.5, -0.5


def _xs(jx):
  return jx.numpy.array([0.5, -1.0])


def _vjp(jx, f, x):
  y, pullback = jx.vjp(f, x)
  return pullback(jx.numpy.ones_like(y))


def _linearize(jx, f):
  _, f_lin = jx.linearize(f, X)
  return f_lin(1.0)


def _jit_twice(jx, f):
  g = jx.jit(f)
  g(X)
  return g(X)


TRANSFORMS = {
    "call": lambda jx, f: f(X),
    "jit": lambda jx, f: jx.jit(f)(X),
    "jit_twice": _jit_twice,
    "vmap": lambda jx, f: jx.vmap(f)(_xs(jx)),
    "jvp": lambda jx, f: jx.jvp(f, (X,), (1.0,)),
    "grad": lambda jx, f: jx.grad(f)(X),
    "grad_neg": lambda jx, f: jx.grad(f)(NEG),
    "vjp": lambda jx, f: _vjp(jx, f, X),
    "linearize": _linearize,
    "jit_grad": lambda jx, f: jx.jit(jx.grad(f))(X),
    "grad_jit": lambda jx, f: jx.grad(jx.jit(f))(X),
    "vmap_grad": lambda jx, f: jx.vmap(jx.grad(f))(_xs(jx)),
    "grad_grad": lambda jx, f: jx.grad(jx.grad(f))(X),
    "jvp_jit": lambda jx, f: jx.jvp(jx.jit(f), (X,), (1.0,)),
    "jit_jvp": lambda jx, f: jx.jit(lambda x: jx.jvp(f, (x,), (1.0,)))(X),
    "jvp_vmap": lambda jx, f: jx.jvp(jx.vmap(f), (_xs(jx),), (_xs(jx),)),
    "vjp_vmap": lambda jx, f: _vjp(jx, jx.vmap(f), _xs(jx)),
    "jacfwd": lambda jx, f: jx.jacfwd(f)(X),
    "jacrev": lambda jx, f: jx.jacrev(f)(X),
    "hessian": lambda jx, f: jx.hessian(f)(X),
    "checkpoint_grad": lambda jx, f: jx.grad(jx.checkpoint(f))(X),
    "jit_vmap": lambda jx, f: jx.jit(jx.vmap(f))(_xs(jx)),
    "vmap_jit": lambda jx, f: jx.vmap(jx.jit(f))(_xs(jx)),
    "scan": lambda jx, f: jx.lax.scan(lambda c, x: (c + f(x), None), 0., _xs(jx))[0],
    "cond": lambda jx, f: jx.lax.cond(True, f, lambda x: x * 0., X),
    "value_and_grad": lambda jx, f: jx.value_and_grad(f)(X),
}


class _PrintLog(io.TextIOBase):
  """stdout as events: each printed line joins the log where it happens."""

  def __init__(self, log):
    self.log, self.pending = log, ""

  def write(self, s):
    *lines, self.pending = (self.pending + s).split("\n")
    self.log.extend(f"print {line}" for line in lines)
    return len(s)


def run_row(jx, program: str, transform: str) -> list[str]:
  """The events of one program under one transformation, printed lines and errors included."""
  log = []
  try:
    with contextlib.redirect_stdout(_PrintLog(log)):
      f = PROGRAMS[program](jx, log)
      jx.block_until_ready(TRANSFORMS[transform](jx, f))
      jx.effects_barrier()
  except Exception as e:  # noqa: BLE001 - the error is one of the row's events
    first = (str(e).splitlines() or [""])[0]
    log.append(f"{type(e).__name__}: {first}")
  return log


# --- weak types of gradients of complex functions and of custom rules' outputs ---------------


def weak_type_cases(jx):
  """Programs whose results' dtypes and weak types are compared with JAX's."""
  jnp = jx.numpy

  @jx.custom_jvp
  def cj(x):
    return x * 2

  cj.defjvp(lambda p, t: (p[0] * 2, t[0] * 2))

  @jx.custom_jvp
  def cj_strong(x):
    return jnp.sin(x)

  cj_strong.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.float32(3.) * t[0]))

  @jx.custom_vjp
  def cv(x):
    return x * 2

  cv.defvjp(lambda x: (x * 2, None), lambda r, g: (g * 2,))

  @jx.custom_vjp
  def cv_strong(x):
    return x * 2

  cv_strong.defvjp(lambda x: (x * 2, None), lambda r, g: (jnp.float32(2.) * g,))
  z, z64 = 1. + 1j, jnp.complex64(1 + 1j)
  return {
      "holomorphic_grad_py_complex": lambda: jx.grad(lambda z: z ** 2, holomorphic=True)(z),
      "holomorphic_grad_complex64": lambda: jx.grad(lambda z: z ** 2, holomorphic=True)(z64),
      "holomorphic_grad_mul": lambda: jx.grad(lambda z: z * 3j, holomorphic=True)(z),
      "grad_of_real_part": lambda: jx.grad(lambda z: jnp.real(z * jnp.conj(z)))(z),
      "grad_of_real": lambda: jx.grad(jnp.real)(z),
      "grad_of_imag": lambda: jx.grad(jnp.imag)(z),
      "grad_of_abs": lambda: jx.grad(jnp.abs)(z),
      "vjp_complex": lambda: jx.vjp(lambda z: z * 2, z)[1](1. + 0j),
      "vjp_of_real": lambda: jx.vjp(jnp.real, z)[1](1.),
      "jvp_complex": lambda: jx.jvp(lambda z: z * 2, (z,), (1. + 0j,)),
      "jacrev_holomorphic": lambda: jx.jacrev(lambda z: z ** 2, holomorphic=True)(z),
      "jacfwd_holomorphic": lambda: jx.jacfwd(lambda z: z ** 2, holomorphic=True)(z),
      "jacrev_weak_in": lambda: jx.jacrev(lambda x: x * jnp.ones(2))(1.),
      "jacfwd_weak_in": lambda: jx.jacfwd(lambda x: x * jnp.ones(2))(1.),
      "hessian_weak_in": lambda: jx.hessian(lambda x: x ** 3)(1.),
      "custom_jvp_call": lambda: cj(1.),
      "custom_jvp_jit": lambda: jx.jit(cj)(1.),
      "custom_jvp_jvp": lambda: jx.jvp(cj, (1.,), (1.,)),
      "custom_jvp_grad": lambda: jx.grad(cj)(1.),
      "custom_jvp_vmap": lambda: jx.vmap(cj)(jnp.ones(2)),
      "custom_jvp_strong_rule_grad": lambda: jx.grad(cj_strong)(1.),
      "custom_jvp_strong_rule_jvp": lambda: jx.jvp(cj_strong, (1.,), (1.,)),
      "custom_jvp_strong_rule_jit_grad": lambda: jx.jit(jx.grad(cj_strong))(1.),
      "custom_jvp_holomorphic": lambda: jx.grad(cj, holomorphic=True)(z),
      "custom_vjp_call": lambda: cv(1.),
      "custom_vjp_grad": lambda: jx.grad(cv)(1.),
      "custom_vjp_vjp": lambda: jx.vjp(cv, 1.),
      "custom_vjp_strong_bwd_grad": lambda: jx.grad(cv_strong)(1.),
      "custom_vjp_strong_bwd_jit_grad": lambda: jx.jit(jx.grad(cv_strong))(1.),
      "custom_vjp_strong_bwd_grad_jit": lambda: jx.grad(jx.jit(cv_strong))(1.),
      "custom_vjp_vmap_grad": lambda: jx.vmap(jx.grad(cv))(jnp.ones(2)),
      "custom_vjp_holomorphic": lambda: jx.grad(cv, holomorphic=True)(z),
  }


def weak_type_row(jx, name: str) -> list[str]:
  """`dtype[shape]` of each result leaf, with `weak` when weakly typed (Python scalars, which
  JAX's rules may return as they are, count as the weak arrays they stand for)."""
  out = jx.block_until_ready(weak_type_cases(jx)[name]())
  leaves = []
  for leaf in jx.tree_util.tree_leaves(out):
    aval = jx.numpy.asarray(leaf).aval
    leaves.append(f"{aval.dtype}{list(aval.shape)}{' weak' if aval.weak_type else ''}")
  return leaves


# --- the recorded answers (from JAX 0.10.2) ---------------------------------------------------

NO_JVP = "TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function."
BOOL_OF_TRACER = (
    "TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].")
IO_NO_JVP = "ValueError: IO callbacks do not support JVP."
PURE_NO_JVP = ("ValueError: Pure callbacks do not support JVP. Please use `jax.custom_jvp` to "
               "use callbacks while taking gradients.")

EXPECTED = {
    ("custom_jvp", "call"): ["f(C)"],
    ("custom_jvp", "jit"): ["f(T)"],
    ("custom_jvp", "jit_twice"): ["f(T)"],
    ("custom_jvp", "vmap"): ["f(T)"],
    ("custom_jvp", "jvp"): ["jvp(C,C)", "f(C)"],
    ("custom_jvp", "grad"): ["jvp(C,T)", "f(C)"],
    ("custom_jvp", "grad_neg"): ["jvp(C,T)", "f(C)"],
    ("custom_jvp", "vjp"): ["jvp(C,T)", "f(C)"],
    ("custom_jvp", "linearize"): ["jvp(C,T)", "f(C)"],
    ("custom_jvp", "jit_grad"): ["jvp(T,T)", "f(T)"],
    ("custom_jvp", "grad_jit"): ["f(T)", "jvp(T,T)", "f(T)"],
    ("custom_jvp", "vmap_grad"): ["jvp(T,T)", "f(T)"],
    ("custom_jvp", "grad_grad"): ["jvp(T,T)", "jvp(C,T)", "f(C)"],
    ("custom_jvp", "jvp_jit"): ["f(T)", "jvp(T,T)", "f(T)"],
    ("custom_jvp", "jit_jvp"): ["jvp(T,C)", "f(T)"],
    ("custom_jvp", "jvp_vmap"): ["jvp(T,T)", "f(T)"],
    ("custom_jvp", "vjp_vmap"): ["jvp(T,T)", "f(T)"],
    ("custom_jvp", "jacfwd"): ["jvp(C,T)", "f(C)"],
    ("custom_jvp", "jacrev"): ["jvp(C,T)", "f(C)"],
    ("custom_jvp", "hessian"): ["jvp(T,T)", "jvp(C,T)", "f(C)"],
    ("custom_jvp", "checkpoint_grad"): ["f(T)", "jvp(T,T)", "f(T)"],
    ("custom_jvp", "jit_vmap"): ["f(T)"],
    ("custom_jvp", "vmap_jit"): ["f(T)"],
    ("custom_jvp", "scan"): ["f(T)"],
    ("custom_jvp", "cond"): ["f(T)"],
    ("custom_jvp", "value_and_grad"): ["jvp(C,T)", "f(C)"],
    ("custom_jvp_if", "call"): ["f(C)"],
    ("custom_jvp_if", "jit"): ["f(T)"],
    ("custom_jvp_if", "jit_twice"): ["f(T)"],
    ("custom_jvp_if", "vmap"): ["f(T)"],
    ("custom_jvp_if", "jvp"): ["jvp(C,C)"],
    ("custom_jvp_if", "grad"): ["jvp(C,T)"],
    ("custom_jvp_if", "grad_neg"): ["jvp(C,T)"],
    ("custom_jvp_if", "vjp"): ["jvp(C,T)"],
    ("custom_jvp_if", "linearize"): ["jvp(C,T)"],
    ("custom_jvp_if", "jit_grad"): ["jvp(T,T)", BOOL_OF_TRACER],
    ("custom_jvp_if", "grad_jit"): ["f(T)", "jvp(T,T)", BOOL_OF_TRACER],
    ("custom_jvp_if", "vmap_grad"): ["jvp(T,T)", BOOL_OF_TRACER],
    ("custom_jvp_if", "grad_grad"): ["jvp(T,T)"],
    ("custom_jvp_if", "jvp_jit"): ["f(T)", "jvp(T,T)", BOOL_OF_TRACER],
    ("custom_jvp_if", "jit_jvp"): ["jvp(T,C)", BOOL_OF_TRACER],
    ("custom_jvp_if", "jvp_vmap"): ["jvp(T,T)", BOOL_OF_TRACER],
    ("custom_jvp_if", "vjp_vmap"): ["jvp(T,T)", BOOL_OF_TRACER],
    ("custom_jvp_if", "jacfwd"): ["jvp(C,T)"],
    ("custom_jvp_if", "jacrev"): ["jvp(C,T)"],
    ("custom_jvp_if", "hessian"): ["jvp(T,T)"],
    ("custom_jvp_if", "checkpoint_grad"): ["f(T)", "jvp(T,T)", BOOL_OF_TRACER],
    ("custom_jvp_if", "jit_vmap"): ["f(T)"],
    ("custom_jvp_if", "vmap_jit"): ["f(T)"],
    ("custom_jvp_if", "scan"): ["f(T)"],
    ("custom_jvp_if", "cond"): ["f(T)"],
    ("custom_jvp_if", "value_and_grad"): ["jvp(C,T)"],
    ("custom_vjp", "call"): ["f(C)"],
    ("custom_vjp", "jit"): ["f(T)"],
    ("custom_vjp", "jit_twice"): ["f(T)"],
    ("custom_vjp", "vmap"): ["f(T)"],
    ("custom_vjp", "jvp"): ["fwd(C)", NO_JVP],
    ("custom_vjp", "grad"): ["fwd(C)", "bwd(C,C)"],
    ("custom_vjp", "grad_neg"): ["fwd(C)", "bwd(C,C)"],
    ("custom_vjp", "vjp"): ["fwd(C)", "bwd(C,C)"],
    ("custom_vjp", "linearize"): ["fwd(C)", NO_JVP],
    ("custom_vjp", "jit_grad"): ["fwd(T)", "bwd(T,T)"],
    ("custom_vjp", "grad_jit"): ["f(T)", "fwd(T)", "bwd(T,T)"],
    ("custom_vjp", "vmap_grad"): ["fwd(T)", "bwd(T,C)"],
    ("custom_vjp", "grad_grad"): ["fwd(T)", "bwd(T,C)"],
    ("custom_vjp", "jvp_jit"): ["f(T)", "fwd(T)", NO_JVP],
    ("custom_vjp", "jit_jvp"): ["fwd(T)", NO_JVP],
    ("custom_vjp", "jvp_vmap"): ["fwd(T)", NO_JVP],
    ("custom_vjp", "vjp_vmap"): ["fwd(T)", "bwd(T,T)"],
    ("custom_vjp", "jacfwd"): ["fwd(C)", NO_JVP],
    ("custom_vjp", "jacrev"): ["fwd(C)", "bwd(C,T)"],
    ("custom_vjp", "hessian"): ["fwd(T)", "bwd(T,T)"],
    ("custom_vjp", "checkpoint_grad"): ["f(T)", "fwd(T)", "bwd(T,T)"],
    ("custom_vjp", "jit_vmap"): ["f(T)"],
    ("custom_vjp", "vmap_jit"): ["f(T)"],
    ("custom_vjp", "scan"): ["f(T)"],
    ("custom_vjp", "cond"): ["f(T)"],
    ("custom_vjp", "value_and_grad"): ["fwd(C)", "bwd(C,C)"],
    ("custom_vjp_if", "call"): ["f(C)"],
    ("custom_vjp_if", "jit"): ["f(T)"],
    ("custom_vjp_if", "jit_twice"): ["f(T)"],
    ("custom_vjp_if", "vmap"): ["f(T)"],
    ("custom_vjp_if", "jvp"): ["fwd(C)", NO_JVP],
    ("custom_vjp_if", "grad"): ["fwd(C)", "bwd(C,C)"],
    ("custom_vjp_if", "grad_neg"): ["fwd(C)", "bwd(C,C)"],
    ("custom_vjp_if", "vjp"): ["fwd(C)", "bwd(C,C)"],
    ("custom_vjp_if", "linearize"): ["fwd(C)", NO_JVP],
    ("custom_vjp_if", "jit_grad"): ["fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "grad_jit"): ["f(T)", "fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "vmap_grad"): ["fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "grad_grad"): ["fwd(T)", "bwd(C,C)"],
    ("custom_vjp_if", "jvp_jit"): ["f(T)", "fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "jit_jvp"): ["fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "jvp_vmap"): ["fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "vjp_vmap"): ["fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "jacfwd"): ["fwd(C)", NO_JVP],
    ("custom_vjp_if", "jacrev"): ["fwd(C)", "bwd(C,T)"],
    ("custom_vjp_if", "hessian"): ["fwd(T)", "bwd(C,T)"],
    ("custom_vjp_if", "checkpoint_grad"): ["f(T)", "fwd(T)", BOOL_OF_TRACER],
    ("custom_vjp_if", "jit_vmap"): ["f(T)"],
    ("custom_vjp_if", "vmap_jit"): ["f(T)"],
    ("custom_vjp_if", "scan"): ["f(T)"],
    ("custom_vjp_if", "cond"): ["f(T)"],
    ("custom_vjp_if", "value_and_grad"): ["fwd(C)", "bwd(C,C)"],
    ("debug_in_rules", "call"): ["print f x=0.5"],
    ("debug_in_rules", "jit"): ["print f x=0.5"],
    ("debug_in_rules", "jit_twice"): ["print f x=0.5", "print f x=0.5"],
    ("debug_in_rules", "vmap"): ["print f x=0.5", "print f x=-1.0"],
    ("debug_in_rules", "jvp"): ["print fwd x=0.5", NO_JVP],
    ("debug_in_rules", "grad"): ["print fwd x=0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "grad_neg"): ["print fwd x=-0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "vjp"): ["print fwd x=0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "linearize"): ["print fwd x=0.5", NO_JVP],
    ("debug_in_rules", "jit_grad"): ["print fwd x=0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "grad_jit"): ["print fwd x=0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "vmap_grad"): ["print fwd x=0.5", "print fwd x=-1.0",
        "print bwd res=0.8775825500488281 g=1.0", "print bwd res=0.5403022766113281 g=1.0"],
    ("debug_in_rules", "grad_grad"): ["print fwd x=0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "jvp_jit"): [NO_JVP],
    ("debug_in_rules", "jit_jvp"): [NO_JVP],
    ("debug_in_rules", "jvp_vmap"): ["print fwd x=0.5", "print fwd x=-1.0", NO_JVP],
    ("debug_in_rules", "vjp_vmap"): ["print fwd x=0.5", "print fwd x=-1.0",
        "print bwd res=0.8775825500488281 g=1.0", "print bwd res=0.5403022766113281 g=1.0"],
    ("debug_in_rules", "jacfwd"): ["print fwd x=0.5", NO_JVP],
    ("debug_in_rules", "jacrev"): ["print fwd x=0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "hessian"): ["print fwd x=0.5", "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "checkpoint_grad"): ["print fwd x=0.5", "print fwd x=0.5",
        "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_in_rules", "jit_vmap"): ["print f x=0.5", "print f x=-1.0"],
    ("debug_in_rules", "vmap_jit"): ["print f x=0.5", "print f x=-1.0"],
    ("debug_in_rules", "scan"): ["print f x=0.5", "print f x=-1.0"],
    ("debug_in_rules", "cond"): ["print f x=0.5"],
    ("debug_in_rules", "value_and_grad"): ["print fwd x=0.5",
        "print bwd res=0.8775825500488281 g=1.0"],
    ("debug_callback", "call"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "jit"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "jit_twice"): ["dbg(C())", "dbg2(C())", "dbg(C())", "dbg2(C())"],
    ("debug_callback", "vmap"): ["dbg(C())", "dbg(C())", "dbg2(C())", "dbg2(C())"],
    ("debug_callback", "jvp"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "grad"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "grad_neg"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "vjp"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "linearize"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "jit_grad"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "grad_jit"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "vmap_grad"): ["dbg(C())", "dbg(C())", "dbg2(C())", "dbg2(C())"],
    ("debug_callback", "grad_grad"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "jvp_jit"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "jit_jvp"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "jvp_vmap"): ["dbg(C())", "dbg(C())", "dbg2(C())", "dbg2(C())"],
    ("debug_callback", "vjp_vmap"): ["dbg(C())", "dbg(C())", "dbg2(C())", "dbg2(C())"],
    ("debug_callback", "jacfwd"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "jacrev"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "hessian"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "checkpoint_grad"): ["dbg(C())", "dbg2(C())", "dbg(C())", "dbg2(C())"],
    ("debug_callback", "jit_vmap"): ["dbg(C())", "dbg(C())", "dbg2(C())", "dbg2(C())"],
    ("debug_callback", "vmap_jit"): ["dbg(C())", "dbg(C())", "dbg2(C())", "dbg2(C())"],
    ("debug_callback", "scan"): ["dbg2(C())", "dbg(C())", "dbg2(C())", "dbg(C())"],
    ("debug_callback", "cond"): ["dbg(C())", "dbg2(C())"],
    ("debug_callback", "value_and_grad"): ["dbg(C())", "dbg2(C())"],
    ("debug_print", "call"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "jit"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "jit_twice"): ["print x=0.5", "print y=1.0", "print x=0.5", "print y=1.0"],
    ("debug_print", "vmap"): ["print x=0.5", "print x=-1.0", "print y=1.0", "print y=-2.0"],
    ("debug_print", "jvp"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "grad"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "grad_neg"): ["print x=-0.5", "print y=-1.0"],
    ("debug_print", "vjp"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "linearize"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "jit_grad"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "grad_jit"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "vmap_grad"): ["print x=0.5", "print x=-1.0", "print y=1.0", "print y=-2.0"],
    ("debug_print", "grad_grad"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "jvp_jit"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "jit_jvp"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "jvp_vmap"): ["print x=0.5", "print x=-1.0", "print y=1.0", "print y=-2.0"],
    ("debug_print", "vjp_vmap"): ["print x=0.5", "print x=-1.0", "print y=1.0", "print y=-2.0"],
    ("debug_print", "jacfwd"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "jacrev"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "hessian"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "checkpoint_grad"): ["print x=0.5", "print y=1.0", "print x=0.5",
        "print y=1.0"],
    ("debug_print", "jit_vmap"): ["print x=0.5", "print x=-1.0", "print y=1.0", "print y=-2.0"],
    ("debug_print", "vmap_jit"): ["print x=0.5", "print x=-1.0", "print y=1.0", "print y=-2.0"],
    ("debug_print", "scan"): ["print y=1.0", "print x=0.5", "print y=-2.0", "print x=-1.0"],
    ("debug_print", "cond"): ["print x=0.5", "print y=1.0"],
    ("debug_print", "value_and_grad"): ["print x=0.5", "print y=1.0"],
    ("pure_callback_in_custom_jvp", "call"): ["f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jit"): ["f(T)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jit_twice"): ["f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "vmap"): ["f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jvp"): ["jvp(C,C)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "grad"): ["jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "grad_neg"): ["jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "vjp"): ["jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "linearize"): ["jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jit_grad"): ["jvp(T,T)", "f(T)"],
    ("pure_callback_in_custom_jvp", "grad_jit"): ["f(T)", "jvp(T,T)", "f(T)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "vmap_grad"): ["jvp(T,T)", "f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "grad_grad"): ["jvp(T,T)", "jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jvp_jit"): ["f(T)", "jvp(T,T)", "f(T)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jit_jvp"): ["jvp(T,C)", "f(T)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jvp_vmap"): ["jvp(T,T)", "f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "vjp_vmap"): ["jvp(T,T)", "f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jacfwd"): ["jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jacrev"): ["jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "hessian"): ["jvp(T,T)", "jvp(C,T)", "f(C)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "checkpoint_grad"): ["f(T)", "jvp(T,T)", "f(T)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "jit_vmap"): ["f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "vmap_jit"): ["f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "scan"): ["f(T)", "cb(C())", "cb(C())"],
    ("pure_callback_in_custom_jvp", "cond"): ["f(T)", "cb(C())"],
    ("pure_callback_in_custom_jvp", "value_and_grad"): ["jvp(C,T)", "f(C)", "cb(C())"],
    ("io_callback", "call"): ["io(C())"],
    ("io_callback", "jit"): ["io(C())"],
    ("io_callback", "jit_twice"): ["io(C())", "io(C())"],
    ("io_callback", "vmap"): ["io(C())", "io(C())"],
    ("io_callback", "jvp"): [IO_NO_JVP],
    ("io_callback", "grad"): [IO_NO_JVP],
    ("io_callback", "grad_neg"): [IO_NO_JVP],
    ("io_callback", "vjp"): [IO_NO_JVP],
    ("io_callback", "linearize"): [IO_NO_JVP],
    ("io_callback", "jit_grad"): [IO_NO_JVP],
    ("io_callback", "grad_jit"): [IO_NO_JVP],
    ("io_callback", "vmap_grad"): [IO_NO_JVP],
    ("io_callback", "grad_grad"): [IO_NO_JVP],
    ("io_callback", "jvp_jit"): [IO_NO_JVP],
    ("io_callback", "jit_jvp"): [IO_NO_JVP],
    ("io_callback", "jvp_vmap"): [IO_NO_JVP],
    ("io_callback", "vjp_vmap"): [IO_NO_JVP],
    ("io_callback", "jacfwd"): [IO_NO_JVP],
    ("io_callback", "jacrev"): [IO_NO_JVP],
    ("io_callback", "hessian"): [IO_NO_JVP],
    ("io_callback", "checkpoint_grad"): [IO_NO_JVP],
    ("io_callback", "jit_vmap"): ["io(C())", "io(C())"],
    ("io_callback", "vmap_jit"): ["io(C())", "io(C())"],
    ("io_callback", "scan"): ["io(C())", "io(C())"],
    ("io_callback", "cond"): ["io(C())"],
    ("io_callback", "value_and_grad"): [IO_NO_JVP],
    ("custom_jvp_nondiff", "call"): ["f(3,C)"],
    ("custom_jvp_nondiff", "jit"): ["f(3,T)"],
    ("custom_jvp_nondiff", "jit_twice"): ["f(3,T)"],
    ("custom_jvp_nondiff", "vmap"): ["f(3,T)"],
    ("custom_jvp_nondiff", "jvp"): ["jvp(3,C,C)", "f(3,C)", "f(2,C)"],
    ("custom_jvp_nondiff", "grad"): ["jvp(3,C,T)", "f(3,C)", "f(2,C)"],
    ("custom_jvp_nondiff", "grad_neg"): ["jvp(3,C,T)", "f(3,C)", "f(2,C)"],
    ("custom_jvp_nondiff", "vjp"): ["jvp(3,C,T)", "f(3,C)", "f(2,C)"],
    ("custom_jvp_nondiff", "linearize"): ["jvp(3,C,T)", "f(3,C)", "f(2,C)"],
    ("custom_jvp_nondiff", "jit_grad"): ["jvp(3,T,T)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "grad_jit"): ["f(3,T)", "jvp(3,T,T)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "vmap_grad"): ["jvp(3,T,T)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "grad_grad"): ["jvp(3,T,T)", "jvp(3,C,T)", "f(3,C)", "f(2,C)",
        "jvp(2,C,T)", "f(2,C)", "f(1,C)"],
    ("custom_jvp_nondiff", "jvp_jit"): ["f(3,T)", "jvp(3,T,T)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "jit_jvp"): ["jvp(3,T,C)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "jvp_vmap"): ["jvp(3,T,T)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "vjp_vmap"): ["jvp(3,T,T)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "jacfwd"): ["jvp(3,C,T)", "f(3,C)", "f(2,C)"],
    ("custom_jvp_nondiff", "jacrev"): ["jvp(3,C,T)", "f(3,C)", "f(2,C)"],
    ("custom_jvp_nondiff", "hessian"): ["jvp(3,T,T)", "jvp(3,C,T)", "f(3,C)", "f(2,C)",
        "jvp(2,C,T)", "f(2,C)", "f(1,C)"],
    ("custom_jvp_nondiff", "checkpoint_grad"): ["f(3,T)", "jvp(3,T,T)", "f(3,T)", "f(2,T)"],
    ("custom_jvp_nondiff", "jit_vmap"): ["f(3,T)"],
    ("custom_jvp_nondiff", "vmap_jit"): ["f(3,T)"],
    ("custom_jvp_nondiff", "scan"): ["f(3,T)"],
    ("custom_jvp_nondiff", "cond"): ["f(3,T)"],
    ("custom_jvp_nondiff", "value_and_grad"): ["jvp(3,C,T)", "f(3,C)", "f(2,C)"],
    ("debug_in_jvp_rule", "call"): ["print f 0.5"],
    ("debug_in_jvp_rule", "jit"): ["print f 0.5"],
    ("debug_in_jvp_rule", "jit_twice"): ["print f 0.5", "print f 0.5"],
    ("debug_in_jvp_rule", "vmap"): ["print f 0.5", "print f -1.0"],
    ("debug_in_jvp_rule", "jvp"): ["print jvp 0.5 1.0", "print f 0.5"],
    ("debug_in_jvp_rule", "grad"): ["print f 0.5"],
    ("debug_in_jvp_rule", "grad_neg"): ["print f -0.5"],
    ("debug_in_jvp_rule", "vjp"): ["print f 0.5"],
    ("debug_in_jvp_rule", "linearize"): ["print f 0.5", "print jvp 0.5 1.0"],
    ("debug_in_jvp_rule", "jit_grad"): ["print f 0.5"],
    ("debug_in_jvp_rule", "grad_jit"): ["print f 0.5"],
    ("debug_in_jvp_rule", "vmap_grad"): ["print f 0.5", "print f -1.0"],
    ("debug_in_jvp_rule", "grad_grad"): ["print f 0.5"],
    ("debug_in_jvp_rule", "jvp_jit"): ["print f 0.5", "print jvp 0.5 1.0"],
    ("debug_in_jvp_rule", "jit_jvp"): ["print f 0.5", "print jvp 0.5 1.0"],
    ("debug_in_jvp_rule", "jvp_vmap"): ["print jvp 0.5 0.5", "print jvp -1.0 -1.0", "print f 0.5",
        "print f -1.0"],
    ("debug_in_jvp_rule", "vjp_vmap"): ["print f 0.5", "print f -1.0"],
    ("debug_in_jvp_rule", "jacfwd"): ["print jvp 0.5 1.0", "print f 0.5"],
    ("debug_in_jvp_rule", "jacrev"): ["print f 0.5"],
    ("debug_in_jvp_rule", "hessian"): ["print jvp 0.5 1.0", "print f 0.5"],
    ("debug_in_jvp_rule", "checkpoint_grad"): ["print f 0.5"],
    ("debug_in_jvp_rule", "jit_vmap"): ["print f 0.5", "print f -1.0"],
    ("debug_in_jvp_rule", "vmap_jit"): ["print f 0.5", "print f -1.0"],
    ("debug_in_jvp_rule", "scan"): ["print f 0.5", "print f -1.0"],
    ("debug_in_jvp_rule", "cond"): ["print f 0.5"],
    ("debug_in_jvp_rule", "value_and_grad"): ["print f 0.5"],
    ("symbolic_zeros", "call"): ["f(C,C)"],
    ("symbolic_zeros", "jit"): ["f(T,T)"],
    ("symbolic_zeros", "jit_twice"): ["f(T,T)"],
    ("symbolic_zeros", "vmap"): ["f(T,C)"],
    ("symbolic_zeros", "jvp"): ["fwd(CustomVJPPrimal,True,False)", NO_JVP],
    ("symbolic_zeros", "grad"): ["fwd(CustomVJPPrimal,True,False)", "bwd(C,C,C)"],
    ("symbolic_zeros", "grad_neg"): ["fwd(CustomVJPPrimal,True,False)", "bwd(C,C,C)"],
    ("symbolic_zeros", "vjp"): ["fwd(CustomVJPPrimal,True,False)", "bwd(C,C,C)"],
    ("symbolic_zeros", "linearize"): ["fwd(CustomVJPPrimal,True,False)", NO_JVP],
    ("symbolic_zeros", "jit_grad"): ["fwd(CustomVJPPrimal,True,False)", "bwd(T,C,T)"],
    ("symbolic_zeros", "grad_jit"): ["f(T,T)", "fwd(CustomVJPPrimal,True,False)", "bwd(T,C,T)"],
    ("symbolic_zeros", "vmap_grad"): ["fwd(CustomVJPPrimal,True,False)", "bwd(T,C,C)"],
    ("symbolic_zeros", "grad_grad"): ["fwd(CustomVJPPrimal,True,False)", "bwd(T,C,C)"],
    ("symbolic_zeros", "jvp_jit"): ["f(T,T)", "fwd(CustomVJPPrimal,True,False)", NO_JVP],
    ("symbolic_zeros", "jit_jvp"): ["fwd(CustomVJPPrimal,True,False)", NO_JVP],
    ("symbolic_zeros", "jvp_vmap"): ["fwd(CustomVJPPrimal,True,False)", NO_JVP],
    ("symbolic_zeros", "vjp_vmap"): ["fwd(CustomVJPPrimal,True,False)", "bwd(T,C,T)"],
    ("symbolic_zeros", "jacfwd"): ["fwd(CustomVJPPrimal,True,False)", NO_JVP],
    ("symbolic_zeros", "jacrev"): ["fwd(CustomVJPPrimal,True,False)", "bwd(C,C,T)"],
    ("symbolic_zeros", "hessian"): ["fwd(CustomVJPPrimal,True,False)", "bwd(T,C,T)"],
    ("symbolic_zeros", "checkpoint_grad"): ["f(T,T)", "fwd(CustomVJPPrimal,True,False)",
        "bwd(T,C,T)"],
    ("symbolic_zeros", "jit_vmap"): ["f(T,T)"],
    ("symbolic_zeros", "vmap_jit"): ["f(T,T)"],
    ("symbolic_zeros", "scan"): ["f(T,T)"],
    ("symbolic_zeros", "cond"): ["f(T,T)"],
    ("symbolic_zeros", "value_and_grad"): ["fwd(CustomVJPPrimal,True,False)", "bwd(C,C,C)"],
    ("pure_callback_expand_dims", "call"): ["cb(())"],
    ("pure_callback_expand_dims", "jit"): ["cb(())"],
    ("pure_callback_expand_dims", "jit_twice"): ["cb(())", "cb(())"],
    ("pure_callback_expand_dims", "vmap"): ["cb((2,))"],
    ("pure_callback_expand_dims", "jvp"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "grad"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "grad_neg"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "vjp"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "linearize"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "jit_grad"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "grad_jit"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "vmap_grad"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "grad_grad"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "jvp_jit"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "jit_jvp"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "jvp_vmap"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "vjp_vmap"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "jacfwd"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "jacrev"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "hessian"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "checkpoint_grad"): [PURE_NO_JVP],
    ("pure_callback_expand_dims", "jit_vmap"): ["cb((2,))"],
    ("pure_callback_expand_dims", "vmap_jit"): ["cb((2,))"],
    ("pure_callback_expand_dims", "scan"): ["cb(())", "cb(())"],
    ("pure_callback_expand_dims", "cond"): ["cb(())"],
    ("pure_callback_expand_dims", "value_and_grad"): [PURE_NO_JVP],
    ("io_callback_ordered", "call"): ["io(C)", "print after 0.5"],
    ("io_callback_ordered", "jit"): ["io(C)", "print after 0.5"],
    ("io_callback_ordered", "jit_twice"): ["io(C)", "print after 0.5", "io(C)", "print after 0.5"],
    ("io_callback_ordered", "vmap"): ["ValueError: Cannot `vmap` ordered IO callback."],
    ("io_callback_ordered", "jvp"): [IO_NO_JVP],
    ("io_callback_ordered", "grad"): [IO_NO_JVP],
    ("io_callback_ordered", "grad_neg"): [IO_NO_JVP],
    ("io_callback_ordered", "vjp"): [IO_NO_JVP],
    ("io_callback_ordered", "linearize"): [IO_NO_JVP],
    ("io_callback_ordered", "jit_grad"): [IO_NO_JVP],
    ("io_callback_ordered", "grad_jit"): [IO_NO_JVP],
    ("io_callback_ordered", "vmap_grad"): [IO_NO_JVP],
    ("io_callback_ordered", "grad_grad"): [IO_NO_JVP],
    ("io_callback_ordered", "jvp_jit"): [IO_NO_JVP],
    ("io_callback_ordered", "jit_jvp"): [IO_NO_JVP],
    ("io_callback_ordered", "jvp_vmap"): ["ValueError: Cannot `vmap` ordered IO callback."],
    ("io_callback_ordered", "vjp_vmap"): ["ValueError: Cannot `vmap` ordered IO callback."],
    ("io_callback_ordered", "jacfwd"): [IO_NO_JVP],
    ("io_callback_ordered", "jacrev"): [IO_NO_JVP],
    ("io_callback_ordered", "hessian"): [IO_NO_JVP],
    ("io_callback_ordered", "checkpoint_grad"): [IO_NO_JVP],
    ("io_callback_ordered", "jit_vmap"): ["ValueError: Cannot `vmap` ordered IO callback."],
    ("io_callback_ordered", "vmap_jit"): ["ValueError: Cannot `vmap` ordered IO callback."],
    ("io_callback_ordered", "scan"): ["io(C)", "print after 0.5", "io(C)", "print after -1.0"],
    ("io_callback_ordered", "cond"): ["io(C)", "print after 0.5"],
    ("io_callback_ordered", "value_and_grad"): [IO_NO_JVP],
}

WEAK_TYPES = {
    'holomorphic_grad_py_complex': ['complex64[] weak'],
    'holomorphic_grad_complex64': ['complex64[]'],
    'holomorphic_grad_mul': ['complex64[] weak'],
    'grad_of_real_part': ['complex64[]'],
    'grad_of_real': ['complex64[]'],
    'grad_of_imag': ['complex64[]'],
    'grad_of_abs': ['complex64[]'],
    'vjp_complex': ['complex64[] weak'],
    'vjp_of_real': ['complex64[]'],
    'jvp_complex': ['complex64[] weak', 'complex64[] weak'],
    'jacrev_holomorphic': ['complex64[] weak'],
    'jacfwd_holomorphic': ['complex64[] weak'],
    'jacrev_weak_in': ['float32[2] weak'],
    'jacfwd_weak_in': ['float32[2]'],
    'hessian_weak_in': ['float32[] weak'],
    'custom_jvp_call': ['float32[] weak'],
    'custom_jvp_jit': ['float32[] weak'],
    'custom_jvp_jvp': ['float32[] weak', 'float32[] weak'],
    'custom_jvp_grad': ['float32[] weak'],
    'custom_jvp_vmap': ['float32[2]'],
    'custom_jvp_strong_rule_grad': ['float32[] weak'],
    'custom_jvp_strong_rule_jvp': ['float32[] weak', 'float32[]'],
    'custom_jvp_strong_rule_jit_grad': ['float32[] weak'],
    'custom_jvp_holomorphic': ['complex64[] weak'],
    'custom_vjp_call': ['float32[] weak'],
    'custom_vjp_grad': ['float32[] weak'],
    'custom_vjp_vjp': ['float32[] weak'],
    'custom_vjp_strong_bwd_grad': ['float32[]'],
    'custom_vjp_strong_bwd_jit_grad': ['float32[]'],
    'custom_vjp_strong_bwd_grad_jit': ['float32[]'],
    'custom_vjp_vmap_grad': ['float32[2]'],
    'custom_vjp_holomorphic': ['complex64[] weak'],
}

ROWS = [(p, t) for p in PROGRAMS for t in TRANSFORMS]

# Rows where XLA schedules independent unordered debug effects of one jitted computation in its
# own order (JAX promises no order between them): compared as multisets of events.
UNORDERED = {
    ("debug_callback", "scan"), ("debug_print", "scan"),
    ("debug_in_jvp_rule", "jvp_jit"), ("debug_in_jvp_rule", "jit_jvp"),
}


def _same_events(row, got, want):
  return sorted(got) == sorted(want) if row in UNORDERED else got == want


def test_table_covers_every_row():
  assert sorted(EXPECTED) == sorted(ROWS)
  assert sorted(WEAK_TYPES) == sorted(weak_type_cases(jaxlite))


@pytest.mark.parametrize("program,transform", ROWS, ids=[f"{p}-{t}" for p, t in ROWS])
def test_when_python_runs(program, transform):
  got = run_row(jaxlite, program, transform)
  assert _same_events((program, transform), got, EXPECTED[program, transform]), got


@pytest.mark.parametrize("program,transform", ROWS, ids=[f"{p}-{t}" for p, t in ROWS])
def test_when_python_runs_matches_jax(program, transform):
  jax = oracle()
  got, want = run_row(jaxlite, program, transform), run_row(jax, program, transform)
  assert _same_events((program, transform), got, want), (got, want)


@pytest.mark.parametrize("name", list(WEAK_TYPES))
def test_weak_types(name):
  assert weak_type_row(jaxlite, name) == WEAK_TYPES[name]


@pytest.mark.parametrize("name", list(WEAK_TYPES))
def test_weak_types_match_jax(name):
  jax = oracle()
  assert weak_type_row(jaxlite, name) == weak_type_row(jax, name)


def test_jvp_of_custom_vjp_raises_jax_type_error_after_fwd():
  """JAX runs fwd (with the concrete primal), then refuses forward mode with a TypeError."""
  seen = []

  @jaxlite.custom_vjp
  def f(x):
    seen.append("f")
    return x * 3.

  def fwd(x):
    seen.append(("fwd", "T" if isinstance(x, jaxlite.core.Tracer) else float(x)))
    return x * 3., None
  f.defvjp(fwd, lambda r, g: (3. * g,))
  msg = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."
  with pytest.raises(TypeError, match=re.escape(msg)):
    jaxlite.jvp(f, (2.,), (1.,))
  assert seen == [("fwd", 2.0)]
  with pytest.raises(TypeError, match=re.escape(msg)):
    jaxlite.jit(lambda x: jaxlite.jvp(f, (x,), (1.,)))(2.)
  assert seen == [("fwd", 2.0), ("fwd", "T")]
  # reverse mode is fine, and runs fwd then bwd only: never the primal function
  seen.clear()
  assert float(jaxlite.grad(f)(2.)) == 3.0 and seen == [("fwd", 2.0)]


def test_rules_see_values_under_grad():
  """Python control flow on the primal works in custom rules under grad/jvp/vjp (eager)."""
  @jaxlite.custom_jvp
  def relu(x):
    return jnp_.maximum(x, 0.)

  @relu.defjvp
  def relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return relu(x), (t if x > 0 else 0. * t)

  for x, want in [(2., 1.), (-2., 0.)]:
    assert float(jaxlite.grad(relu)(x)) == want
    assert float(jaxlite.jvp(relu, (x,), (1.,))[1]) == want
    assert float(jaxlite.vjp(relu, x)[1](1.)[0]) == want


def test_callback_outputs_are_canonicalized_like_jax():
  """A float64 result stands for float32 without x64 (JAX canonicalizes before its checks)."""
  f = lambda x: jaxlite.pure_callback(lambda v: np.cos(np.float64(v)),
                                      jaxlite.ShapeDtypeStruct((), np.float32), x)
  for g in (f, jaxlite.jit(f)):
    out = g(0.)
    assert out.dtype == np.float32 and float(out) == 1.0
  with pytest.raises(Exception, match="Incorrect output dtype"):
    jaxlite.pure_callback(lambda v: np.int32(1), jaxlite.ShapeDtypeStruct((), np.float32), 0.)


def test_tracers_as_nondiff_arguments():
  """custom_jvp: a traced nondiff argument is not differentiated through (stop_gradient);
  custom_vjp: it is refused with JAX's UnexpectedTracerError."""
  @functools.partial(jaxlite.custom_jvp, nondiff_argnums=(1,))
  def g(x, n):
    return x * n

  g.defjvp(lambda n, p, t: (p[0] * n, t[0] * n))
  assert float(jaxlite.grad(lambda y: g(y, y))(3.)) == 3.0  # d/dx only: n = y = 3
  assert "stop_gradient" in str(jaxlite.make_jaxpr(lambda y: g(y, y))(3.))

  @functools.partial(jaxlite.custom_vjp, nondiff_argnums=(1,))
  def h(x, n):
    return x * n

  h.defvjp(lambda x, n: (x * n, None), lambda n, r, ct: (ct * n,))
  assert float(jaxlite.grad(lambda y: h(y, 2.))(3.)) == 2.0
  with pytest.raises(jaxlite.errors.UnexpectedTracerError,
                     match="passed as an argument to a custom_vjp function in a position "
                           "indicated by nondiff_argnums"):
    jaxlite.grad(lambda y: h(y, y))(3.)
