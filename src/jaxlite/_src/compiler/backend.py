"""The backend seam: what compiles a closed jaxpr into an executable and owns its buffers.

Every place that runs a jaxpr (jit, scan/while/cond bodies, custom rules, checkpoint, the eager
paths that compile small jaxprs) calls `compile_jaxpr` / `compile_scan` here, which dispatch to
the installed backend. A backend is data plus one `compile`: see compiler/README.md.
"""
from __future__ import annotations

import contextlib
import weakref
from collections import ChainMap

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import devices as devices_lib


class FlagTable:
  """A set of primitives layered over a parent's set: own additions and removals win, and
  later registrations into the parent show through (the layers are looked up live)."""
  __slots__ = ("_on", "_off", "parent")

  def __init__(self, parent: FlagTable | set | None = None):
    self._on, self._off, self.parent = set(), set(), parent

  def add(self, prim) -> None:
    self._on.add(prim)
    self._off.discard(prim)

  def update(self, prims) -> None:
    for p in prims:
      self.add(p)

  def discard(self, prim) -> None:
    self._off.add(prim)
    self._on.discard(prim)

  def __contains__(self, prim) -> bool:
    if prim in self._on:
      return True
    if prim in self._off or self.parent is None:
      return False
    return prim in self.parent


class LoweringTables:
  """A backend's lowering data, each table layered over its parent backend's (override merge).

  templates      primitive -> fn(**params) -> format string over argument names, or None
  eqn_templates  primitive -> fn(eqn) -> format string, or None to fall back to `templates`
  impls          primitive -> callable(*buffers, **params) used where no template applies;
                 absent means the primitive's own eager impl (`prim.impl`)
  inplace        primitive -> kernel(operand, *rest, **params) writing the result into its
                 first operand and returning it (used when that operand is a dying buffer the
                 function owns: a donated input or a fresh result)
  ufuncs         primitives whose template is one ufunc call (may take `out=`)
  quiet          primitives whose template may raise floating-point warnings JAX never shows
  fresh_outputs  primitives whose result never aliases an input (its buffer may be reused)

  A child masks a parent's template or kernel by mapping the primitive to None, and a flag by
  `discard`.
  """
  MAPS = ("templates", "eqn_templates", "impls", "inplace")
  FLAGS = ("ufuncs", "quiet", "fresh_outputs")

  def __init__(self, parent: LoweringTables | None = None):
    # Root tables are a plain dict and set, as fast to read as before backends existed; derived
    # ones are live layers over them.
    self.parent = parent
    for name in self.MAPS:
      if parent is None:
        setattr(self, name, {})
      else:
        up = getattr(parent, name)
        setattr(self, name, ChainMap({}, *(up.maps if isinstance(up, ChainMap) else [up])))
    for name in self.FLAGS:
      setattr(self, name, set() if parent is None else FlagTable(getattr(parent, name)))

  def derive(self, **overrides) -> LoweringTables:
    """Child tables over these: `overrides` maps a table name to entries (dicts for the maps,
    iterables of primitives for the flags) that take precedence over this layer."""
    child = LoweringTables(self)
    for name, entries in overrides.items():
      if name in self.MAPS:
        getattr(child, name).update(entries)
      elif name in self.FLAGS:
        getattr(child, name).update(entries)
      else:
        raise TypeError(f"LoweringTables.derive got an unknown table {name!r}; expected one of "
                        f"{', '.join(self.MAPS + self.FLAGS)}")
    return child

  def kernel(self, prim):
    """The callable that runs `prim` where no template applies."""
    impl = self.impls.get(prim)
    return prim.impl if impl is None else impl


