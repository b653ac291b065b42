"""The rest of `jax`'s top-level functions: linear_transpose, custom_gradient, closure_convert,
effects_barrier, live_arrays, print_environment_info, host ids and the `Device` base class.

Each is small and built from jaxlite's own transformations (tracing, backward_pass, custom_vjp).
"""
from __future__ import annotations

import abc
import gc
import platform
import sys

import numpy as np

from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.compat.core_adapters import eval_jaxpr as _eval_jaxpr
from jaxlite._src.interpreters import ad
from jaxlite._src.transforms.call_primitives import as_traceable_arg
from jaxlite._src.interpreters import partial_eval as pe


# --- linear_transpose ------------------------------------------------------------------------

def _abstractify(x):
  from jaxlite._src.transforms.api import _abstractify as abstractify
  return abstractify(x)


def linear_transpose(fun, *primals, reduce_axes=()):
  """The transpose of the linear function `fun` at inputs shaped like `primals`.

  `fun` is traced once; its transpose runs the backward pass over that jaxpr, so a nonlinear
  operation on an input raises (no transpose rule), as in JAX.
  """
  del reduce_axes
  flat_primals, in_tree = tree_util.tree_flatten(primals)
  in_avals = [_abstractify(p) for p in flat_primals]
  out_tree_box = []

  def flat_fun(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    flat, out_tree = tree_util.tree_flatten(out)
    out_tree_box.append(out_tree)
    return flat

  closed = pe.trace_to_jaxpr(flat_fun, in_avals)
  out_tree, out_avals = out_tree_box[0], closed.out_avals
  all_dtypes = [a.dtype for a in in_avals + out_avals]
  if not (all(dtypes.issubdtype(d, np.inexact) for d in all_dtypes)
          or all(dtypes.issubdtype(d, np.integer) for d in all_dtypes)):
    raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], "
                    f"and integer -> integer functions, but got {in_avals} -> {out_avals}.")

  def transposed_fun(out_cotangent):
    flat_ct, ct_tree = tree_util.tree_flatten(out_cotangent)
    if ct_tree != out_tree:
      raise TypeError("cotangent tree does not match function output, "
                      f"expected {out_tree} but got {ct_tree}")
    flat_ct = [as_traceable_arg(c) for c in flat_ct]
    if not all(core.typematch(a, core.get_aval(c)) for a, c in zip(out_avals, flat_ct)):
      raise TypeError("cotangent type does not match function output, "
                      f"expected {tuple(out_avals)} but got {flat_ct}")
    undefined = [ad.UndefinedPrimal(a) for a in in_avals]
    cts = ad.backward_pass(closed.jaxpr, closed.consts, undefined, flat_ct)
    cts = [ad.zeros_like_aval(a) if ct is None or type(ct) is ad.Zero else ct
           for ct, a in zip(cts, in_avals)]
    return tree_util.tree_unflatten(in_tree, cts)

  return transposed_fun


# --- custom_gradient ----------------------------------------------------------------------------

class _Residuals:
  """The traced gradient rule of `custom_gradient`: its consts are the residual arrays."""

  def __init__(self, jaxpr, in_tree, out_tree, consts):
    self.jaxpr, self.in_tree, self.out_tree, self.consts = jaxpr, in_tree, out_tree, consts


tree_util.register_pytree_node(
    _Residuals, lambda r: (r.consts, (r.jaxpr, r.in_tree, r.out_tree)),
    lambda aux, consts: _Residuals(aux[0], aux[1], aux[2], list(consts)))


def custom_gradient(fun):
  """`fun(*args) -> (value, vjp)` becomes a function whose gradient is given by `vjp`."""
  from jaxlite._src.transforms.custom_derivatives import custom_vjp

  @custom_vjp
  def wrapped_fun(*args, **kwargs):
    ans, _ = fun(*args, **kwargs)
    return ans

  def fwd(*args, **kwargs):
    ans, rule = fun(*args, **kwargs)
    ans_flat, out_tree = tree_util.tree_flatten((ans,))
    box = []

    def flat_rule(*cts_flat):
      (ct,) = tree_util.tree_unflatten(out_tree, cts_flat)
      flat, in_tree = tree_util.tree_flatten(rule(ct))
      box.append(in_tree)
      return flat
    avals = [ad.tangent_aval(core.get_aval(x)) for x in ans_flat]
    closed = pe.trace_to_jaxpr(flat_rule, avals)
    return ans, _Residuals(closed.jaxpr, box[0], out_tree, closed.consts)

  def bwd(res, cts):
    cts_flat, out_tree = tree_util.tree_flatten((cts,))
    if out_tree != res.out_tree:
      raise TypeError(f"{res.out_tree}\n!=\n{out_tree}")
    cts_out = tree_util.tree_unflatten(res.in_tree,
                                       _eval_jaxpr(res.jaxpr, res.consts, *cts_flat))
    return (cts_out,) if tree_util.treedef_is_leaf(res.in_tree) else cts_out

  wrapped_fun.defvjp(fwd, bwd)
  return wrapped_fun


