"""The jit machinery under `jax.jit` (PjitFunction, internal_jit, the trace caches, AOT stages):
trace once per abstract signature, stage as a `jit` eqn, run the backend's executable. lax, numpy
and the other library modules import it without importing the API layer (`jit.py`).

The `jit` primitive (call_primitives.py) holds a ClosedJaxpr. Under the eval trace it runs that
jaxpr's executable; under any other trace it is recorded or transformed like any primitive.
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import dtypes
from jaxlite._src.base import fp_quiet
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.compat import traceback_util
from jaxlite._src.base import tree_util
from jaxlite._src.base import instrumentation
from jaxlite._src.sharding import rules as sharding_rules
# re-exported for the API modules
from jaxlite._src.transforms.call_primitives import (  # noqa: F401
    _PY_SCALARS, _check_output, as_traceable_arg, fun_name, fun_src_info, jit_p, jit_params)
from jaxlite._src.compiler import backend
from jaxlite._src.base.config import config
from jaxlite._src.base.dtypes import check_python_int
from jaxlite._src.interpreters import batching
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.transforms.jit_argnums import as_tuple, resolve_argnums
from jaxlite._src.transforms.stage_info import (ArgInfo, CompiledInfo, ShapeDtypeStruct, StageInfo,
                                                abstract_type_sharding)
from jaxlite._src.state.types import AbstractRef, Ref  # mutable refs are jit arguments too

# --- argument handling -------------------------------------------------------------------------

_MISS = object()


def _has_hi_leaf(args, kwargs) -> bool:
  """Whether a leaf of the arguments is a registered hi value (compat/hijax.py)."""
  hi = core.hitype_avals
  return any(type(x) in hi for x in tree_util.tree_leaves((args, kwargs)))


# Dtypes a NumPy argument keeps whatever jax_enable_x64 says: the eager fast path passes such
# arrays (and scalars) to the executable as they are, as `numpy_value` does.
_FAST_NUMPY_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.float16,
    np.float32, np.complex64))
_FAST_NUMPY_SCALARS = frozenset(d.type for d in _FAST_NUMPY_DTYPES)


def _fast_leaf(a, values: list, arrays: list):
  """The signature of one argument leaf on the eager fast path (its value appended to `values`,
  an Array also to `arrays`), or False where the leaf needs the general path."""
  t = type(a)
  if t is core.array_type:
    v = a._value
    arrays.append(a)
    values.append(v)
    return (v.shape, v.dtype, a.weak_type)
  if (t is np.ndarray or t in _FAST_NUMPY_SCALARS) and a.dtype in _FAST_NUMPY_DTYPES:
    values.append(a)  # as `numpy_value` passes it
    return (a.shape, a.dtype, False)
  return False


def leaf_signature(x):
  """The part of a leaf that keys the trace cache: shape, dtype and weak type, and the aval's
  sharding when it has one. Placement is not part of it: a plain array's aval names no device
  (as in JAX, a function is traced once for every device); `_committed_device` places results.
  Dispatch code: reads an Array's buffer field directly (see array.py)."""
  t = type(x)
  if t is core.array_type:
    v = x._value
    d = x._device  # None for most Arrays: the type-name test runs only for placed ones
    if d is not None and type(d).__name__ == "NamedSharding":
      # On Explicit mesh axes the sharding is part of the type: it keys the trace (P('x') and
      # P(None, 'x') arguments trace to different programs with different output types).
      sharding = core.get_aval(x).sharding
      if sharding is not None:
        return (v.shape, v.dtype, x.weak_type, sharding)
    return (v.shape, v.dtype, x.weak_type)
  if t in _PY_SCALARS:
    # Same key as a weak 0-d array of the default dtype: both trace to the same aval.
    return ((), dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x)), t is not bool)
  aval = core.get_aval(x)
  if type(aval) is AbstractRef:
    return aval  # a jax.ref.Ref: its AbstractRef keys the cache (never an array's key)
  vma = getattr(aval, "vma", None)
  if vma:  # a tracer of a shard_map body: the mesh axes it varies over are in its type (the
    # trace inserts pvary casts by them), as JAX keys its traces on the full aval
    return (aval.shape, aval.dtype, aval.weak_type, aval.sharding, vma)
  if aval.sharding is not None:
    return (aval.shape, aval.dtype, aval.weak_type, aval.sharding)
  return (aval.shape, aval.dtype, aval.weak_type)


def numpy_value(x):
  """The NumPy value an executable receives for a flat argument."""
  t = type(x)
  if t is core.array_type:
    return x._value
  if t in _PY_SCALARS:
    dt = dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x))
    if t is int:
      check_python_int(x, dt)
    return np.asarray(x, dt)
  if isinstance(x, np.ndarray) or isinstance(x, np.generic):
    canon = dtypes.canonicalize_dtype(x.dtype)
    return x if canon == x.dtype else np.asarray(x, canon)
  if isinstance(x, core.Tracer):
    from jaxlite._src.base import errors
    raise errors.unexpected_tracer_error(x)
  if isinstance(x, core.Array):  # other concrete arrays (typed PRNG keys) hold `_value` too
    return x._value
  if type(x) is Ref:  # a jax.ref.Ref: the compiled code's kernels mutate it in place
    return x
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def _check_leaves(flat, fun, in_tree, path_prefix=None):
  for i, x in enumerate(flat):
    if not core.valid_jaxtype(x):
      paths = tree_util.tree_flatten_with_path(tree_util.tree_unflatten(in_tree, flat))[0]
      path = _arg_path_str(paths[i][0], fun)
      raise TypeError(
          f"Error interpreting argument to {fun} as an abstract array. The problematic value "
          f"is of type {type(x)} and was passed to the function at path {path}.\n"
          "This typically means that a jit-wrapped function was called with a non-array "
          "argument, and this argument was not marked as static using the static_argnums or "
          "static_argnames parameters of jax.jit.")


def _arg_path_str(keypath, fun):
  # keypath is ((args, kwargs) index, arg index, rest...): name the argument like JAX.
  names = _arg_names(fun)
  top, rest = keypath[0], keypath[1:]
  if getattr(top, "idx", None) == 0 and rest:
    idx = rest[0].idx
    name = names[idx] if idx < len(names) else f"args[{idx}]"
    return name + tree_util.keystr(rest[1:])
  if rest:
    return tree_util.keystr(rest[:1]).strip("[]'") + tree_util.keystr(rest[1:])
  return tree_util.keystr(keypath)


