"""`jax.scipy.spatial.transform`: Rotation conversions, algebra and Slerp against scipy's
Rotation (float64 reference) and against JAX where installed."""
import numpy as np
import pytest

import jaxlite as jl
from jaxlite.scipy.spatial.transform import Rotation, Slerp
from conftest import oracle

SR = pytest.importorskip("scipy.spatial.transform").Rotation
RNG = np.random.default_rng(1)
Q = RNG.normal(size=(6, 4)).astype(np.float32)
Q[5] = [0, 0, np.sin(0.5), np.cos(0.5)]
V = RNG.normal(size=(6, 3)).astype(np.float32)
RV = RNG.normal(size=(6, 3)).astype(np.float32)
RV[0] = 1e-5
ANG = RNG.uniform(-3, 3, size=(6, 3)).astype(np.float32)
SEQS = ["xyz", "ZXZ", "zyx", "XYX", "yzy", "YXZ"]
R, S = Rotation.from_quat(Q), SR.from_quat(Q.astype(float))


def _same_rotation(q1, q2, atol=2e-6):
  # q and -q are the same rotation
  q1, q2 = np.asarray(q1, float), np.asarray(q2, float)
  sign = np.sign(np.sum(q1 * q2, axis=-1, keepdims=True))
  np.testing.assert_allclose(q1, sign * q2, atol=atol)


CASES = [
    ("as_matrix", lambda: R.as_matrix(), lambda: S.as_matrix()),
    ("as_rotvec", lambda: R.as_rotvec(), lambda: S.as_rotvec()),
    ("as_rotvec_deg", lambda: R.as_rotvec(degrees=True), lambda: S.as_rotvec(degrees=True)),
    ("as_mrp", lambda: R.as_mrp(), lambda: S.as_mrp()),
    ("as_quat_canonical", lambda: R.as_quat(canonical=True, scalar_first=True),
     lambda: S.as_quat(canonical=True, scalar_first=True)),
    *[(f"as_euler_{s}", lambda s=s: R.as_euler(s), lambda s=s: S.as_euler(s)) for s in SEQS],
    *[(f"from_euler_{s}", lambda s=s: Rotation.from_euler(s, ANG).as_matrix(),
       lambda s=s: SR.from_euler(s, ANG.astype(float)).as_matrix()) for s in SEQS],
    ("from_euler_deg", lambda: Rotation.from_euler("zy", [30., 45.], degrees=True).as_matrix(),
     lambda: SR.from_euler("zy", [30., 45.], degrees=True).as_matrix()),
    ("from_matrix", lambda: Rotation.from_matrix(S.as_matrix().astype(np.float32)).as_matrix(),
     lambda: S.as_matrix()),
    ("from_rotvec", lambda: Rotation.from_rotvec(RV).as_matrix(),
     lambda: SR.from_rotvec(RV.astype(float)).as_matrix()),
    ("from_mrp", lambda: Rotation.from_mrp(RV * 0.3).as_matrix(),
     lambda: SR.from_mrp(RV.astype(float) * 0.3).as_matrix()),
    ("apply", lambda: R.apply(V), lambda: S.apply(V)),
    ("apply_inverse", lambda: R.apply(V, inverse=True), lambda: S.apply(V, inverse=True)),
    ("mul", lambda: (R * R[::-1]).as_matrix(), lambda: (S * S[::-1]).as_matrix()),
    ("inv", lambda: R.inv().as_matrix(), lambda: S.inv().as_matrix()),
    ("magnitude", lambda: R.magnitude(), lambda: S.magnitude()),
    ("mean", lambda: R.mean(np.arange(6.)).as_matrix(), lambda: S.mean(np.arange(6.)).as_matrix()),
    ("index", lambda: R[2].as_matrix(), lambda: S[2].as_matrix()),
]


@pytest.mark.parametrize("name, ours, ref", CASES, ids=[c[0] for c in CASES])
def test_vs_scipy(name, ours, ref):
  np.testing.assert_allclose(np.asarray(ours(), float), ref(), atol=3e-6, err_msg=name)


def test_slerp_vs_scipy_and_jax():
  from scipy.spatial.transform import Slerp as SSlerp
  t = np.array([0., 0.3, 2.5, 4.9, 5.])
  ours = Slerp.init(np.arange(6.), R)
  np.testing.assert_allclose(ours(t).as_matrix(), SSlerp(np.arange(6.), S)(t).as_matrix(),
                             atol=3e-6)
  assert ours(1.5).single
  jax = oracle()
  from jax.scipy.spatial.transform import Rotation as JR, Slerp as JS
  np.testing.assert_allclose(ours(t).quat, JS.init(np.arange(6.), JR.from_quat(Q))(t).quat,
                             atol=2e-6)
  del jax


def test_structure_and_pytree():
  assert Rotation.concatenate([R[:2], R[3]]).quat.shape == (3, 4) and len(R) == 6
  assert Rotation.identity(3).quat.shape == (3, 4) and Rotation.identity().single
  with pytest.raises(TypeError, match="Single rotation"):
    len(R[0])
  # a NamedTuple: a pytree that crosses jit and vmap
  mats = jl.jit(lambda r: r.as_matrix())(R)
  np.testing.assert_allclose(mats, S.as_matrix(), atol=3e-6)
  np.testing.assert_allclose(jl.vmap(lambda q: Rotation(q).magnitude())(R.quat), S.magnitude(),
                             atol=3e-6)
  # d magnitude / d angle of a rotation about z is 1
  g = jl.grad(lambda a: Rotation.from_euler("z", a).magnitude())(0.7)
  np.testing.assert_allclose(g, 1.0, rtol=1e-5)


def test_random_is_uniform():
  r = Rotation.random(jl.random.key(0), 2000)
  np.testing.assert_allclose(np.linalg.norm(r.quat, axis=-1), 1, rtol=1e-6)
  # the mean rotation matrix of uniform rotations is 0
  assert np.abs(np.asarray(r.as_matrix()).mean(0)).max() < 0.05


@pytest.mark.parametrize("call, err, match", [
    (lambda: Rotation.from_euler("xxy", [1., 2., 3.]), ValueError, "consecutive"),
    (lambda: Rotation.from_euler("xYz", [1., 2., 3.]), ValueError, "axes"),
    (lambda: Rotation.from_euler("xyz", [1., 2.]), ValueError, "angles"),
    (lambda: Rotation.from_quat([1., 2., 3.]), ValueError, "quat"),
    (lambda: Rotation.from_matrix(np.eye(2)), ValueError, "matrix"),
    (lambda: Slerp.init([0., 1.], R[0]), ValueError, "at least 2"),
    (lambda: Slerp.init([0., 1.], Q), TypeError, "Rotation"),
    (lambda: R.mean(np.ones(2)), ValueError, "weights"),
])
def test_errors(call, err, match):
  with pytest.raises(err, match=match):
    call()