class Backend:
  """A platform's compiler and buffer owner.

  Subclasses set `name`, `platform` and `tables`, and implement `compile`. An executable is a
  callable of the backend's buffers (one per jaxpr input) returning the sequence of output
  buffers; `as_text` gives what `Compiled.as_text()` shows.
  """
  name: str = "abstract"
  platform: str = "cpu"
  tables: LoweringTables

  def __init__(self):
    self._scan_loops = weakref.WeakKeyDictionary()

  def devices(self) -> list:
    """The devices whose buffers this backend holds."""
    return [d for d in devices_lib.devices() if d.platform == self.platform]

  def compile(self, closed: core.ClosedJaxpr):
    raise NotImplementedError(f"backend {self.name!r} does not implement compile")

  def compile_donating(self, closed: core.ClosedJaxpr, donated: tuple):
    """An executable of `closed` that may overwrite the buffers of inputs `donated` (indices;
    jit's donation, whose caller gave them up). Reuse is an optimisation: by default, none."""
    return self.compile(closed)

  def compile_scan(self, closed: core.ClosedJaxpr, num_consts: int, num_carry: int,
                   reverse: bool):
    """`fn(*consts, *carry, *xs, *ys, length) -> carry` writing each step's ys in place.

    This default loops over `compile(closed)`; a backend may fuse the loop instead."""
    body = compile_jaxpr(closed, self)
    n_in = num_consts + num_carry

    def loop(*args):
      consts, carry = args[:num_consts], args[num_consts:n_in]
      n_x = len(closed.in_avals) - n_in
      xs, ys, length = args[n_in:n_in + n_x], args[n_in + n_x:-1], args[-1]
      for i in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = body(*consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for y, v in zip(ys, outs[num_carry:]):
          y[i] = v
      return tuple(carry)
    return loop

  def compile_while(self, cond: core.ClosedJaxpr, body: core.ClosedJaxpr, cond_nconsts: int,
                    body_nconsts: int):
    """`fn(*cond_consts, *body_consts, *carry) -> carry` running the whole while loop, or None
    (the default): while_p's impl then loops in Python over `compile_jaxpr` of each."""
    return None

  def clear_caches(self) -> None:
    self._scan_loops.clear()
    getattr(self, "_while_loops", {}).clear()

  def resolve(self) -> Backend:
    """The backend this one stands for: itself, except for a placeholder whose code loads on
    first use (tier 1's `PendingTier1`), which loads it and installs the real one."""
    return self

  def as_text(self, executable) -> str:
    return getattr(executable, "__jaxlite_source__", repr(executable))

  # -- buffers ------------------------------------------------------------------------------
  def to_device(self, host_value: np.ndarray, device=None):
    """A buffer of this backend holding `host_value` (on `device`, else the default one)."""
    raise NotImplementedError(f"backend {self.name!r} does not implement to_device")

  def to_host(self, buffer) -> np.ndarray:
    raise NotImplementedError(f"backend {self.name!r} does not implement to_host")

  def __repr__(self):
    return f"<{type(self).__name__} {self.name!r}>"


# --- the registry and the one entry point ----------------------------------------------------

_backends: dict = {}
_lazy_backends: dict = {}  # name -> module that registers it when imported


class _State:
  __slots__ = ("current",)

  def __init__(self):
    self.current = None


_state = _State()


def register_backend(backend: Backend, default: bool = False) -> Backend:
  _backends[backend.name] = backend
  if default or _state.current is None:
    _state.current = backend
  return backend


def clear_backend_caches() -> None:
  """Empties every registered backend's own caches, and the installed one's (an unregistered
  placeholder: tiers.PendingTier1) (`jax.clear_caches`)."""
  for b in {*_backends.values(), _state.current}:
    b.clear_caches()


def register_lazy_backend(name: str, module: str) -> None:
  """`get_backend(name)` imports `module` (which registers the backend) on first ask."""
  _lazy_backends[name] = module


def get_backend(name: str | None = None) -> Backend:
  """The installed backend (loaded, where it was a placeholder), or the one named `name`."""
  if name is None:
    return _state.current.resolve()
  if name not in _backends and name in _lazy_backends:
    import importlib
    importlib.import_module(_lazy_backends[name])
  try:
    return _backends[name]
  except KeyError:
    raise RuntimeError(f"Unknown backend {name!r}; known backends: "
                       f"{', '.join(sorted({*_backends, *_lazy_backends}))}") from None


def installed() -> Backend:
  """The installed backend as it is, a placeholder included (compiles without loading more)."""
  return _state.current


def install_backend(backend: Backend) -> Backend:
  """Makes `backend` compile every jaxpr compiled from now on; returns the previous one.
  jit cache entries keep the executable they already built."""
  prev, _state.current = _state.current, backend
  return prev


@contextlib.contextmanager
def using_backend(backend: Backend):
  prev = install_backend(backend)
  try:
    yield backend
  finally:
    install_backend(prev)


# Buffer type -> name of the backend that owns such buffers: a backend whose Arrays hold
# non-NumPy buffers registers their type here when it loads (as it registers its eager route in
# `core.eager_routes`), so that jit calls on them compile through it.
buffer_backends: dict = {}
# While an XLA backend is the default (compiler/xla/platforms.py): the NumPy backend it replaced,
# which runs jit calls on arrays committed to NumPy's CPU device (`device_put(x, cpu)`).
host_backend = None


def backend_for_arguments(args) -> Backend:
  """The backend a jit call on `args` (flat arguments) compiles and runs on: the owner of the
  first argument buffer of a registered type (`buffer_backends`), else the installed backend
  (the NumPy family, tier 0 or 1, on the CPU; a placeholder as it is: it loads on compile)."""
  if buffer_backends:
    at = core.array_type
    for a in args:
      if type(a) is at or type(a) is core.key_array_type:
        name = buffer_backends.get(type(a._value))
        if name is not None:
          return get_backend(name)
    if host_backend is not None:
      for a in args:
        if type(getattr(a, "_device", None)) is devices_lib.CpuDevice:
          return host_backend
  return _state.current


def compile_jaxpr(closed: core.ClosedJaxpr, backend: Backend | None = None):
  """The executable of `closed` on `backend` (the installed one by default), cached on the
  jaxpr for the backend that compiled it last."""
  b = _state.current if backend is None else backend
  hit = closed._compiled
  if hit is not None:
    if hit[0] is b:
      return hit[1]
    if getattr(hit[0], "resolved", None) is b:
      # Compiled by the placeholder `b` replaced: the same code `b` makes of it.
      closed._compiled = (b, hit[1])
      return hit[1]
  exe = b.compile(closed)
  closed._compiled = (b, exe)
  return exe


# Hooks that may wrap a jit program's executable: fn(closed, executable, backend) -> executable.
# The background XLA tier (compiler/xla_tier.py) fills it; the bodies of loops and branches,
# which compile through `compile_jaxpr` alone, are never wrapped (XLA sees a whole program).
program_hooks: list = []


def compile_program(closed: core.ClosedJaxpr):
  """The executable of a jit program (a jit cache entry's) on the installed backend:
  `compile_jaxpr`'s, passed through the program hooks."""
  return wrap_program(closed, compile_jaxpr(closed))


def wrap_program(closed: core.ClosedJaxpr, executable, backend: Backend | None = None):
  """`executable` of jit program `closed` (on `backend`, the installed one by default) passed
  through the program hooks."""
  b = _state.current if backend is None else backend
  for hook in program_hooks:
    executable = hook(closed, executable, b)
  return executable


def compile_while(cond: core.ClosedJaxpr, body: core.ClosedJaxpr, cond_nconsts: int,
                  body_nconsts: int, backend: Backend | None = None):
  """The installed backend's whole while loop of (cond, body), or None (cached per backend and
  body jaxpr; the default Backend answers None at the cost of one lookup)."""
  b = _state.current if backend is None else backend
  if type(b).compile_while is Backend.compile_while:
    return None
  loops = b.__dict__.get("_while_loops")
  if loops is None:
    loops = b._while_loops = weakref.WeakKeyDictionary()
  per_body = loops.get(body)
  if per_body is None:
    per_body = loops[body] = {}
  key = (id(cond), cond_nconsts, body_nconsts)
  hit = per_body.get(key)
  if hit is None or hit[0] is not cond:
    hit = per_body[key] = (cond, b.compile_while(cond, body, cond_nconsts, body_nconsts))
  return hit[1]


def while_python(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """The while loop in Python over the backend's compiled cond and body."""
  from jaxlite._src.base.list_util import split_list  # (import speed)
  cconsts, bconsts, carry = split_list(args, [cond_nconsts, body_nconsts])
  cond_fn = compile_jaxpr(cond_jaxpr)
  body_fn = compile_jaxpr(body_jaxpr)
  if cond_jaxpr.out_avals[0].shape:
    return _batched_while(cond_fn, body_fn, cconsts, bconsts, carry)
  while cond_fn(*cconsts, *carry)[0]:
    carry = body_fn(*bconsts, *carry)
  return carry


def _batched_while(cond_fn, body_fn, cconsts, bconsts, carry):
  """A vmapped predicate: loop while any example goes on; the others keep their carry."""
  pred = cond_fn(*cconsts, *carry)[0]
  while pred.any():
    new = body_fn(*bconsts, *carry)
    carry = [np.where(pred.reshape(pred.shape + (1,) * (np.ndim(c) - pred.ndim)), n, c)
             for n, c in zip(new, carry)]
    pred = cond_fn(*cconsts, *carry)[0]
  return carry


def compile_scan(closed: core.ClosedJaxpr, num_consts: int, num_carry: int, reverse: bool,
                 backend: Backend | None = None):
  """The scan loop of a body jaxpr on `backend` (cached per backend and jaxpr)."""
  b = _state.current if backend is None else backend
  per_jaxpr = b._scan_loops.get(closed)
  if per_jaxpr is None:
    per_jaxpr = b._scan_loops[closed] = {}
  key = (num_consts, num_carry, reverse)
  fn = per_jaxpr.get(key)
  if fn is None:
    fn = per_jaxpr[key] = b.compile_scan(closed, num_consts, num_carry, reverse)
  return fn