# Argument names per function, held weakly: a strong cache (an lru_cache keyed by the function)
# would keep every traced function, and through it its trace cache, alive (issue 17).
_arg_names_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _arg_names_uncached(fun):
  try:
    sig = inspect.signature(fun)
  except (TypeError, ValueError):
    return ()
  return tuple(p.name for p in sig.parameters.values()
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _arg_names(fun):
  try:
    names = _arg_names_memo.get(fun)
  except TypeError:  # not weak-referenceable (or unhashable): computed each time
    return _arg_names_uncached(fun)
  if names is None:
    names = _arg_names_memo[fun] = _arg_names_uncached(fun)
  return names


# --- the jit wrapper ---------------------------------------------------------------------------

# Whether per-wrapper fast runners may call executables directly; off while instrumentation
# wraps `_CacheEntry.run` (debug_nans, timing, no_execution), which must see every call.
fast_runners_enabled = True


def set_fast_runners(enabled: bool) -> None:
  global fast_runners_enabled
  fast_runners_enabled = enabled
  for w in list(_live_wrappers):
    w._fast_cache.clear()


class _CacheEntry:
  __slots__ = ("closed", "out_tree", "lifted", "executable", "out_avals", "donation", "refs")

  def __init__(self, closed, out_tree, lifted):
    self.closed = closed
    self.out_tree = out_tree
    self.lifted = lifted
    self.executable = None
    self.out_avals = closed.out_avals
    self.donation = None  # donation.Plan per donation vector, made on the first donating call
    # (flat positions of Ref arguments, Refs the function closes over), None when neither:
    # every call checks that no Ref is passed twice nor both passed and closed over
    self.refs = None

  def compiled(self, on=None):
    """The executable on backend `on`: by default the one installed when it was first built
    (kept by the entry); another backend's is cached on the jaxpr (`compile_jaxpr`)."""
    if on is not None and on is not backend.installed():
      return backend.compile_jaxpr(self.closed, on)
    exe = self.executable
    if exe is None:
      exe = self.executable = backend.compile_program(self.closed)
    return exe

  def run(self, values, on=None):
    """Runs the executable of backend `on` (see `compiled`) on that backend's buffers; Arrays
    in the output pytree."""
    exe = self.executable if on is None else None
    token = fp_quiet.quiet()  # NumPy's floating-point warnings: XLA's kernels never warn
    try:
      outs = (exe or self.compiled(on))(*values)
    finally:
      fp_quiet.loud(token)
    make = core.make_array
    return self.out_tree.unflatten([make(o, a) for o, a in zip(outs, self.out_avals)])

  def fast_runner(self):
    """`run` for the eager all-Array call path. A function returning one Array of a NumPy
    dtype gets a runner without the pytree and aval machinery (what `run` computes, in ~1 µs
    less); anything else, or instrumentation on, gets `run` itself."""
    avals = self.out_avals
    if not fast_runners_enabled or not tree_util.treedef_is_leaf(self.out_tree) \
        or len(avals) != 1 or not isinstance(avals[0].dtype, np.dtype) \
        or avals[0].dtype == dtypes.float0:
      return self.run
    exe = self.compiled()
    aval = avals[0]
    dt, weak = aval.dtype, aval.weak_type
    # A backend's executable may offer its own one-result runner (XLA's: device buffers in and
    # out, no NumPy error state to set).
    own = getattr(exe, "one_result_runner", None)
    runner = None if own is None else own(dt, weak)
    if runner is not None:
      return runner
    make, from_numpy = core.make_array, core.host_array_from_numpy

    def run_one(values):
      token = fp_quiet.quiet()
      try:
        o = exe(*values)[0]
      finally:
        fp_quiet.loud(token)
      return from_numpy(o, weak) if o.dtype == dt else make(o, aval)
    return run_one


# Trace cache shared by every jit of the same function: same function and avals -> same jaxpr.
# Held weakly by the function, so a jit of a fresh lambda leaves nothing behind once the lambda
# goes; each function's cache is bounded (oldest entry evicted first) so that retracing on ever
# new shapes stays flat too. The bound is `TRACE_CACHE_SIZE` entries per function (4096, like
# JAX's per-function cache; JAXLITE_JIT_CACHE_SIZE overrides it). `clear_caches` empties all.
TRACE_CACHE_SIZE = int(os.environ.get("JAXLITE_JIT_CACHE_SIZE", 4096))
_trace_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# Functions that cannot be weakly referenced (callables with __slots__...): by id, at most this
# many, each entry (function, cache).
_UNWEAKREFABLE_LIMIT = 256
_unweakrefable_caches: dict = {}
# Every live jit wrapper, so that `clear_caches` can empty their per-wrapper fast caches too.
_live_wrappers: "weakref.WeakSet" = weakref.WeakSet()


def _cache_for(fun) -> dict:
  try:
    cache = _trace_caches.get(fun)
    if cache is None:
      cache = _trace_caches[fun] = {}
    return cache
  except TypeError:
    # Held strongly next to its cache, so that its id cannot be reused by another function
    # while the entry lives (the bound keeps that from growing without end).
    held = _unweakrefable_caches.get(id(fun))
    if held is None or held[0] is not fun:
      held = (fun, {})
      bounded_put(_unweakrefable_caches, id(fun), held, _UNWEAKREFABLE_LIMIT)
    return held[1]


def bounded_put(cache: dict, key, value, limit=None):
  """`cache[key] = value`, first evicting the oldest entries past `limit` (insertion order: a
  hit costs nothing extra on the dispatch path, unlike a true LRU's reordering)."""
  limit = TRACE_CACHE_SIZE if limit is None else limit
  while len(cache) >= limit > 0:
    try:
      del cache[next(iter(cache))]
    except (KeyError, RuntimeError, StopIteration):  # another thread evicted it first
      break
  cache[key] = value


def clear_caches():
  """Empties every trace, compile and derived-jaxpr cache (`jax.clear_caches`)."""
  _trace_caches.clear()
  _unweakrefable_caches.clear()
  _arg_names_memo.clear()
  for w in list(_live_wrappers):
    w._cache.clear()
    w._fast_cache.clear()
    w._sharded_cache.clear()
  from jaxlite._src.transforms import cache_miss
  cache_miss.clear()
  import importlib
  backend.clear_backend_caches()
  for module, name in DERIVED_CACHES:
    cache = getattr(importlib.import_module(f"jaxlite._src.{module}"), name)
    (cache.cache_clear if hasattr(cache, "cache_clear") else cache.clear)()


# Caches keyed by jaxprs or functions that other modules keep (all weak or bounded; listed here
# so that `clear_caches` empties them; tests/test_memory.py checks each still exists).
DERIVED_CACHES = (
    ("lax.control_flow.common", "_body_caches"), ("lax.control_flow.common", "_batched_bodies"),
    ("lax.control_flow.common", "_derived_bodies"), ("lax.control_flow.loops", "_wrappers"),
    ("lax.slicing_primitives", "_update_fns"), ("lax.dot", "_layout_plan"),
("interpreters.batching", "_jaxpr_cache"),
    ("interpreters.linearize", "_linearize_cache"), ("interpreters.ad", "_jvp_jaxpr_cache"),
    ("interpreters.ad", "_transpose_cache"), ("transforms.ad_checkpoint", "_remat_split_cached"),
    ("lax.windowed", "_compiled_computations"),
)


class CallSite:
  """What the partitioner (sharding/partition.py, distributed/sharded_jit.py) knows of one jit:
  the function and its name, the static and donated positions, the in/out shardings, and the
  caches it keeps for the jit's sharded calls; its methods give the trace cache entry of a
  call, the dynamic arguments, the committed device and argument names for errors, and the
  backend of a call's arguments. jit builds one per wrapper (`PjitFunction.site`); nothing
  outside this module reads the wrapper's private fields."""
  __slots__ = ("_wrapper", "fun", "name", "static_argnums", "static_argnames",
               "donate_argnums", "donate_argnames", "in_shardings", "out_shardings",
               "simple", "cache", "__weakref__")

  def __init__(self, wrapper):
    self._wrapper = wrapper
    self.fun, self.name = wrapper._fun, wrapper._name
    self.static_argnums, self.static_argnames = wrapper._static_argnums, \
        wrapper._static_argnames
    self.donate_argnums, self.donate_argnames = wrapper._donate_argnums, \
        wrapper._donate_argnames
    self.in_shardings, self.out_shardings = wrapper._in_shardings, wrapper._out_shardings
    self.simple = wrapper._simple  # no static arguments: the call's args are the dynamic ones
    # The partitioner's per-jit caches (programs by specs, call plans, the MPI fast path),
    # emptied with the jit's own by `clear_cache` / `jax.clear_caches`.
    self.cache = wrapper._sharded_cache

  def entry(self, args, kwargs):
    """(trace cache entry, flat dynamic arguments) of a call: traced on a miss."""
    return self._wrapper._get_entry(args, kwargs)

  def dynamic_args(self, args, kwargs) -> tuple:
    """The call's positional arguments that are not static."""
    return args if self.simple else self._wrapper._split_args(args, kwargs)[0]

  def committed_device(self, flat, args, kwargs):
    """Where the call's results live (JAX's incompatible-devices error naming arguments)."""
    return self._wrapper._committed_device(flat, args, kwargs)

  def arg_name(self, keypath) -> str:
    """An argument leaf named as JAX's placement errors name it."""
    return _placement_arg_name(keypath, self.fun)

  def backend(self, flat):
    """The backend the call's flat arguments run on (`backend.backend_for_arguments`)."""
    return backend.backend_for_arguments(flat)


class PjitFunction:
  """The callable `jax.jit(f)` returns."""
  _donates = False  # DonatingPjitFunction: the eager path plans and deletes donated buffers

  def __new__(cls, fun=None, static_argnums=(), static_argnames=(), donate_argnums=(),
              donate_argnames=(), *rest, **options):
    # A jit that donates gets its own call path, so that the others' pays nothing for it.
    if cls is PjitFunction and (as_tuple(donate_argnums) or as_tuple(donate_argnames)):
      cls = DonatingPjitFunction
    return object.__new__(cls)

  def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
               donate_argnames=(), keep_unused=False, inline=False, name=None,
               in_shardings=None, out_shardings=None, **options):
    self._fun = fun
    functools.update_wrapper(self, fun, updated=())
    # f's attributes too, as JAX's functools.wraps (haiku reads them, its `_original_fn`
    # too), except the private ones of a function wrapping another jit (grad(jit(f))): those
    # are that jit's state
    attrs = getattr(fun, "__dict__", {})
    carries_jit_state = "_fun" in attrs
    for k, v in attrs.items():
      if not (carries_jit_state and k.startswith("_")):
        self.__dict__.setdefault(k, v)
    (static_argnums, static_argnames, self._donate_argnums,
     self._donate_argnames) = resolve_argnums(fun, static_argnums, static_argnames,
                                              donate_argnums, donate_argnames)
    self._static_argnums = static_argnums
    self._static_argnames = static_argnames
    self._keep_unused = keep_unused
    self._inline = inline
    self._name = name or fun_name(fun)
    self._cache = _cache_for(fun)
    # Only what changes the trace keys the cache: donation, keep_unused and inline act per call
    # (jit params), so jit(f, donate_argnums=0) reuses jit(f)'s trace, as in JAX.
    self._options = (static_argnums, static_argnames)
    self._simple = not static_argnums and not static_argnames
    # The all-Array fast path (`_call_arrays_fast`): no statics, no donation to plan.
    self._fast_path = self._simple and not self._donates
    # jnp's own wrappers run op by op when eager: same result, no compile on the hot path.
    self._eager_direct = False
    self._fast_cache = {}
    # Sharded calls (sharding/partition.py): the per-device programs, keyed by input and output
    # specs; `_sharded` sends every eager call there.
    self._in_shardings, self._out_shardings = in_shardings, out_shardings
    self._sharded = in_shardings is not None or out_shardings is not None
    self._sharded_cache = {}
    self.site = CallSite(self)  # what the partitioner sees of this jit
    _live_wrappers.add(self)

  def __repr__(self):
    return f"<PjitFunction of {self._fun!r}>"

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return functools.partial(self, obj)

  # -- argument splitting ---------------------------------------------------------------------
  def _is_static(self, i, n_args) -> bool:
    """Whether positional argument `i` of `n_args` is static (a negative number counts from
    the end, as in JAX)."""
    nums = self._static_argnums
    return i in nums or (i - n_args) in nums

  def _split_args(self, args, kwargs):
    static = []
    dyn_args = []
    for i, a in enumerate(args):
      if self._is_static(i, len(args)):
        static.append((i, _hashable_static(a)))
      else:
        dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
      if k in self._static_argnames:
        static.append((k, _hashable_static(v)))
      else:
        dyn_kwargs[k] = v
    return tuple(dyn_args), dyn_kwargs, tuple(static)

  def _flat_fun(self, args, kwargs, static, in_tree):
    fun = self._fun

    def flat_fun(*flat):
      dyn_args, dyn_kwargs = tree_util.tree_unflatten(in_tree, flat)
      if static:
        full, it = [], iter(dyn_args)
        statics = dict(static)
        n = len(dyn_args) + sum(1 for k, _ in static if isinstance(k, int))
        for i in range(n):
          full.append(statics[i].val if i in statics else next(it))
        kw = dict(dyn_kwargs)
        kw.update({k: v.val for k, v in static if isinstance(k, str)})
        out = fun(*full, **kw)
      else:
        out = fun(*dyn_args, **dyn_kwargs)
      out_flat, out_tree = tree_util.tree_flatten(out)
      flat_fun.out_tree = out_tree
      return [_check_output(o, fun) for o in out_flat]
    return flat_fun

  def _get_entry(self, args, kwargs, abstract=False):
    """(cache entry, flat arguments); `abstract` (the AOT stages) accepts deleted Arrays, whose
    types are still known, as JAX's `lower` does."""
    if self._simple:
      dyn_args, dyn_kwargs, static = args, kwargs, ()
    else:
      dyn_args, dyn_kwargs, static = self._split_args(args, kwargs)
    flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    try:
      sig = tuple([leaf_signature(x) for x in flat])
    except TypeError:
      _check_leaves(flat, self._fun, in_tree)
      raise
    except RuntimeError:  # a deleted Array's buffer
      if not abstract:
        raise
      sig = tuple([(x.shape, x.dtype, x.weak_type) if type(x) is core.array_type
                   and x.is_deleted() else leaf_signature(x) for x in flat])
    key = (in_tree, sig, static, self._options, config.trace_context(),
           batching.axis_env_key())
    entry = self._cache.get(key)
    if entry is None:
      entry = self._trace(flat, in_tree, dyn_args, dyn_kwargs, static, key)
    elif entry.refs is not None:
      _check_ref_args(entry.refs, flat, self._fun,
                      lambda: _flat_arg_names(self._fun, dyn_args, dyn_kwargs, flat, in_tree))
    return entry, flat

  def _trace(self, flat, in_tree, dyn_args, dyn_kwargs, static, key):
    _check_leaves(flat, self._fun, in_tree)
    flat_fun = self._flat_fun(dyn_args, dyn_kwargs, static, in_tree)
    in_avals = [core.get_aval(as_traceable_arg(x)) for x in flat]
    names = _flat_arg_names(self._fun, dyn_args, dyn_kwargs, flat, in_tree)
    ref_positions = [i for i, a in enumerate(in_avals) if type(a) is AbstractRef]
    if ref_positions:
      _check_ref_args((ref_positions, ()), flat, self._fun, lambda: names)
    if config.jax_explain_cache_misses:
      from jaxlite._src.transforms import cache_miss
      cache_miss.explain(self._fun, self._name, key, list(self._cache), names)
    dbg = pe.TracingDebugInfo("jit", fun_src_info(self._fun), names)
    writeback = None
    if core.hitype_avals:  # hi types registered (flax.nnx): closed-over hi values, see hijax
      from jaxlite._src.compat import hijax
      inner = flat_fun

      def flat_fun(*flat):
        nonlocal writeback
        with hijax.CaptureFrame() as cap:
          outs = inner(*flat)
          mutated = cap.mutated()
        if mutated:
          writeback = hijax.Writeback(inner.out_tree, mutated)
          outs = list(outs) + [v for *_, lo in mutated for v in lo]
        flat_fun.out_tree = inner.out_tree
        return outs
    closed = pe.trace_to_jaxpr(flat_fun, in_avals, dbg, names)
    _check_no_returned_refs(closed, self._fun, names, lambda: flat_fun.out_tree)
    closed_refs = tuple(c for c in closed.consts if type(c) is Ref)
    if closed_refs and ref_positions:
      _check_ref_args((ref_positions, closed_refs), flat, self._fun, lambda: names)
    closed, lifted = pe.convert_constvars_to_invars(closed)
    entry = _CacheEntry(closed, writeback or flat_fun.out_tree, lifted)
    if ref_positions:
      entry.refs = (ref_positions, closed_refs)
    if not self._sharded and (_has_constraint(closed.jaxpr) or any(
        e.primitive.name == "shard_map" for e in closed.jaxpr.eqns)):
      # a sharding_constraint inside: every call is partitioned; a shard_map: its out_specs
      # place the results (sharding/partition.py)
      self._sharded = True
    if not lifted and writeback is None:  # a writeback's inputs are the values at trace time
      bounded_put(self._cache, key, entry)
    return entry

  def _donated(self, n_flat, n_lifted, args, kwargs):
    """One bool per flat input (lifted constants first): whether it is donated. Positional
    arguments by `donate_argnums`, keyword ones by `donate_argnames` (each inferred from the
    other through the signature, as JAX); static arguments take no part."""
    if not self._donate_argnums and not self._donate_argnames:
      return None
    donated = [False] * n_lifted
    nums, names, n = self._donate_argnums, self._donate_argnames, len(args)
    for i, a in enumerate(args):
      if self._is_static(i, n):
        continue
      donated += [i in nums] * len(tree_util.tree_leaves(a))
    for k in sorted(kwargs):
      if k not in self._static_argnames:
        donated += [k in names] * len(tree_util.tree_leaves(kwargs[k]))
    if len(donated) != n_lifted + n_flat:  # a pytree the count above misjudges: donate nothing
      return [False] * (n_lifted + n_flat)
    return donated

  # -- calls ----------------------------------------------------------------------------------
  def __call__(self, *args, **kwargs):
    __tracebackhide__ = True  # noqa: F841 - an API boundary (traceback_util): read by pytest
    # The dispatch is inline here, not in a helper (a cached call is the hottest jit path: one
    # Python frame fewer); a `try` costs nothing until it catches.
    try:
      if config.jax_disable_jit:
        return self._fun(*args, **kwargs)
      if core._state.trace is core.eval_trace:
        # The NumPy backend's all-Array fast path first, then the one eager path.
        if self._fast_path and not kwargs and not self._sharded:
          out = self._call_arrays_fast(args)
          if out is not _MISS:
            return out
        if core.hitype_avals and _has_hi_leaf(args, kwargs):
          return self._call_with_hi(args, kwargs)
        return self._call_eager(args, kwargs)
      if core.hitype_avals and _has_hi_leaf(args, kwargs):
        return self._call_with_hi(args, kwargs)
      return self._call_staged(args, kwargs)
    except Exception as e:
      traceback_util.filter_at_boundary(e)
      raise

  def _dynamic_parts(self, args, kwargs):
    """(positions, names) of the arguments that are not static."""
    n = len(args)
    return ([i for i in range(n) if not self._is_static(i, n)],
            [k for k in kwargs if k not in self._static_argnames])

  def _call_with_hi(self, args, kwargs):
    """A call with mutable hi arguments (flax.nnx's hijax Variables): each goes in as its lo
    values, is rebuilt inside the trace, and the lo values it ends with come back as extra
    outputs written into the caller's object, as JAX's jit does (compat/hijax.py)."""
    from jaxlite._src.compat import hijax
    args, kwargs, originals = hijax.lower_call_args(args, kwargs, self._dynamic_parts)
    inner = self.__dict__.get("_hi_inner")  # the jit over lowered hi arguments, made once
    if inner is None:
      inner = self.__dict__["_hi_inner"] = PjitFunction(
          hijax.raising_hi_args(self._fun, self._dynamic_parts),
          static_argnums=self._static_argnums, static_argnames=self._static_argnames,
          keep_unused=self._keep_unused, inline=self._inline, name=self._name)
    out, finals = inner(*args, **kwargs)
    hijax.write_back(finals, originals)
    return out
    from jaxlite._src.compat import hijax
    fun = self._fun

    @functools.wraps(fun)
    def with_hi(*args, **kwargs):
      pos, names = self._dynamic_parts(args, kwargs)
      (hi_pos, hi_kw), made = hijax.raise_hi_args(
          ([args[i] for i in pos], {k: kwargs[k] for k in names}))
      full = list(args)
      for i, v in zip(pos, hi_pos):
        full[i] = v
      out = fun(*full, **{**kwargs, **hi_kw})
      return out, hijax.hi_finals(made)
    inner = self.__dict__["_hi_inner"] = PjitFunction(
        with_hi, static_argnums=self._static_argnums, static_argnames=self._static_argnames,
        keep_unused=self._keep_unused, inline=self._inline, name=self._name)
    return inner

  def _call_eager(self, args, kwargs):
    """The one eager call path (behind the all-Array fast path): the cache entry of these
    argument types, partitioned when the arguments or the function name several devices, else
    run on the backend that owns the arguments' buffers and placed as the committed arguments
    are. Donation (DonatingPjitFunction) hooks in at `_plan`, `_ran_sharded` and `_run`."""
    if self._eager_direct:
      return self._fun(*args, **kwargs)
    if self._sharded and not self._donates:  # donated buffers are planned first (below)
      fast = self._sharded_cache.get("mpi_fast")  # distributed/sharded_jit.py's _Fast
      if fast is not None and not kwargs:
        out = fast(args)
        if out is not None:
          return out
      out = _call_sharded(self, args, kwargs)
      if out is not _MISS:
        return out
    try:
      entry, flat = self._get_entry(args, kwargs)
    except RuntimeError as err:  # a deleted argument
      raise self._entry_error(args, kwargs, err) from None
    if entry.lifted:  # constants lifted to arguments: the staged path binds them with the rest
      return self._call_staged(args, kwargs)
    device = self._committed_device(flat, args, kwargs)
    plan = self._plan(entry, flat, args, kwargs)
    if self._sharded or device is not None and not devices.is_device(device):
      out = _call_sharded(self, args, kwargs)
      if out is not _MISS:
        return self._ran_sharded(plan, flat, out)
    out = self._run(entry, flat, plan)
    return out if device is None else _place_tree(out, device)

  # Hooks of the eager path that donation overrides (the plain jit pays nothing for them).
  def _entry_error(self, args, kwargs, err):
    return err

  def _plan(self, entry, flat, args, kwargs):
    return None

  def _ran_sharded(self, plan, flat, out):
    return out

  def _run(self, entry, flat, plan):
    return entry.run([numpy_value(x) for x in flat], _arguments_backend(flat))

  def _call_staged(self, args, kwargs):
    """Under a transformation (or with lifted constants): a `jit` eqn bound on the current
    trace (the eval trace runs it through the jit primitive's impl)."""
    entry, flat = self._get_entry(args, kwargs)
    args_in = list(entry.lifted) + [as_traceable_arg(x) for x in flat]
    in_sh = out_sh = None
    if self._in_shardings is not None or self._out_shardings is not None:
      from jaxlite._src.sharding import partition  # the eqn carries them, as JAX's does
      in_sh, out_sh = partition.eqn_shardings(self.site, args, kwargs, entry, len(flat))
    if self._inline and in_sh is None and out_sh is None:
      # jit(inline=True): its eqns go straight onto the current trace, no jit eqn (JAX's
      # staging rule for an inlined jit without shardings)
      closed = entry.closed
      outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *args_in)
      return entry.out_tree.unflatten(outs)
    params = jit_params(entry.closed, self._name, len(args_in), len(entry.out_avals),
                        self._donated(len(flat), len(entry.lifted), args, kwargs),
                        self._keep_unused, self._inline, in_sh, out_sh)
    outs = jit_p.bind(*args_in, **params)
    return entry.out_tree.unflatten(outs)

  def _call_arrays_fast(self, args):
    """Eager call whose arguments are Arrays or NumPy arrays/scalars of x64-independent dtypes,
    or non-empty tuples/lists of them (`f(params, x, y)`): skips pytree flattening on a cache
    hit and runs the entry's `fast_runner`."""
    at = core.array_type
    try:  # free unless it raises: a deleted Array's buffer raises on `v.shape`
      if len(args) == 1 and type(args[0]) is at:
        a = args[0]
        v = a._value
        key = (v.shape, v.dtype, a.weak_type, config.trace_context())
        committed = a._device is not None
        values, arrays = (v,), args
      else:
        sig, values, arrays = [], [], []
        for a in args:
          ta = type(a)
          if ta is at:  # the common leaf, inline (as `_fast_leaf` takes it)
            v = a._value
            sig.append((v.shape, v.dtype, a.weak_type))
            values.append(v)
            arrays.append(a)
          elif (ta is tuple or ta is list) and a:
            # A parameter tuple (`f(params, x, y)`): its leaves in flattening order.
            inner = [_fast_leaf(e, values, arrays) for e in a]
            if not all(inner):
              return _MISS
            sig.append((ta, tuple(inner)))
          else:
            one = _fast_leaf(a, values, arrays)
            if not one:
              return _MISS
            sig.append(one)
        key = (tuple(sig), config.trace_context())
        committed = False
        for a in arrays:
          if a._device is not None:
            committed = True
            break
    except RuntimeError as err:
      raise self._deleted_arg_error(args, err) from None
    if core.eager_routes and _foreign_arguments(arrays, committed):
      return _MISS
    runner = self._fast_cache.get(key)
    if runner is None:
      entry, _ = self._get_entry(args, {})
      if entry.lifted or self._sharded or type(entry.out_tree) is not tree_util.PyTreeDef:
        return _MISS
      runner = entry.fast_runner()
      bounded_put(self._fast_cache, key, runner)
    if not committed:
      return runner(values)
    device = self._committed_device(arrays, args, {})
    if not devices.is_device(device):
      out = _call_sharded(self, args, {})
      if out is not _MISS:
        return out
    return _place_tree(runner(values), device)

  def _deleted_arg_error(self, args, err):
    """JAX's error for a deleted argument on the all-Array path: warm (compiled for these
    types) JAX raises from its C++ fast path, else from Python (`err`)."""
    from jaxlite._src.transforms import donation
    sig = donation.aval_key(args)
    if sig is None:  # a parameter tuple holds it: JAX raises the RuntimeError, warm or not
      return err
    key = (*sig[0], config.trace_context()) if len(args) == 1 else \
        (sig, config.trace_context())
    return donation.deleted_arg_error(args, key in self._fast_cache, err)

  def _committed_device(self, flat, args, kwargs):
    """Where a call's results live: the device its committed arguments share (None: none is
    committed), or JAX's incompatible-devices ValueError naming the arguments by path."""
    def names():
      if self._simple:
        dyn_args, dyn_kwargs = args, kwargs
      else:
        dyn_args, dyn_kwargs, _ = self._split_args(args, kwargs)
      paths = tree_util.tree_flatten_with_path((tuple(dyn_args), dyn_kwargs))[0]
      return [_placement_arg_name(p, self._fun) for p, _ in paths]
    return devices.common_device(flat, names, self._name)

  @property
  def __signature__(self):
    """The wrapped function's signature, also for `inspect.signature(f, follow_wrapped=False)`
    (the wrapper's `__get__` would make inspect take it for a builtin)."""
    return inspect.signature(self._fun)

  # -- AOT stages -----------------------------------------------------------------------------
  def trace(self, *args, **kwargs) -> "Traced":
    entry, flat = self._get_entry(args, kwargs, abstract=True)
    traced = Traced(self, entry)
    # The static arguments are baked in: the Compiled stage is called with the others only.
    dyn_args, dyn_kwargs, _ = self._split_args(args, kwargs)
    traced._statics = ([(i, a) for i, a in enumerate(args) if self._is_static(i, len(args))],
                       {k: v for k, v in kwargs.items() if k in self._static_argnames},
                       len(dyn_args), frozenset(dyn_kwargs))
    traced._args_info = self._args_info(args, kwargs, flat)
    traced._donated = self._donated(len(flat), 0, args, kwargs)
    traced._shardings = None
    if self._in_shardings is not None or self._out_shardings is not None:
      from jaxlite._src.sharding import partition  # what `as_text` annotates, as JAX's does
      traced._shardings = partition.eqn_shardings(self.site, args, kwargs, entry, len(flat))
    return traced

  def _args_info(self, args, kwargs, flat):
    """`args_info` of the AOT stages: an ArgInfo (aval, donated) per dynamic argument leaf, in
    the pytree of (args, kwargs)."""
    dyn_args, dyn_kwargs, _ = self._split_args(args, kwargs)
    tree = tree_util.tree_structure((dyn_args, dyn_kwargs))
    donated = self._donated(len(flat), 0, args, kwargs) or [False] * len(flat)
    return tree.unflatten([ArgInfo(core.get_aval(as_traceable_arg(x)), d)
                           for x, d in zip(flat, donated)])

  def lower(self, *args, **kwargs) -> "Lowered":
    return self.trace(*args, **kwargs).lower()

  def eval_shape(self, *args, **kwargs):
    entry, _ = self._get_entry(args, kwargs)
    return entry.out_tree.unflatten([
        ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                         sharding=abstract_type_sharding(a)) for a in entry.out_avals])

  def clear_cache(self):
    self._cache.clear()
    self._fast_cache.clear()
    self._sharded_cache.clear()


