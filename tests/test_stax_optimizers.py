"""jax.example_libraries.stax and .optimizers: every layer and optimizer against JAX on the same
keys (parameters, output shapes, outputs), plus known answers that need no JAX."""
import pickle

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle
from jaxlite.example_libraries import optimizers as O
from jaxlite.example_libraries import stax as S

X4 = np.random.RandomState(0).randn(2, 6, 6, 3).astype(np.float32)
X3 = np.random.RandomState(1).randn(2, 7, 3).astype(np.float32)
X2 = np.random.RandomState(2).randn(4, 5).astype(np.float32)

# name -> (make_layer(stax_module), input) ; each builds the layer from whichever stax is given.
LAYERS = {
    "Dense": (lambda s: s.Dense(4), X2),
    "Conv_same_strided": (lambda s: s.Conv(4, (3, 3), (2, 2), "SAME"), X4),
    "Conv_valid": (lambda s: s.Conv(2, (2, 3)), X4),
    "GeneralConv_NCHW": (lambda s: s.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (2, 2)),
                         X4.transpose(0, 3, 1, 2)),
    "ConvTranspose_same": (lambda s: s.ConvTranspose(2, (3, 3), (2, 2), "SAME"), X4),
    "ConvTranspose_valid": (lambda s: s.ConvTranspose(2, (2, 2), (2, 2)), X4),
    "Conv1DTranspose": (lambda s: s.Conv1DTranspose(4, (3,), (2,), "SAME"), X3),
    "BatchNorm": (lambda s: s.BatchNorm(), X4),
    "BatchNorm_axis0_center_only": (lambda s: s.BatchNorm(axis=0, scale=False), X2),
    "BatchNorm_scale_only": (lambda s: s.BatchNorm(axis=(0,), center=False), X2),
    "MaxPool": (lambda s: s.MaxPool((2, 2), (2, 2)), X4),
    "SumPool_same": (lambda s: s.SumPool((3, 3), (2, 2), "SAME"), X4),
    "AvgPool_same": (lambda s: s.AvgPool((3, 3), (2, 2), "SAME"), X4),
    "AvgPool_spec": (lambda s: s.AvgPool((2, 2), spec="NCHW"), X4.transpose(0, 3, 1, 2)),
    "Flatten": (lambda s: s.Flatten, X4),
    "Identity": (lambda s: s.Identity, X2),
    "FanOut_FanInSum": (lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(5), s.Identity),
                                           s.FanInSum), X2),
    "FanInConcat": (lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Dense(2)),
                                       s.FanInConcat()), X2),
    "shape_dependent": (lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1] * 2)), X2),
    "mlp": (lambda s: s.serial(s.Dense(8), s.Relu, s.Dense(8), s.Gelu, s.Dense(3),
                               s.LogSoftmax), X2),
    "cnn": (lambda s: s.serial(s.Conv(4, (3, 3), padding="SAME"), s.BatchNorm(), s.Elu,
                               s.MaxPool((2, 2), (2, 2)), s.Flatten, s.Dense(3), s.Softmax), X4),
}
for _name in ["Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu",
              "LeakyRelu", "Selu", "Gelu"]:
  LAYERS[_name] = ((lambda n: lambda s: getattr(s, n))(_name), X2)


