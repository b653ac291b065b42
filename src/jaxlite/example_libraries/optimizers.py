"""`jax.example_libraries.optimizers`: first-order optimizers as (init, update, get_params) triples.

Each optimizer is written for one array; `optimizer` lifts it to pytrees of parameters, keeping
the flattened per-leaf states in an `OptimizerState` pytree. Step sizes may be schedules.
"""
from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

import jaxlite.numpy as jnp
from jaxlite import tree, tree_util

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Array = Any
Params = Any
State = Any
Updates = Params
InitFn = Callable[[Params], OptimizerState]
Step = int
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


# JAX's optimizers module shadows map/zip with length-checked versions; programs import them.
def safe_map(f, *args):
  """map that insists every argument has the same length."""
  args = [list(a) for a in args]
  for i, a in enumerate(args[1:], 1):
    if len(a) != len(args[0]):
      raise ValueError(f"safe_map: length mismatch: argument 0 has length {len(args[0])}, "
                       f"argument {i} has length {len(a)}")
  return list(map_(f, *args))


def safe_zip(*args):
  """zip that insists every argument has the same length."""
  args = [list(a) for a in args]
  for i, a in enumerate(args[1:], 1):
    if len(a) != len(args[0]):
      raise ValueError(f"safe_zip: length mismatch: argument 0 has length {len(args[0])}, "
                       f"argument {i} has length {len(a)}")
  return list(zip_(*args))


def unzip2(pairs):
  """Two lists from an iterable of pairs (tuples, as JAX returns)."""
  firsts, seconds = [], []
  for a, b in pairs:
    firsts.append(a)
    seconds.append(b)
  return tuple(firsts), tuple(seconds)


map_, zip_ = map, zip
map, zip = safe_map, safe_zip   # noqa: A001 - as JAX's module does
_unzip2 = unzip2