traceback_util.register_boundary_code(PjitFunction.__call__.__code__)


class DonatingPjitFunction(PjitFunction):
  """`jax.jit` with `donate_argnums` / `donate_argnames`. Eager calls delete the usable donated
  Arrays and let the executable reuse their buffers (donation.py); traced calls stage a `jit`
  eqn whose `donated_invars` say which inputs are donated (tracers are never deleted). The
  eager path is PjitFunction's, with these hooks."""
  _donates = True

  def _entry_error(self, args, kwargs, err):
    from jaxlite._src.transforms import donation
    flat = self._dyn_leaves(args, kwargs)
    return donation.deleted_arg_error(flat, donation.aval_key(flat) in self._warm, err)

  def _plan(self, entry, flat, args, kwargs):
    from jaxlite._src.transforms import donation
    plan = donation.plan_for(entry, self._donated(len(flat), 0, args, kwargs),
                             self._keep_unused)
    donation.check_no_reuse_in_call(plan, flat)
    return plan

  def _ran_sharded(self, plan, flat, out):
    from jaxlite._src.transforms import donation
    donation.delete_consumed(plan, flat)  # sharded: deleted, buffers not reused (as JAX)
    return self._warmed(plan, flat, out)

  def _run(self, entry, flat, plan):
    from jaxlite._src.transforms import donation
    b = _arguments_backend(flat)
    if not plan.consumed:
      out = entry.run([numpy_value(x) for x in flat], b)
    elif fast_runners_enabled and (b is None or getattr(b, "aliases_donations", False)):
      # buffer reuse: the NumPy backends' executables, and XLA's input/output aliases
      exe = donation.executable(entry, plan, donation.reusable_inputs(plan, flat), b)
      values = [numpy_value(x) for x in flat]
      donation.delete_consumed(plan, flat)
      token = fp_quiet.quiet()  # as `_CacheEntry.run`: XLA's kernels never warn
      try:
        outs = exe(*values)
      finally:
        fp_quiet.loud(token)
      del values
      make = core.make_array
      out = entry.out_tree.unflatten([make(o, a) for o, a in zip(outs, entry.out_avals)])
    else:  # instrumentation sees every call through `run`, or another backend's buffers: the
      # donated Arrays are deleted, their buffers not reused here
      values = [numpy_value(x) for x in flat]
      donation.delete_consumed(plan, flat)
      out = entry.run(values, b)
    return self._warmed(plan, flat, out)

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self._warm = set()  # argument types already run: JAX's errors then come from its fast path

  def _warmed(self, plan, flat, out):
    from jaxlite._src.transforms import donation
    plan.warm = True
    key = donation.aval_key(flat)
    if key is not None:
      self._warm.add(key)
    return out

  def _dyn_leaves(self, args, kwargs) -> list:
    if not self._simple:
      args, kwargs, _ = self._split_args(args, kwargs)
    return tree_util.tree_leaves((args, kwargs))