def _leaves(tree_module, x):
  return [np.asarray(v) for v in tree_module.leaves(x)]


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_jax(name):
  real = oracle()
  from jax.example_libraries import stax as real_stax
  make, x = LAYERS[name]
  in_shape = (-1,) + x.shape[1:]
  got_shape, got_params = make(S)[0](jax.random.key(3), in_shape)
  want_shape, want_params = make(real_stax)[0](real.random.key(3), in_shape)
  assert tuple(map(int, got_shape)) == tuple(map(int, want_shape))
  got_p, want_p = _leaves(jax.tree, got_params), _leaves(real.tree, want_params)
  assert [p.shape for p in got_p] == [p.shape for p in want_p]
  for g, w in zip(got_p, want_p):   # initializers: same bits, transcendental ulps
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
  got = np.asarray(make(S)[1](got_params, jnp.asarray(x)))
  want = np.asarray(make(real_stax)[1](want_params, x))
  assert got.shape == want.shape == tuple(x.shape[:1]) + tuple(want_shape[1:])
  np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_init_shapes_known():
  cases = [(S.Conv(4, (3, 3), (2, 2), "SAME"), (-1, 6, 6, 3), (-1, 3, 3, 4)),
           (S.Conv(4, (3, 3)), (1, 6, 6, 3), (1, 4, 4, 4)),
           (S.ConvTranspose(2, (3, 3), (2, 2), "SAME"), (1, 6, 6, 3), (1, 12, 12, 2)),
           (S.ConvTranspose(2, (3, 3), (2, 2), "VALID"), (1, 6, 6, 3), (1, 13, 13, 2)),
           (S.MaxPool((2, 2), (2, 2)), (5, 6, 7, 3), (5, 3, 3, 3)),
           (S.AvgPool((3, 3), (2, 2), "SAME"), (5, 6, 7, 3), (5, 3, 4, 3)),
           (S.Flatten, (5, 2, 3), (5, 6)), (S.Dense(7), (5, 2, 3), (5, 2, 7)),
           (S.FanInConcat(1), [(2, 3), (2, 4)], (2, 7))]
  for (init, _), shape, want in cases:
    assert tuple(init(jax.random.key(0), shape)[0]) == want


def test_layer_values_known():
  _, apply = S.AvgPool((2, 2), (2, 2))
  x = jnp.arange(16.).reshape(1, 4, 4, 1)
  np.testing.assert_array_equal(np.asarray(apply((), x))[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])
  _, apply = S.Dense(2)
  np.testing.assert_array_equal(np.asarray(apply((jnp.eye(2), jnp.ones(2)), jnp.array([[1., 2.]]))),
                                [[2., 3.]])
  _, apply = S.Dropout(0.5)
  with pytest.raises(ValueError, match="Dropout layer requires apply_fun"):
    apply((), x)
  kept = np.asarray(apply((), x + 1, rng=jax.random.key(0)))
  assert set(np.unique(kept)) <= {0.0} | set(2 * (np.arange(16.) + 1))
  np.testing.assert_array_equal(S.Dropout(0.5, "test")[1]((), x, rng=jax.random.key(0)), x)


def test_dropout_matches_jax():
  real = oracle()
  from jax.example_libraries import stax as real_stax
  got = S.serial(S.Dense(3), S.Dropout(0.7))
  want = real_stax.serial(real_stax.Dense(3), real_stax.Dropout(0.7))
  _, gp = got[0](jax.random.key(1), (4, 5))
  _, wp = want[0](real.random.key(1), (4, 5))
  g = np.asarray(got[1](gp, X2, rng=jax.random.key(2)))
  w = np.asarray(want[1](wp, X2, rng=real.random.key(2)))
  np.testing.assert_array_equal(g == 0, w == 0)
  np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


OPTIMIZERS = {
    "sgd": (0.1,), "momentum": (0.1, 0.9), "nesterov": (0.1, 0.9), "adagrad": (0.1,),
    "rmsprop": (0.1,), "rmsprop_momentum": (0.1,), "adam": (0.1,), "adamax": (0.1,),
    "sm3": (0.1,),
}
PARAMS = {"w": np.arange(6., dtype=np.float32).reshape(2, 3) / 7,
          "b": [np.float32(0.5), np.array([1., -2.], np.float32)]}


