"""The callable `jax.jit` returns (PjitFunction, DonatingPjitFunction) and its call paths: trace
once per abstract signature, stage as a `jit` eqn, run the backend's executable; `internal_jit` for
the library's own wrappers. lax, numpy and the other library modules import it without importing
the API layer (`jit.py`).

Around it: the arguments' cache keys, values and names (jit_arguments.py), the trace caches and
their entries (jit_cache.py), the AOT stages `trace`/`lower`/`compile` return (jit_stages.py).
The `jit` primitive (call_primitives.py) holds a ClosedJaxpr. Under the eval trace it runs that
jaxpr's executable; under any other trace it is recorded or transformed like any primitive.
"""
from __future__ import annotations

import functools
import inspect

from jaxlite._src.base import array
from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import fp_quiet
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.compat import traceback_util
from jaxlite._src.base import tree_util
from jaxlite._src.base import instrumentation
from jaxlite._src.sharding import rules as sharding_rules
from jaxlite._src.transforms.call_primitives import (
    _check_output, as_traceable_arg, fun_name, fun_src_info, jit_p, jit_params)
from jaxlite._src.compiler import backend
from jaxlite._src.base.config import config
from jaxlite._src.interpreters import batching
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.transforms import jit_cache
from jaxlite._src.transforms.jit_argnums import as_tuple, resolve_argnums
from jaxlite._src.transforms.jit_arguments import (
    check_leaves, check_no_returned_refs, check_ref_args, fast_leaf, flat_arg_names,
    has_hi_leaf, hashable_static, leaf_signature, numpy_value, placement_arg_name)
from jaxlite._src.transforms.jit_cache import CacheEntry, bounded_put, cache_for, live_wrappers
from jaxlite._src.transforms.jit_stages import Lowered, Traced
from jaxlite._src.transforms.stage_info import ArgInfo, ShapeDtypeStruct, abstract_type_sharding
from jaxlite._src.state.types import AbstractRef, Ref  # mutable refs are jit arguments too

# What a call path returns when it cannot take the call (the next path then does).
_MISS = object()


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
    return placement_arg_name(keypath, self.fun)

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
    self._cache = cache_for(fun)
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
    live_wrappers.add(self)

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
        static.append((i, hashable_static(a)))
      else:
        dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
      if k in self._static_argnames:
        static.append((k, hashable_static(v)))
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
      check_leaves(flat, self._fun, in_tree)
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
      check_ref_args(entry.refs, flat, self._fun,
                      lambda: flat_arg_names(self._fun, dyn_args, dyn_kwargs, flat, in_tree))
    return entry, flat

  def _trace(self, flat, in_tree, dyn_args, dyn_kwargs, static, key):
    check_leaves(flat, self._fun, in_tree)
    flat_fun = self._flat_fun(dyn_args, dyn_kwargs, static, in_tree)
    in_avals = [core.get_aval(as_traceable_arg(x)) for x in flat]
    names = flat_arg_names(self._fun, dyn_args, dyn_kwargs, flat, in_tree)
    ref_positions = [i for i, a in enumerate(in_avals) if type(a) is AbstractRef]
    if ref_positions:
      check_ref_args((ref_positions, ()), flat, self._fun, lambda: names)
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
    check_no_returned_refs(closed, self._fun, names, lambda: flat_fun.out_tree)
    closed_refs = tuple(c for c in closed.consts if type(c) is Ref)
    if closed_refs and ref_positions:
      check_ref_args((ref_positions, closed_refs), flat, self._fun, lambda: names)
    closed, lifted = pe.convert_constvars_to_invars(closed)
    entry = CacheEntry(closed, writeback or flat_fun.out_tree, lifted)
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
        if core.hitype_avals and has_hi_leaf(args, kwargs):
          return self._call_with_hi(args, kwargs)
        return self._call_eager(args, kwargs)
      if core.hitype_avals and has_hi_leaf(args, kwargs):
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

  def _check_dynamic_leaves(self, args, kwargs):
    dyn_args, dyn_kwargs, _ = ((args, kwargs, ()) if self._simple
                               else self._split_args(args, kwargs))
    flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    check_leaves(flat, self._fun, in_tree)

  def _call_eager(self, args, kwargs):
    """The one eager call path (behind the all-Array fast path): the cache entry of these
    argument types, partitioned when the arguments or the function name several devices, else
    run on the backend that owns the arguments' buffers and placed as the committed arguments
    are. Donation (DonatingPjitFunction) hooks in at `_plan`, `_ran_sharded` and `_run`."""
    if self._eager_direct:
      for a in (args if not kwargs else (*args, *kwargs.values())):  # (a loop: hot path)
        if type(a) in _CHECKED_EAGERLY:
          self._check_dynamic_leaves(args, kwargs)  # a str in a bound: JAX's jit's TypeError
          break
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
    if device is None:
      return out if not devices.context_meshes else _place_off_mesh(entry, out)
    return _place_tree(out, device)

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
          if ta is at:  # the common leaf, inline (as `fast_leaf` takes it)
            v = a._value
            sig.append((v.shape, v.dtype, a.weak_type))
            values.append(v)
            arrays.append(a)
          elif (ta is tuple or ta is list) and a:
            # A parameter tuple (`f(params, x, y)`): its leaves in flattening order.
            inner = [fast_leaf(e, values, arrays) for e in a]
            if not all(inner):
              return _MISS
            sig.append((ta, tuple(inner)))
          else:
            one = fast_leaf(a, values, arrays)
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
      out = runner(values)
      return out if not devices.context_meshes else self._place_fast_off_mesh(key, args, out)
    device = self._committed_device(arrays, args, {})
    if not devices.is_device(device):
      out = _call_sharded(self, args, {})
      if out is not _MISS:
        return out
    return _place_tree(runner(values), device)

  def _place_fast_off_mesh(self, key, args, out):
    """`_place_off_mesh` of a fast-path call under `jax.set_mesh`: which results name a mesh is
    kept beside the runner, by its key (mesh-independent: the traced jaxpr decides), so a
    repeat call does not look its cache entry up again (pytree flattening and all)."""
    named = self._fast_cache.get((_OFF_MESH, key))
    if named is None:
      named = _outputs_name_mesh(self._get_entry(args, {})[0])
      bounded_put(self._fast_cache, (_OFF_MESH, key), named)
    return _replicate_off_mesh(out, named)

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
      return [placement_arg_name(p, self._fun) for p, _ in paths]
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
    elif jit_cache.fast_runners_enabled and (b is None or getattr(b, "aliases_donations", False)):
      # buffer reuse: the NumPy backends' executables, and XLA's input/output aliases
      exe = donation.executable(entry, plan, donation.reusable_inputs(plan, flat), b)
      values = [numpy_value(x) for x in flat]
      donation.delete_consumed(plan, flat)
      token = fp_quiet.quiet()  # as `CacheEntry.run`: XLA's kernels never warn
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