class Traced(StageInfo):
  def __init__(self, fn, entry):
    self._fn, self._entry = fn, entry

  @property
  def jaxpr(self):
    return self._entry.closed

  fun_name = property(lambda self: self._fn._name)
  out_avals = property(lambda self: self._entry.out_tree.unflatten(self._entry.out_avals))

  def lower(self):
    if self._donated is not None and not self._entry.lifted:
      # As JAX, lowering decides which donated buffers are usable and warns about the rest.
      from jaxlite._src.transforms import donation
      donation.plan_for(self._entry, self._donated, self._fn._keep_unused)
    lowered = Lowered(self._fn, self._entry)
    lowered._statics, lowered._args_info = self._statics, self._args_info
    lowered._shardings = getattr(self, "_shardings", None)
    return lowered


class Lowered(StageInfo):
  def __init__(self, fn, entry):
    self._fn, self._entry = fn, entry

  def as_text(self, dialect=None) -> str:
    """The StableHLO module on a backend that lowers to it (XLA), else the jaxpr."""
    b = backend.get_backend()
    if hasattr(b, "lower_text") and dialect in (None, "stablehlo", "mlir"):
      shardings = getattr(self, "_shardings", None)
      if shardings is not None:  # in/out_shardings: the arguments and results annotated
        from jaxlite._src.compiler.xla import spmd
        text = spmd.lower_text_with_shardings(self._entry.closed, _xla_module_name(self._fn),
                                              *shardings)
        if text is not None:
          return text
      return b.lower_text(self._entry.closed, name=_xla_module_name(self._fn))
    return str(self._entry.closed)

  def compiler_ir(self, dialect: str | None = None):
    """JAX's compiler IR objects: the StableHLO module (jaxlib's `ir.Module`), or with
    `dialect="hlo"` XLA's computation (`.as_hlo_text()`), of this program as the XLA backend
    lowers it, whichever backend runs it. Both are jaxlib's objects: without jaxlib, None (what
    JAX's `compiler_ir` returns when its compiler has no such form)."""
    dialect = "stablehlo" if dialect is None else dialect
    if dialect not in ("stablehlo", "hlo"):
      raise ValueError(f"unknown dialect: {dialect}")
    from jaxlite._src.compiler.xla import client
    if not client.available():
      return None
    b = backend.get_backend()
    if not hasattr(b, "lower_text"):  # the native tiers: the XLA backend's lowering (a CPU
      from jaxlite._src.compiler.xla import backend as xla_backend  # one, never registered)
      b = xla_backend.XlaBackend("cpu")
    text = b.lower(self._entry.closed, name=_xla_module_name(self._fn))
    return client.parse_module(text) if dialect == "stablehlo" else client.xla_computation(text)

  def cost_analysis(self) -> dict[str, float]:
    """XLA's cost model over the traced program: 'flops', 'transcendentals', 'bytes accessed'
    (see cost_analysis.py); on a backend that lowers to XLA, XLA's own figures for the
    unoptimized module, as JAX's."""
    b = backend.get_backend()
    if hasattr(b, "cost_analysis"):
      return b.cost_analysis(self._entry.closed, name=_xla_module_name(self._fn))
    from jaxlite._src.transforms.cost_analysis import cost_analysis
    return cost_analysis(self._entry.closed)

  def compile(self, compiler_options=None, *, device_assignment=None):
    """`compiler_options` name XLA options: jaxlite has no XLA, so XLA's (`xla_*`) are accepted
    and have no effect; any other name raises as XLA does for an option it does not know."""
    from jaxlite._src.base.errors import JaxRuntimeError
    for name in (compiler_options or {}):
      if not str(name).startswith("xla_"):
        raise JaxRuntimeError(f"INVALID_ARGUMENT: No such compile option: '{name}'")
    compiled = Compiled(self._fn, self._entry)
    compiled._statics, compiled._args_info = self._statics, self._args_info
    return compiled


