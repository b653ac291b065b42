"""Shared by the fuzz-campaign regression files (test_fuzz_regressions_campaign10/11.py): cases
are expressions evaluated with `jnp`, `jax`, `lax`, `np`; their make_jaxpr text, dtypes, weak
types and values are recorded from JAX 0.10.2 in a JSON file (so the tests run without JAX) and
compared with the live JAX too where it is installed."""
import json
import warnings

import numpy as np

import jaxlite
import jaxlite.numpy as jnp


def live_jax():
  """Real JAX, the oracle, or None where it is not installed."""
  try:
    import jax
  except ImportError:
    return None
  return jax


def _env(m, np_):
  return dict(np=np, jnp=np_, jax=m, lax=m.lax)


def _flat_values(o):
  if np.dtype(o.dtype).names:  # float0 (a structured void, unlike ml_dtypes' kind V types)
    return [0.0] * int(np.size(o))
  values = np.real(np.asarray(o)).astype(np.float64).ravel()
  return [None if np.isnan(v) else float(v) for v in values]


def run(case, m, np_):
  """(make_jaxpr text, [output records]) of case (function, arguments, x64) under library `m`."""
  fn, args, x64 = case
  old = m.config.jax_enable_x64
  m.config.update("jax_enable_x64", x64)
  try:
    f = eval(fn, _env(m, np_))  # noqa: S307 - the expressions are the test files' own
    a = eval(args, _env(m, np_))  # noqa: S307
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      text = str(m.make_jaxpr(f)(*a))
      out = f(*a)
    outs = m.tree_util.tree_leaves(out)
    return text, [dict(dtype=str(o.dtype), shape=list(o.shape), weak=bool(getattr(o, "weak_type", False)),
                       values=_flat_values(o)) for o in outs]
  finally:
    m.config.update("jax_enable_x64", old)


def outcome(expr, m, np_):
  """("ok", "") or (exception class name, message) of evaluating `expr` under library `m`."""
  try:
    eval(expr, _env(m, np_))  # noqa: S307 - the expressions are the test files' own
    return ("ok", "")
  except Exception as e:  # noqa: BLE001 - the class and text are what we compare
    return (type(e).__name__, str(e))


def record(cases, path):
  """Writes JAX's records of `cases` to `path` (needs jax)."""
  import jax
  out = []
  for case in cases:
    text, outs = run(case, jax, jax.numpy)
    out.append(dict(fn=case[0], args=case[1], x64=case[2], jaxpr=text, outputs=outs))
  path.write_text(json.dumps(dict(jax_version=jax.__version__, cases=out), indent=1) + "\n")


def load(path):
  return json.loads(path.read_text())["cases"] if path.exists() else []


def ids(recorded):
  return [f"{c['fn']}{c['args']}{'-x64' * c['x64']}" for c in recorded]


def check_staged(rec):
  """jaxlite stages and computes the recorded case as JAX did (values within 2e-6: XLA
  contracts mul-adds); the record is the live JAX's where it is installed."""
  case = (rec["fn"], rec["args"], rec["x64"])
  text, outs = run(case, jaxlite, jnp)
  assert text == rec["jaxpr"]
  assert len(outs) == len(rec["outputs"])
  for got, want in zip(outs, rec["outputs"]):
    assert (got["dtype"], got["shape"], got["weak"]) == (want["dtype"], want["shape"],
                                                         want["weak"])
    expected = np.array([np.nan if v is None else v for v in want["values"]], np.float64)
    actual = np.array([np.nan if v is None else v for v in got["values"]], np.float64)
    np.testing.assert_allclose(actual, expected, rtol=2e-6)
  jax = live_jax()
  if jax is not None:
    assert run(case, jax, jax.numpy)[0] == rec["jaxpr"]


def check_raises_as_jax(expr, cls, message):
  """`expr` raises JAX's class (and, where given, JAX's message) on jaxlite and on live JAX."""
  ours = outcome(expr, jaxlite, jnp)
  assert ours[0] == cls and (message is None or ours[1] == message), ours
  jax = live_jax()
  if jax is not None:
    theirs = outcome(expr, jax, jax.numpy)
    assert theirs[0] == cls and (message is None or theirs[1] == message), theirs


def case_tests(cases, errors, data_path):
  """The three tests every campaign's regression file runs, over its CASES (recorded in
  `data_path`) and ERRORS: the record covers the cases; each case stages and computes as JAX
  did; each bad input raises as JAX does. A module binds them to its own `test_*` names."""
  import pytest
  recorded = load(data_path)

  def test_record_covers_the_cases():
    assert [(c["fn"], c["args"], c["x64"]) for c in recorded] == [tuple(c) for c in cases]

  @pytest.mark.parametrize("rec", recorded, ids=ids(recorded))
  def test_staged_form_and_values_match_jax(rec):
    check_staged(rec)

  @pytest.mark.parametrize("expr,cls,message", errors, ids=[e[0] for e in errors])
  def test_bad_input_raises_as_jax(expr, cls, message):
    check_raises_as_jax(expr, cls, message)

  return (test_record_covers_the_cases, test_staged_form_and_values_match_jax,
          test_bad_input_raises_as_jax)
