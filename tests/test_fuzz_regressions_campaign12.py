"""Regressions for fuzz campaigns 12 and 13's finds (issue 33: campaign 12, device seeds 505-740
all modes, grad seeds 759-; campaign 13, device seeds 2000-2199 and 2200-), each checked against JAX 0.10.2: make_jaxpr text, dtypes, weak types and values are
recorded in tests/data/campaign12_staged.json (so the test runs without JAX) and compared with
the live JAX too where it is installed. Errors carry JAX's class and, where jaxlite words it the
same, JAX's message.

Re-record with `PYTHONPATH=src python tests/test_fuzz_regressions_campaign12.py --record` (needs
jax); the cases are CASES below.
"""
import pathlib
import sys

import pytest

import staged_records

_DATA = pathlib.Path(__file__).parent / "data" / "campaign12_staged.json"

# (function, arguments, x64): the expressions are evaluated with `jnp`, `jax`, `lax`, `np`.
CASES = [
    # seeds 601, 709: deg2rad/rad2deg multiply by lax._const(x, ...): weak like a weak x (the
    # literal prints as a Python float), strong for a strong one
    ("lambda x: jnp.deg2rad(x)", "(2.5,)", False),
    ("lambda x: jnp.rad2deg(x)", "(2.5,)", False),
    ("lambda x: jnp.deg2rad(x)", "(2,)", False),
    ("lambda x: jnp.radians(x)", "(jnp.float32(2.0),)", False),
    ("lambda x: jnp.degrees(x)", "(jnp.array([1.0, 2.0], jnp.bfloat16),)", False),
    ("lambda x: jnp.deg2rad(x)", "(2.5,)", True),
    # seed 572: gelu promotes as jnp's ufuncs do (promote_args_inexact): a weak int stays weak
    ("lambda x: jax.nn.gelu(x)", "(2,)", False),
    ("lambda x: jax.nn.gelu(jnp.broadcast_to(x, (2,)), approximate=False)", "(2,)", False),
    ("lambda x: jax.nn.gelu(x)", "(jnp.int8(3),)", False),
    # seed 605: a `nan` passed to nan_to_num is an operand of its jit, even 0.0 or -0.0 (only
    # the default stays a Python number of the body)
    ("lambda x: jnp.nan_to_num(x, nan=-0.0)", "(np.uint32(6),)", False),
    ("lambda x: jnp.nan_to_num(x, nan=0.0)", "(jnp.array([np.nan, 1.0]),)", False),
    ("lambda x: jnp.nan_to_num(x)", "(jnp.array([np.nan, np.inf]),)", False),
    # seed 628: `.at[]` with a Python int update that fits x's integer dtype takes it as a
    # strong value of that dtype: a weak x is made strong for the scatter, weak again after
    ("lambda x: jnp.stack([x, x]).at[0:].add(0, mode='promise_in_bounds')", "(3,)", False),
    ("lambda x: jnp.stack([x, x]).at[1].set(300)", "(3,)", False),
    ("lambda x: jnp.asarray(x, jnp.int8).at[0].set(300)", "(jnp.array([1, 2]),)", False),
    ("lambda x: x.at[0].mul(True)", "(jnp.array([1, 2], jnp.uint8),)", False),
    # seed 723: var/std's jit takes the axis as it was spelled (axis=1 and axis=-1 are two
    # cache entries, two printed jaxprs `_var` and `_var1`)
    ("lambda x: (jnp.var(x, axis=1), x.var(axis=-1), jnp.std(x, axis=(0, 1)), x.std())",
     "(jnp.ones((2, 3)),)", False),
    ("lambda x: jnp.var(x, axis=[0], keepdims=True)", "(jnp.arange(6.0).reshape(2, 3),)", False),
    # campaign 13, seed 2003: spacing steps with lax.nextafter toward an infinity weak like x
    # (no promotion: a weak x stays weak until the final where)
    ("lambda x: jnp.spacing(jnp.logaddexp(x, 0))", "(jnp.array([True, False]),)", False),
    ("lambda x: jnp.spacing(x)", "(1.0,)", False),
    ("lambda x: jnp.spacing(x)", "(jnp.array([0.0, -0.0, 1e-45, np.inf, np.nan]),)", False),
    ("lambda x: jnp.spacing(x)", "(jnp.float16(1.0),)", False),
    # seed 2010: kron expands dims as JAX does (nothing for 0-d operands), and jnp.reshape of a
    # 0-d array to () is a reshape eqn (as lax.reshape's)
    ("lambda x: jnp.kron(x, x)", "(jnp.float16(2.0),)", False),
    ("lambda x: jnp.kron(x, 2.0)", "(jnp.ones(2),)", False),
    ("lambda x, y: jnp.kron(x, y)", "(jnp.arange(6).reshape(2, 3), jnp.arange(4.0))", False),
    ("lambda x: (jnp.reshape(x, ()), x.reshape(()), jnp.reshape(x, (1,)))", "(jnp.float32(1.0),)",
     False),
    # seed 2070: `.at[idx].multiply` of a bool array whose window x[idx] is empty stages no
    # scatter (no dtype check), eagerly too
    ("lambda x: x.at[jnp.array([0, -1, 2])].multiply(False, mode='drop')",
     "(jnp.zeros((2, 0), bool),)", False),
    # local seed 2422: the nan reductions', count_nonzero's and ptp's jits key the axis as
    # spelled too (axis=(0,) and axis=0: `nansum` and `nansum1`)
    ("lambda x: (jnp.nansum(x, axis=(0,), keepdims=True), jnp.nansum(x, axis=0, keepdims=True),"
     " jnp.ptp(x, 0), jnp.ptp(x, -2), jnp.nanvar(x, 1), jnp.nanvar(x, (1,)))",
     "(jnp.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.nan]]),)", False),
    ("lambda x: (jnp.nanmax(x, -1), jnp.nanmean(x, (1, 0)), jnp.nanstd(x, 0),"
     " jnp.count_nonzero(x, axis=(0, 1)))", "(jnp.array([[1.0, np.nan, 3.0], [4.0, 5.0, 0.0]]),)",
     False),
]