class Compiled(CompiledInfo):
  def __init__(self, fn, entry):
    self._fn, self._entry = fn, entry
    entry.compiled()

  def as_text(self) -> str:
    return backend.get_backend().as_text(self._entry.executable)

  def cost_analysis(self) -> dict[str, float]:
    """The same counts as `Lowered.cost_analysis()`: jaxlite's compiled program runs the traced
    equations (fused or not), so they are counted before fusion. XLA's executables count
    themselves (XLA's own cost model, after its optimizations)."""
    exe = self._entry.executable
    if hasattr(exe, "cost_analysis"):
      return exe.cost_analysis()
    from jaxlite._src.transforms.cost_analysis import cost_analysis
    return cost_analysis(self._entry.closed)

  def __call__(self, *args, **kwargs):
    """Called, as JAX's, with the dynamic arguments only (the static ones are baked in)."""
    static_pos, static_kw, n_dyn, dyn_keys = self._statics
    if len(args) != n_dyn or frozenset(kwargs) != dyn_keys:
      raise TypeError("Function compiled with input pytree does not match the input pytree it "
                      f"was called with: compiled for {n_dyn} positional and keyword arguments "
                      f"{sorted(dyn_keys)}, called with {len(args)} and {sorted(kwargs)} (static "
                      "arguments are not passed to a compiled function).")
    self._check_arg_types(args, kwargs, [i % (n_dyn + len(static_pos)) for i, _ in static_pos])
    # The program was compiled for the argument types of `trace`: a weakly typed argument (a
    # Python scalar) where a strong type was traced runs as that type (so do its results).
    args, kwargs = tree_util.tree_map(_as_traced_type, (tuple(args), kwargs),
                                      tree_util.tree_map(lambda i: i._aval, self._args_info))
    full = list(args)
    for i, a in sorted((i % (n_dyn + len(static_pos)), a) for i, a in static_pos):
      full.insert(i, a)
    return self._fn(*full, **kwargs, **static_kw)


  def _check_arg_types(self, args, kwargs, static_positions):
    """JAX's TypeError for arguments whose shapes or dtypes differ from those it was compiled
    for: a compiled program never retraces (weak types may differ, as in JAX)."""
    paths = tree_util.tree_flatten_with_path((tuple(args), kwargs))[0]
    infos = tree_util.tree_leaves(self._args_info)
    positions = [j for j in range(len(args) + len(static_positions)) if j not in static_positions]
    short = lambda a: f"{dtypes.dtype_name(a.dtype)}[{','.join(map(str, a.shape))}]"
    bad = []
    for (path, x), info in zip(paths, infos):
      got, want = core.get_aval(as_traceable_arg(x)), info._aval
      if got.shape != want.shape or got.dtype != want.dtype:
        if path[0].idx == 0:  # positional: named by its position among all (static too) args
          path = (path[0], type(path[1])(positions[path[1].idx]), *path[2:])
        bad.append(f"Argument '{_placement_arg_name(path, self._fn._fun)}' compiled with "
                   f"{short(want)} and called with {short(got)}")
    if len(paths) != len(infos):
      bad.append(f"compiled for {len(infos)} array arguments, called with {len(paths)}")
    if bad:
      raise TypeError("Argument types differ from the types for which this computation was "
                      "compiled. Perhaps you are calling the compiled executable with a "
                      "different enable_x64 mode than when it was AOT compiled? The mismatches "
                      "are:\n" + "\n".join(bad))