def _run(opt_module, tree_module, name, args, steps=4):
  init, update, get_params = getattr(opt_module, name)(*args)
  state = init(PARAMS)
  for i in range(steps):
    grads = tree_module.map(lambda p: p * p - 0.3 * p + 0.1, get_params(state))
    state = update(i, grads, state)
  return state, get_params(state)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_matches_jax(name):
  real = oracle()
  from jax.example_libraries import optimizers as real_opt
  _, got = _run(O, jax.tree, name, OPTIMIZERS[name])
  _, want = _run(real_opt, real.tree, name, OPTIMIZERS[name])
  for g, w in zip(_leaves(jax.tree, got), _leaves(real.tree, want)):
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_sgd_and_momentum_known():
  init, update, get = O.sgd(0.5)
  s = update(0, {"a": jnp.array([2.])}, init({"a": jnp.array([1.])}))
  np.testing.assert_array_equal(np.asarray(get(s)["a"]), [0.])
  init, update, get = O.momentum(1.0, 0.5)
  s = init(jnp.array(0.))
  for i in range(3):
    s = update(i, jnp.array(1.), s)   # velocities 1, 1.5, 1.75
  np.testing.assert_allclose(float(get(s)), -4.25)


def test_optimizer_state_is_pytree_and_packs():
  state, _ = _run(O, jax.tree, "adam", (0.1,), steps=2)
  leaves, treedef = jax.tree.flatten(state)
  assert len(leaves) == 9 and isinstance(jax.tree.unflatten(treedef, leaves), O.OptimizerState)
  doubled = jax.tree.map(lambda x: x * 2, state)
  assert isinstance(doubled, O.OptimizerState)
  unpacked = pickle.loads(pickle.dumps(O.unpack_optimizer_state(state)))
  repacked = O.pack_optimizer_state(unpacked)
  assert repacked.tree_def == state.tree_def and repacked.subtree_defs == state.subtree_defs
  for a, b in zip(jax.tree.leaves(repacked), jax.tree.leaves(state)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  with pytest.raises(TypeError, match="did not match the parameter tree"):
    O.adam(0.1)[1](0, [1.0], state)
  new_state = jax.jit(lambda s: O.adam(0.1)[1](2, O.adam(0.1)[2](s), s))(state)
  assert isinstance(new_state, O.OptimizerState)


SCHEDULES = [
    (O.constant(0.3), [0, 5], [0.3, 0.3]),
    (O.exponential_decay(1.0, 10, 0.5), [0, 10, 20], [1.0, 0.5, 0.25]),
    (O.inverse_time_decay(1.0, 10, 1.0), [0, 10, 5], [1.0, 0.5, 1 / 1.5]),
    (O.inverse_time_decay(1.0, 10, 1.0, staircase=True), [5, 10, 25], [1.0, 0.5, 1 / 3]),
    (O.polynomial_decay(1.0, 10, 0.0), [0, 5, 10, 20], [1.0, 0.5, 0.0, 0.0]),
    (O.polynomial_decay(1.0, 10, 0.1, power=2.0), [5], [0.325]),
    (O.piecewise_constant([5, 10], [1.0, 0.1, 0.01]), [0, 5, 6, 10, 11], [1, 1, .1, .1, .01]),
]


@pytest.mark.parametrize("k", range(len(SCHEDULES)))
def test_schedules_known(k):
  schedule, steps, want = SCHEDULES[k]
  for i, w in zip(steps, want):
    np.testing.assert_allclose(float(schedule(jnp.asarray(i))), w, rtol=1e-6)


def test_schedule_errors_and_utilities():
  with pytest.raises(TypeError):
    O.make_schedule([0.1, 0.2])
  with pytest.raises(ValueError, match="one shorter"):
    O.piecewise_constant([1, 2], [1.0, 2.0])
  tree = {"a": jnp.array([3., 0.]), "b": jnp.array(4.)}
  np.testing.assert_allclose(float(O.l2_norm(tree)), 5.0)
  clipped = O.clip_grads(tree, 1.0)
  np.testing.assert_allclose(float(O.l2_norm(clipped)), 1.0, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(clipped["a"]), [0.6, 0.0], rtol=1e-6)
  assert O.clip_grads(tree, 10.0)["b"] == 4.0