def optimizer(opt_maker: Callable[..., Any]) -> Callable[..., Optimizer]:
  """Lifts a maker of single-array (init, update, get_params) to one over pytrees."""
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, treedef = tree.flatten(x0_tree)
      states_flat, subtrees = _unzip2(tree.flatten(init(x0)) for x0 in x0_flat)
      return OptimizerState(states_flat, treedef, subtrees)

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, treedef, subtrees = opt_state
      grad_flat, treedef2 = tree.flatten(grad_tree)
      if treedef2 != treedef:
        raise TypeError(
            "optimizer update function was passed a gradient tree that did not match the "
            f"parameter tree structure with which it was initialized: parameter tree {treedef} "
            f"and grad tree {treedef2}.")
      states = [tree.unflatten(s, f) for s, f in zip(subtrees, states_flat)]
      new_states = [update(i, g, s) for g, s in zip(grad_flat, states)]
      new_flat, subtrees2 = _unzip2(tree.flatten(s) for s in new_states)
      for before, after in zip(subtrees, subtrees2):
        if after != before:
          raise TypeError(
              "optimizer update function produced an output structure that did not match its "
              f"input structure: input {before} and output {after}.")
      return OptimizerState(new_flat, treedef, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, treedef, subtrees = opt_state
      params = [get_params(tree.unflatten(s, f)) for s, f in zip(subtrees, states_flat)]
      return tree.unflatten(treedef, params)

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


def _first(state):
  return state[0]


# --- optimizers (per array) --------------------------------------------------------------------


def _zeros_init(n_slots: int):
  """The init of an optimizer whose state is x0 plus `n_slots` zero buffers shaped like it."""
  def init(x0):
    return (x0,) + tuple(jnp.zeros_like(x0) for _ in range(n_slots))
  return init

@optimizer
def sgd(step_size):
  """Stochastic gradient descent: x - step_size(i) * g."""
  step_size = make_schedule(step_size)

  def update(i, g, x):
    return x - step_size(i) * g
  return Optimizer(lambda x0: x0, update, lambda x: x)


@optimizer
def momentum(step_size: Schedule, mass: float):
  """Heavy-ball momentum: v = mass * v + g; x -= step_size(i) * v."""
  step_size = make_schedule(step_size)

  init = _zeros_init(1)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity
  return init, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
  """Nesterov momentum: v = mass * v + g; x -= step_size(i) * (mass * v + g)."""
  step_size = make_schedule(step_size)

  init = _zeros_init(1)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity
  return init, update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad with momentum on the normalised gradient."""
  step_size = make_schedule(step_size)

  init = _zeros_init(2)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq += jnp.square(g)
    g_sq_inv_sqrt = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
    m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
    return x - step_size(i) * m, g_sq, m
  return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """RMSProp: divide by the root of a running mean of squared gradients."""
  step_size = make_schedule(step_size)

  init = _zeros_init(1)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
  return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp whose normalised steps accumulate in a momentum term."""
  step_size = make_schedule(step_size)

  init = _zeros_init(2)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom
  return init, update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam: bias-corrected first and second moment estimates."""
  step_size = make_schedule(step_size)

  init = _zeros_init(2)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
  return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adamax: Adam with an exponentially weighted infinity norm in place of v."""
  step_size = make_schedule(step_size)

  init = _zeros_init(2)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
    return x, m, u
  return init, update, _first


def _splice(seq, i, x):
  lst = list(seq)
  lst[i:i + 1] = x
  return lst


@optimizer
def sm3(step_size, momentum=0.9):
  """SM3: memory-efficient adaptive steps from one accumulator per axis."""
  step_size = make_schedule(step_size)

  def broadcast_into(ndim, x, axis):
    return x[tuple(_splice([None] * ndim, axis, [slice(None)]))]

  def init(x0):
    x_shape = x0.shape
    x0 = jnp.atleast_1d(x0)
    vs = [jnp.zeros(sz, dtype=x0.dtype) for sz in x0.shape]
    return x0, jnp.zeros_like(x0), vs, x_shape

  def update(i, g, state):
    x, m, vs, x_shape = state
    vs = [broadcast_into(g.ndim, v, ax) for ax, v in enumerate(vs)]
    accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
    accum_inv_sqrt = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
    m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    vs = [accum.max(_splice(range(x.ndim), j, [])) for j in range(x.ndim)]
    return x, m, vs, x_shape

  def get_params(state):
    x, _, _, x_shape = state
    return x.reshape(x_shape)
  return init, update, get_params


# --- learning-rate schedules -------------------------------------------------------------------

def constant(step_size) -> Schedule:
  """The schedule i -> step_size."""
  def schedule(i):
    return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
  """i -> step_size * decay_rate ** (i / decay_steps)."""
  def schedule(i):
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
  """i -> step_size / (1 + decay_rate * i / decay_steps), floored per decay_steps if staircase."""
  if staircase:
    def schedule(i):
      return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  else:
    def schedule(i):
      return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
  """Decays from step_size to final_step_size over decay_steps as (1 - t) ** power."""
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any):
  """values[k] where k counts the boundaries strictly below i."""
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if not boundaries.shape[0] == values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")

  def schedule(i):
    return values[jnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
  """A schedule from a callable (kept) or a scalar (constant); anything else is a TypeError."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# --- utilities ---------------------------------------------------------------------------------

def l2_norm(tree_):
  """The L2 norm of all leaves of a pytree taken together."""
  leaves = tree.leaves(tree_)
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
  """Scales a gradient pytree down so its l2_norm is at most max_norm."""
  norm = l2_norm(grad_tree)
  return tree.map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
  """Marks where a leaf's optimizer subtree starts in an unpacked state."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):
    yield self.subtree


def unpack_optimizer_state(opt_state):
  """An OptimizerState as a pytree of JoinPoints (picklable, as JAX's is)."""
  states_flat, tree_def, subtree_defs = opt_state
  subtrees = [tree.unflatten(d, s) for d, s in zip(subtree_defs, states_flat)]
  return tree.unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
  """The inverse of unpack_optimizer_state."""
  sentinels, tree_def = tree.flatten(marked_pytree)
  if not all(isinstance(s, JoinPoint) for s in sentinels):
    raise AssertionError("pack_optimizer_state expects a pytree whose leaves are all "
                         f"JoinPoints, got {sorted({type(s).__name__ for s in sentinels})}")
  states_flat, subtree_defs = _unzip2(tree.flatten(s.subtree) for s in sentinels)
  return OptimizerState(states_flat, tree_def, subtree_defs)