def _as_traced_type(x, aval):
  if aval.weak_type or not getattr(core.get_aval(as_traceable_arg(x)), "weak_type", False):
    return x
  return core.asarray(x, dtype=aval.dtype)


def _xla_module_name(fn) -> str:
  """JAX's module name for a jitted function: `jit_<its name>`."""
  return "jit_" + str(getattr(fn, "_name", None) or getattr(fn, "__name__", "fn"))


def _placement_arg_name(keypath, fun):
  """An argument leaf named as JAX's placement errors do: `x`, `x['a']`, `args[0]` or, for a
  `*xs` parameter, `xs[0]`."""
  names = _arg_names(fun)
  if getattr(keypath[0], "idx", None) == 0 and len(keypath) > 1:
    i = keypath[1].idx
    if i >= len(names):
      try:
        var = next((p.name for p in inspect.signature(fun).parameters.values()
                    if p.kind is p.VAR_POSITIONAL), None)
      except (TypeError, ValueError):
        var = None
      base = f"{var}[{i - len(names)}]" if var else f"args[{i}]"
      return base + tree_util.keystr(keypath[2:])
  return _arg_path_str(keypath, fun)


def _has_constraint(jaxpr) -> bool:
  """Whether a `sharding_constraint` eqn, or a `jit` eqn given in/out shardings (a transformed
  jit of them), is in `jaxpr` or its sub-jaxprs (checked per trace)."""
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "sharding_constraint" or eqn.primitive is jit_p and not (
        pp.all_unspecified(eqn.params["in_shardings"])
        and pp.all_unspecified(eqn.params["out_shardings"])) or any(
        _has_constraint(sub) for sub in core.jaxprs_in_params(eqn.params)):
      return True
  return False


