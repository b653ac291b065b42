"""JAX's generic call primitives: `call_p` (a `CallPrimitive`: bind a function, it is traced into
an eqn `call[call_jaxpr=...]`) and `closed_call_p` (bind a ClosedJaxpr). Like `jit_p` they run
their jaxpr, and their rules differentiate, transpose and batch it; plus the DCE rules of
`jax.interpreters.partial_eval` for them."""
from __future__ import annotations

from jaxlite._src.base import core
from jaxlite._src.compiler import backend
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.interpreters import ad, batching, linearize
from jaxlite._src.interpreters import partial_eval as pe


def _closed(prim, params) -> core.ClosedJaxpr:
  j = params["call_jaxpr"]
  return j if isinstance(j, core.ClosedJaxpr) else core.ClosedJaxpr(j, [])


def _with_jaxpr(prim, params, closed: core.ClosedJaxpr) -> dict:
  """`params` with `closed` as the call's jaxpr, in the form `prim` keeps (open for call_p:
  its consts become leading operands, see `_open`)."""
  return dict(params, call_jaxpr=closed if prim.closed else closed.jaxpr)


def _open(closed: core.ClosedJaxpr):
  """(a jaxpr reading its consts as leading invars, the consts)."""
  j = closed.jaxpr
  return j.replace(constvars=[], invars=list(j.constvars) + list(j.invars)), list(closed.consts)


class CallPrimitive(core.Primitive):
  """`CallPrimitive(name)`: `bind(fun, *args, **params)` calls `fun` as one eqn."""
  multiple_results = True
  closed = False

  def __init__(self, name):
    super().__init__(name)
    self.def_impl(self._impl)
    self.def_abstract_eval(lambda *avals, call_jaxpr, **params: list(call_jaxpr.out_avals))
    ad.jvp_rules[self] = self._jvp
    ad.linearize_rules[self] = self._linearize
    ad.primitive_transposes[self] = self._transpose
    batching.axis_primitive_batchers[self] = self._batch

  def bind(self, *args, **params):
    # Traces re-bind eqns with their `call_jaxpr`; a user binds a function first.
    if "call_jaxpr" in params:
      return self.bind_jaxpr(*args, **params)
    fun, *args = args
    call = getattr(fun, "call_wrapped", fun)
    avals = [core.get_aval(a) for a in args]
    closed = pe.trace_to_jaxpr(lambda *xs: list(call(*xs)), avals)
    jaxpr, consts = _open(closed)
    return self.bind_jaxpr(*consts, *args, call_jaxpr=jaxpr, **params)

  def bind_jaxpr(self, *args, **params):
    return super().bind(*args, **params)

  def _impl(self, *args, call_jaxpr, **params):
    return backend.compile_jaxpr(_closed(self, {"call_jaxpr": call_jaxpr}))(*args)

  def _jvp(self, primals, tangents, **params):
    closed = _closed(self, params)
    nonzeros = [type(t) is not ad.Zero for t in tangents]
    jvp_closed, nz_out = ad.jvp_jaxpr(closed, nonzeros)
    args = [*primals, *[t for t in tangents if type(t) is not ad.Zero]]
    outs = self._rebind(jvp_closed, args, params)
    n = len(closed.out_avals)
    return outs[:n], _with_zeros(outs[n:], nz_out, closed.out_avals)

  def _linearize(self, primals, tangents, **params):
    closed = _closed(self, params)
    lin = linearize.linearize_jaxpr(closed, [type(t) is not ad.Zero for t in tangents])
    primal_outs, residuals = lin.assemble(primals, self._rebind(lin.primal, primals, params))
    tangent_outs = []
    if any(lin.nz_out):
      nz = [t for t in tangents if type(t) is not ad.Zero]
      tangent_outs = self._rebind(lin.tangent, [*residuals, *nz], params)
    return primal_outs, _with_zeros(tangent_outs, lin.nz_out, closed.out_avals)

  def _transpose(self, cts, *args, **params):
    undefined = [ad.is_undefined_primal(a) for a in args]
    trans, nonzero = ad.transpose_jaxpr(_closed(self, params), undefined,
                                        [type(c) is not ad.Zero for c in cts])
    ins = [a for a in args if not ad.is_undefined_primal(a)]
    ins += [c for c in cts if type(c) is not ad.Zero]
    outs = self._rebind(trans, ins, params) if any(nonzero) else []
    return ad.spread_transposed(args, nonzero, outs)

  def _batch(self, axis_data, vals, dims, **params):
    batched, out_dims = batching.batch_jaxpr(_closed(self, params), axis_data, dims)
    return self._rebind(batched, vals, params), out_dims

  def _rebind(self, closed, args, params):
    if self.closed:
      return self.bind_jaxpr(*args, **_with_jaxpr(self, params, closed))
    jaxpr, consts = _open(closed)
    return self.bind_jaxpr(*consts, *args, **dict(params, call_jaxpr=jaxpr))


class ClosedCallPrimitive(CallPrimitive):
  """`closed_call_p.bind(*args, call_jaxpr=ClosedJaxpr)`: a call of a closed jaxpr."""
  closed = True


def _with_zeros(vals, nonzero, avals):
  it = iter(vals)
  return [next(it) if nz else ad.Zero(ad.tangent_aval(a)) for nz, a in zip(nonzero, avals)]


call_p = CallPrimitive("call")
closed_call_p = ClosedCallPrimitive("closed_call")
# StableHLO: the called jaxpr inlined (call_p's reads its consts as leading operands).
for _p in (call_p, closed_call_p):
  xla.register(_p, lambda ctx, *args, call_jaxpr, **_: ctx.lower_jaxpr(call_jaxpr, None, args))
