"""Wrapped functions with a stack of transformations (`jax.extend.linear_util`).

jaxlite's own transformations do not use this: it exists for libraries (flax) that wrap a
function, flatten it with `jax.api_util.flatten_fun` and hand it to `partial_eval`.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, NamedTuple

_EMPTY = object()


class StoreException(Exception):
  pass


class Store:
  """A write-once box for a transformation's auxiliary output."""
  __slots__ = ("_val",)

  def __init__(self):
    self._val = _EMPTY

  def store(self, val):
    if self._val is not _EMPTY:
      raise StoreException("Store occupied")
    self._val = val

  def reset(self):
    self._val = _EMPTY

  @property
  def val(self):
    if self._val is _EMPTY:
      raise StoreException("Store empty")
    return self._val

  def __nonzero__(self):
    return self._val is not _EMPTY

  __bool__ = __nonzero__


class DebugInfo(NamedTuple):
  """What a traced function is, for messages: `traced_for`, `func_src_info`, arg names."""
  traced_for: str
  func_src_info: str | None
  arg_names: tuple | None
  result_paths: Any = None

  def with_unknown_names(self) -> "DebugInfo":
    return self._replace(arg_names=None, result_paths=None)

  @property
  def func_name(self) -> str:
    return (self.func_src_info or "<unknown>").split(" ")[0]


def _missing_debug_info(traced_for: str) -> DebugInfo:
  return DebugInfo(traced_for, "<unknown>", None, None)


class WrappedFun:
  """`f` with transformations applied outermost-last; `call_wrapped` runs the whole stack."""
  __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info")

  def __init__(self, f, f_transformed, transforms, stores, params, in_type, debug_info):
    self.f = f
    self.f_transformed = f_transformed
    self.transforms = transforms
    self.stores = stores
    self.params = params
    self.in_type = in_type
    self.debug_info = debug_info

  @property
  def __name__(self):
    return getattr(self.f, "__name__", "<unnamed wrapped function>")

  def wrap(self, gen, gen_static_args, out_store) -> "WrappedFun":
    """Adds one transformation: `gen(f, *static, *args)` (with the store when it has aux)."""
    inner = self.f_transformed
    if out_store is None:
      f_new = functools.partial(gen, inner, *gen_static_args)
    else:
      f_new = functools.partial(gen, inner, out_store, *gen_static_args)
    return WrappedFun(self.f, f_new, ((gen, gen_static_args),) + self.transforms,
                      (out_store,) + self.stores, self.params, None, self.debug_info)

  def populate_stores(self, stores):
    for self_store, other_store in zip(self.stores, stores):
      if self_store is not None:
        self_store.store(other_store.val)

  def call_wrapped(self, *args, **kwargs):
    return self.f_transformed(*args, **kwargs)

  def with_unknown_names(self) -> "WrappedFun":
    dbg = self.debug_info.with_unknown_names() if self.debug_info is not None else None
    return WrappedFun(self.f, self.f_transformed, self.transforms, self.stores, self.params,
                      self.in_type, dbg)

  def __repr__(self):
    stack = "\n".join(f"{i}   : {getattr(g, '__name__', g)}   {a}"
                      for i, (g, a) in enumerate(self.transforms))
    return f"Wrapped function:\n{stack}\nCore: {getattr(self.f, '__name__', self.f)}\n"

  def __hash__(self):
    return hash((self.f, self.transforms, self.params))

  def __eq__(self, other):
    return (isinstance(other, WrappedFun) and self.f == other.f
            and self.transforms == other.transforms and self.params == other.params)


def wrap_init(f: Callable, params=None, *, debug_info: DebugInfo | None = None) -> WrappedFun:
  """Wraps `f` (with `params` as extra keyword arguments) for transformation."""
  if not callable(f):
    raise TypeError(f"wrap_init: the first argument must be callable, got {f!r}")
  params_dict = dict(params or {})
  f_call = functools.partial(f, **params_dict) if params_dict else f
  dbg = debug_info or _missing_debug_info("linear_util.wrap_init")
  return WrappedFun(f, f_call, (), (), tuple(params_dict.items()), None, dbg)


def _curry(f):
  return functools.partial(functools.partial, f)


def transformation2(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
  """Adds `gen(f, *gen_static_args, *args, **kwargs)` on top of `fun`."""
  return fun.wrap(gen, gen_static_args, None)


@_curry
def transformation_with_aux2(gen, fun: WrappedFun, *gen_static_args, use_eq_store=False,
                             unk_names=False):
  """Like transformation2, with `gen(f, store, ...)` storing an auxiliary output."""
  del use_eq_store
  store = Store()
  fun = fun.wrap(gen, gen_static_args, store)
  return (fun.with_unknown_names() if unk_names else fun), (lambda: store.val)


@_curry
def transformation(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
  """The older, generator form: `gen` yields (args, kwargs) and receives the result."""
  def gen2(f, *args, **kwargs):
    g = gen(*args, **kwargs)
    a, kw = next(g)
    return g.send(f(*a, **kw))
  return transformation2(gen2, fun, *gen_static_args)


@_curry
def transformation_with_aux(gen, fun: WrappedFun, *gen_static_args):
  def gen2(f, store, *args, **kwargs):
    g = gen(*args, **kwargs)
    a, kw = next(g)
    ans, aux = g.send(f(*a, **kw))
    store.store(aux)
    return ans
  return transformation_with_aux2(gen2, fun, *gen_static_args)


def merge_linear_aux(aux1, aux2):
  """The one of two stores that was filled, with a flag saying whether it was the first."""
  try:
    out1 = aux1()
  except StoreException:
    try:
      out2 = aux2()
    except StoreException:
      raise StoreException("neither store occupied") from None
    return False, out2
  try:
    aux2()
  except StoreException:
    return True, out1
  raise StoreException("both stores occupied")


def cache(call: Callable, *, explain=None):
  """Memoizes `call(fun, *args)` on the WrappedFun's function, transforms and args."""
  caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

  def memoized(fun: WrappedFun, *args):
    try:
      table = caches.setdefault(fun.f, {})
    except TypeError:
      return call(fun, *args)
    key = (fun.transforms, fun.params, args)
    try:
      hit = table.get(key, _EMPTY)
    except TypeError:
      return call(fun, *args)
    if hit is not _EMPTY:
      ans, stores = hit
      fun.populate_stores(stores)
      return ans
    ans = call(fun, *args)
    table[key] = (ans, fun.stores)
    return ans

  memoized.cache_clear = caches.clear
  return memoized