def _arguments_backend(flat):
  """The backend a jit call on flat arguments `flat` runs on, or None for the installed one:
  asked of `backend.backend_for_arguments` only while another backend's buffers or routes
  exist (the NumPy-only call pays one test)."""
  if core.eager_routes or core.default_eager_route is not None:
    b = backend.backend_for_arguments(flat)
    return None if b is backend.installed() else b
  return None


_foreign_cache = [None, -1, frozenset()]  # installed backend, len(buffer_backends), types


def _foreign_arguments(arrays, committed) -> bool:
  """Whether an Array among `arrays` holds a buffer of a backend other than the installed one,
  or is committed to NumPy's CPU device beside an XLA default: the general path then compiles
  on their backend (the installed backend's own buffers, and a deleted Array's placeholder,
  stay on the fast path)."""
  installed, owners = backend.installed(), backend.buffer_backends
  if _foreign_cache[0] is not installed or _foreign_cache[1] != len(owners):
    _foreign_cache[:] = [installed, len(owners), frozenset(
        t for t, name in owners.items() if name != installed.name)]
  foreign = _foreign_cache[2]
  for a in arrays:
    if type(a._value) in foreign:
      return True
  if committed and backend.host_backend is not None:
    return any(type(a._device) is devices.CpuDevice for a in arrays)
  return False