# (expression, JAX's exception class, JAX's message or None where jaxlite's words differ)
ERRORS = [
    # seeds 532, 570, 722: an internal jit checks its arguments' leaves before it runs, eager
    # too: a string inside a bound is the jit's TypeError (at its path), not a conversion error
    ("jnp.clip(jnp.ones(3), (1, 'b'))", "TypeError", None),
    ("jnp.clip(jnp.ones(3), 1, 'b')", "TypeError", None),
    ("jnp.clip(jnp.int8(1), ['a'])", "TypeError", None),
    # seed 547: norm's axes are canonicalized strictly (a 0-d array has no axis 0; -2 of a
    # vector is out of bounds, where jaxlite used to wrap it round and return a value)
    ("jnp.linalg.norm(jnp.float16(2.0), ord=0, axis=0, keepdims=True)", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
    ("jnp.linalg.norm(jnp.ones(3), axis=-2)", "ValueError",
     "axis -2 is out of bounds for array of dimension 1"),
    ("jnp.linalg.norm(jnp.ones(3), ord=2, axis=1)", "ValueError",
     "axis 1 is out of bounds for array of dimension 1"),
    ("jnp.linalg.norm(jnp.ones((2, 3)), axis=(0, 2))", "ValueError",
     "axis 2 is out of bounds for array of dimension 2"),
    ("jnp.linalg.norm(jnp.ones((2, 3)), axis=(0, -2))", "ValueError",
     "duplicate value in 'axis': (0, 0)"),
    ("jnp.linalg.norm(jnp.ones((2, 3)), ord=2, axis=(1, 1))", "TypeError", None),
    # JAX's nan reductions and count_nonzero pass a list axis to their jit untouched
    ("jnp.nansum(jnp.ones((2, 2)), axis=[0, 1])", "ValueError",
     "Non-hashable static arguments are not supported. An error occurred while trying to hash "
     "an object of type <class 'list'>, [0, 1]. The error was:\nTypeError: unhashable type: "
     "'list'\n"),
    ("jnp.count_nonzero(jnp.ones((2, 2)), axis=[0])", "ValueError", None),
    ("jnp.zeros((0, 2), bool).at[jnp.array([0])].multiply(False)", "TypeError",
     "mul does not accept dtype bool at position 0. Accepted dtypes at position 0 are subtypes "
     "of integer, floating, complexfloating."),
]


(test_record_covers_the_cases, test_staged_form_and_values_match_jax,
 test_bad_input_raises_as_jax) = staged_records.case_tests(CASES, ERRORS, _DATA)


@pytest.mark.parametrize("expr,path", [("jnp.clip(jnp.ones(3), (1, 'b'))", "min[1]"),
                                       ("jnp.clip(jnp.ones(3), 1, 'b')", "max"),
                                       ("jnp.clip(jnp.int8(1), ['a'])", "min[0]")])
def test_internal_jit_names_the_bad_leaf_as_jax(expr, path):
  """The message is JAX's jit's, naming jnp's function and the argument's path (the address
  in `<function clip at 0x…>` differs from run to run)."""
  import re
  for m in filter(None, (staged_records.jaxlite, staged_records.live_jax())):
    cls, msg = staged_records.outcome(expr, m, m.numpy)
    assert cls == "TypeError"
    assert re.match(r"Error interpreting argument to <function clip at 0x[0-9a-f]+> as an "
                    r"abstract array\. The problematic value is of type <class 'str'> and was "
                    rf"passed to the function at path {re.escape(path)}\.", msg), msg


if __name__ == "__main__" and "--record" in sys.argv:
  staged_records.record(CASES, _DATA)