# --- closure_convert ----------------------------------------------------------------------------

def _maybe_perturbed(x) -> bool:
  """Whether a closed-over value may carry a tangent: tracers of float type (JAX's heuristic)."""
  if not isinstance(x, core.Tracer):
    return False
  if isinstance(x, pe.DynamicJaxprTracer):
    return ad.tangent_dtype(x.aval.dtype) != dtypes.float0
  return True


def closure_convert(fun, *example_args):
  """(converted, consts): `converted(*args, *consts)` computes `fun(*args)` with the closed-over
  values that may be differentiated hoisted out as explicit arguments."""
  if not callable(fun):
    raise TypeError(f"closure_convert: the first argument must be callable, got {fun!r}")
  flat_args, in_tree = tree_util.tree_flatten(example_args)
  in_avals = [_abstractify(a) for a in flat_args]
  box = []

  def flat_fun(*xs):
    flat, out_tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, xs)))
    box.append(out_tree)
    return flat
  closed = pe.trace_to_jaxpr(flat_fun, in_avals)
  out_tree = box[0]
  perturbed = [_maybe_perturbed(c) for c in closed.consts]
  closure_consts = [c for c, p in zip(closed.consts, perturbed) if not p]
  hoisted = [c for c, p in zip(closed.consts, perturbed) if p]

  def converted_fun(*args_hconsts):
    n = len(args_hconsts) - len(hoisted)
    args, hconsts = args_hconsts[:n], list(args_hconsts[n:])
    it_c, it_h = iter(closure_consts), iter(hconsts)
    consts = [next(it_h) if p else next(it_c) for p in perturbed]
    all_args, in_tree2 = tree_util.tree_flatten(tuple(args))
    if in_tree != in_tree2:
      raise TypeError(f"The inputs to the closure produced by closure_convert must have the "
                      f"same Pytree structure as the example arguments passed when "
                      f"closure_convert was called. Expected {in_tree}, but got {in_tree2}")
    return tree_util.tree_unflatten(out_tree, _eval_jaxpr(closed.jaxpr, consts, *all_args))

  return converted_fun, hoisted


# --- runtime ------------------------------------------------------------------------------------

def effects_barrier() -> None:
  """Waits until every effect issued so far has run: jaxlite runs effects synchronously (a
  callback's impl runs before the call that issues it returns), so there is nothing to wait for."""
  return None


def copy_to_host_async(x):
  """Starts the host copy of every Array leaf of `x` (calling its `copy_to_host_async`; other
  leaves are left alone) and returns `x`. jaxlite's arrays live in host memory already."""
  for leaf in tree_util.tree_leaves(x):
    copy = getattr(leaf, "copy_to_host_async", None)
    if copy is not None:
      copy()
  return x


def live_arrays(platform: str | None = None) -> list:
  """Every live concrete Array (found by the garbage collector: nothing tracks arrays on the
  hot path). `platform` other than "cpu" gives an empty list."""
  if platform not in (None, "cpu"):
    return []
  at = core.array_type
  return [o for o in gc.get_objects() if type(o) is at]


def host_count(backend=None) -> int:
  from jaxlite._src.base import devices
  return devices.process_count()


def host_id(backend=None) -> int:
  from jaxlite._src.base import devices
  return devices.process_index()


def host_ids(backend=None) -> list:
  return list(range(host_count(backend)))


def process_indices(backend=None) -> list:
  """The indices of all processes (one per host): [0] for a single process."""
  return list(range(host_count(backend)))


def print_environment_info(return_string: bool = False):
  """The versions and devices of this installation, printed (or returned)."""
  import jaxlite
  from jaxlite._src.base import devices
  from jaxlite.version import __version__ as jax_api_version
  lines = [f"jax:    {jax_api_version} (jaxlite {jaxlite.__version__})",
           "jaxlib: none (jaxlite runs on NumPy)",
           f"numpy:  {np.__version__}",
           f"python: {sys.version}",
           f"device info: cpu-{devices.device_count()}, {devices.local_device_count()} local "
           "devices",
           f"process_count: {devices.process_count()}",
           f"platform: {platform.uname()}"]
  text = "\n".join(lines) + "\n"
  if return_string:
    return text
  print(text)
  return None


class Device(abc.ABC):
  """`jax.Device`: the base class of devices (jaxlite's device classes are registered)."""


def _register_devices():
  from jaxlite._src.base import devices
  Device.register(devices.Device)


_register_devices()