def _call_sharded(fn, args, kwargs):
  """A call with multi-device arguments or shardings: partitioned (sharding/partition.py, given
  the jit's call site), or _MISS when there is nothing to partition (one device)."""
  from jaxlite._src.sharding import partition
  out = partition.call_sharded(fn.site, args, kwargs)
  return _MISS if out is None else out


def _place_tree(out, device):
  """Commits the fresh Arrays of a jit call's output pytree to `device`."""
  from jaxlite._src.base import array
  array.place_outputs(tree_util.tree_leaves(out), device)
  return out


def _check_ref_args(refs, flat, fun, arg_names) -> None:
  """JAX's errors for a Ref passed as two arguments, or passed and also closed over: either
  would alias one buffer under two names in the compiled code."""
  positions, closed_refs = refs
  seen: dict = {}
  for i in positions:
    x = flat[i]
    first = seen.setdefault(id(x), i)
    if first != i:
      names = arg_names()
      raise ValueError(
          "only one reference to a mutable array may be passed as an argument to a function, "
          f"but when tracing {fun_src_info(fun)} for jit the mutable array reference of type "
          f"{core.get_aval(x)} appeared at both {names[first]} and {names[i]}.")
    if any(x is c for c in closed_refs):
      raise ValueError(
          f"when tracing {fun_src_info(fun)} for jit, a mutable array reference of type "
          f"{core.get_aval(x)} was both closed over and passed as the argument "
          f"{arg_names()[i]}")


def _check_no_returned_refs(closed, fun, names, out_tree) -> None:
  """JAX's error for a Ref among the outputs, saying where it came from."""
  jaxpr = closed.jaxpr
  for i, v in enumerate(jaxpr.outvars):
    aval = v.aval
    if type(aval) is not AbstractRef:
      continue
    paths = tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(out_tree(), range(len(jaxpr.outvars))))[0]
    path = tree_util.keystr(paths[i][0]) if i < len(paths) else ""
    loc = f" at output tree path result{path}" if path else ""
    origin = ""  # JAX also names the line that made a ref created inside (not recorded here)
    if v in jaxpr.invars:
      origin = ("\n\nThe returned mutable array was passed in as the argument "
                f"{names[jaxpr.invars.index(v)]}.")
    raise ValueError(f"function {fun_src_info(fun)} traced for jit returned a mutable array "
                     f"reference of type {aval}{loc}, but mutable array references cannot be "
                     f"returned.{origin}")


def _flat_arg_names(fun, dyn_args, dyn_kwargs, flat, in_tree):
  # JAX's names: the parameter's name and the leaf's path in it (`t[0]`, `d['a']`); keyword
  # arguments follow in sorted order, as they are flattened
  names = _arg_names(fun)
  out = []

  def add(base, tree):
    out.extend(base + tree_util.keystr(path)
               for path, _ in tree_util.tree_flatten_with_path(tree)[0])
  for i, a in enumerate(dyn_args):
    add(names[i] if i < len(names) else f"args[{i}]", a)
  for k in sorted(dyn_kwargs):
    add(k, dyn_kwargs[k])
  return out if len(out) == len(flat) else [None] * len(flat)


class _Static:
  __slots__ = ("val", "_hash")

  def __init__(self, val):
    self.val = val
    self._hash = hash(val)

  def __hash__(self):
    return self._hash

  def __eq__(self, other):
    return type(other) is _Static and type(self.val) is type(other.val) and self.val == other.val

  def __repr__(self):
    return f"Static(val={self.val!r})"


def _hashable_static(val):
  try:
    return _Static(val)
  except TypeError as e:
    raise ValueError(
        "Non-hashable static arguments are not supported. An error occurred while trying to "
        f"hash an object of type {type(val)}, {val!r}. The error was:\nTypeError: {e}") from None


def internal_jit(fun=None, *, static_argnums=(), static_argnames=(), name=None):
  """jit for jnp's own wrappers (`_where`, `clip`…): named eqns in jaxprs, cached forever."""
  if fun is None:
    return functools.partial(internal_jit, static_argnums=static_argnums,
                             static_argnames=static_argnames, name=name)
  wrapped = PjitFunction(fun, static_argnums, static_argnames, name=name)
  wrapped._eager_direct = True
  wrapped._fast_path = False
  return wrapped


instrumentation.register_jit(sys.modules[__name__])


def _jit_eqn_placements(jaxpr, args, device):
  from jaxlite._src.sharding import partition  # deferred: import speed
  return partition.jit_eqn_placements(jaxpr, args, device)


sharding_rules.register_jit_eqn_placements(_jit_eqn_placements)
