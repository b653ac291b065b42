"""jit's ahead-of-time stages (`jit(f).trace(...)`, `.lower()`, `.compile()`): `Traced`, `Lowered`
and `Compiled` over one trace cache entry of a jit wrapper (jit_function.py builds the first).
"""
from __future__ import annotations

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base import tree_util
from jaxlite._src.compiler import backend
from jaxlite._src.transforms.call_primitives import as_traceable_arg
from jaxlite._src.transforms.jit_arguments import placement_arg_name
from jaxlite._src.transforms.stage_info import CompiledInfo, StageInfo

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
        bad.append(f"Argument '{placement_arg_name(path, self._fn._fun)}' compiled with "
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