def _place_off_mesh(entry, out):
  """A call's results under `jax.set_mesh` on arguments on no mesh: those whose types name no
  mesh, by the mesh's flow through the traced jaxpr, are replicated as P() (array.py)."""
  return _replicate_off_mesh(out, _outputs_name_mesh(entry))


# The fast cache's key of a call's `_outputs_name_mesh` (beside its runner's, under `set_mesh`).
_OFF_MESH = object()


def _outputs_name_mesh(entry) -> list:
  """Whether each result of a call on arguments on no mesh names a mesh in its type."""
  closed = entry.closed
  return sharding_rules.jaxpr_outputs_name_mesh(closed, [False] * len(closed.jaxpr.invars))


def _replicate_off_mesh(out, named):
  leaves = tree_util.tree_leaves(out)
  if len(leaves) == len(named):
    array.replicate_off_mesh(leaves, named)
  return out


def _place_tree(out, device):
  """Commits the fresh Arrays of a jit call's output pytree to `device`."""
  array.place_outputs(tree_util.tree_leaves(out), device)
  return out


# argument types an internal jit's eager call checks leaf by leaf first, as any jit call does
# (arrays and scalars, the common case, are valid as they are)
_CHECKED_EAGERLY = frozenset({list, tuple, dict, str})


def internal_jit(fun=None, *, static_argnums=(), static_argnames=(), name=None, inline=False):
  """jit for jnp's own wrappers (`_where`, `clip`…): named eqns in jaxprs, cached forever.
  `inline=True` (JAX's `jit(inline=True)` ufuncs): no jit eqn, but the trace is cached, so the
  sub-jaxprs of two calls with one signature are one object (printed once, `let jaxpr = …`)."""
  if fun is None:
    return functools.partial(internal_jit, static_argnums=static_argnums,
                             static_argnames=static_argnames, name=name, inline=inline)
  if name is not None:  # JAX's function of that name: errors show `<function clip at …>`
    fun.__name__ = fun.__qualname__ = name
  wrapped = PjitFunction(fun, static_argnums, static_argnames, name=name, inline=inline)
  wrapped._eager_direct = True
  wrapped._fast_path = False
  return wrapped


instrumentation.register_jit(wrapper=PjitFunction, cache_entry=CacheEntry,
                             set_fast_runners=jit_cache.set_fast_runners,
                             fun_src_info=fun_src_info)


def _jit_eqn_placements(jaxpr, args, device):
  from jaxlite._src.sharding import partition  # deferred: import speed
  return partition.jit_eqn_placements(jaxpr, args, device)


sharding_rules.register_jit_eqn_placements(_jit_eqn_placements)
