"""`jax.scipy.spatial.transform`: 3-D rotations stored as unit quaternions (x, y, z, w; scalar
last, as scipy) and spherical linear interpolation between them. Every operation is batched over
leading axes and composed in jnp, so it jits, vmaps and differentiates."""
from __future__ import annotations

import typing

import numpy as np


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _norm(v):
  jnp = _jnp()
  return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(q):
  return q / _norm(q)[..., None]


def _compose(p, q):
  """Hamilton product p * q of scalar-last quaternions (rotation q first, then p)."""
  jnp = _jnp()
  pv, pw, qv, qw = p[..., :3], p[..., 3:], q[..., :3], q[..., 3:]
  vec = pw * qv + qw * pv + jnp.cross(pv, qv)
  w = pw * qw - jnp.sum(pv * qv, axis=-1, keepdims=True)
  return jnp.concatenate([vec, w], axis=-1)


def _as_matrix(q):
  jnp = _jnp()
  x, y, z, w = (q[..., i] for i in range(4))
  rows = [[w * w + x * x - y * y - z * z, 2 * (x * y - z * w), 2 * (x * z + y * w)],
          [2 * (x * y + z * w), w * w - x * x + y * y - z * z, 2 * (y * z - x * w)],
          [2 * (x * z - y * w), 2 * (y * z + x * w), w * w - x * x - y * y + z * z]]
  return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m):
  """Shepperd's method: build the quaternion from the largest of trace, m00, m11, m22 (the
  numerically safe pivot), then normalise."""
  jnp = _jnp()
  trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
  decision = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1)
  choice = jnp.argmax(decision, axis=-1)
  candidates = []
  for i in range(3):
    j, k = (i + 1) % 3, (i + 2) % 3
    q = [None] * 4
    q[i] = 1 - trace + 2 * m[..., i, i]
    q[j] = m[..., j, i] + m[..., i, j]
    q[k] = m[..., k, i] + m[..., i, k]
    q[3] = m[..., k, j] - m[..., j, k]
    candidates.append(jnp.stack(q, axis=-1))
  candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                               m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
  out = candidates[3]
  for i in range(3):
    out = jnp.where((choice == i)[..., None], candidates[i], out)
  return _normalize(out)


def _from_rotvec(rv, degrees):
  """exp of the rotation vector: axis * sin(angle / 2), cos(angle / 2), with the Taylor series
  of sin(a/2)/a near a = 0."""
  jnp = _jnp()
  if degrees:
    rv = jnp.deg2rad(rv)
  angle = _norm(rv)
  small = angle <= 1e-3
  a = jnp.where(small, 1., angle)
  a2 = angle * angle
  scale = jnp.where(small, 0.5 - a2 / 48 + a2 * a2 / 3840, jnp.sin(a / 2) / a)
  return jnp.concatenate([scale[..., None] * rv, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(q, degrees):
  jnp = _jnp()
  q = jnp.where((q[..., 3] < 0)[..., None], -q, q)  # the short way round
  angle = 2 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
  small = angle <= 1e-3
  a = jnp.where(small, 1., angle)
  a2 = angle * angle
  scale = jnp.where(small, 2 + a2 / 12 + 7 * a2 * a2 / 2880, a / jnp.sin(a / 2))
  rv = scale[..., None] * q[..., :3]
  return jnp.rad2deg(rv) if degrees else rv


def _elementary(axis: int, angle):
  jnp = _jnp()
  zero = jnp.zeros_like(angle)
  parts = [zero, zero, zero, jnp.cos(angle / 2)]
  parts[axis] = jnp.sin(angle / 2)
  return jnp.stack(parts, axis=-1)


def _parse_seq(seq: str):
  if not isinstance(seq, str) or not 1 <= len(seq) <= 3:
    raise ValueError(f"Expected axis specification to be a string of up to 3 characters, "
                     f"got {seq!r}")
  intrinsic = seq.isupper()
  if not (intrinsic or seq.islower()) or set(seq.lower()) - set("xyz"):
    raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                     f"['X', 'Y', 'Z'], got {seq}")
  if any(a == b for a, b in zip(seq, seq[1:])):
    raise ValueError(f"Expected consecutive axes to be different, got {seq}")
  return ["xyz".index(c) for c in seq.lower()], intrinsic


def _euler_from_quat(q, axes, extrinsic: bool):
  """Bernardes & Viollet (2022): Euler angles straight from the quaternion, for proper
  (symmetric, e.g. zxz) and Tait-Bryan (e.g. xyz) sequences; gimbal-locked cases put the whole
  angle on the first rotation."""
  jnp = _jnp()
  i, j, k = axes if extrinsic else axes[::-1]
  symmetric = i == k
  if symmetric:
    k = 3 - i - j
  sign = (i - j) * (j - k) * (k - i) // 2
  qi, qj, qk, qw = q[..., i], q[..., j], q[..., k] * sign, q[..., 3]
  if symmetric:
    a, b, c, d = qw, qi, qj, qk
  else:
    a, b, c, d = qw - qj, qi + qk, qj + qw, qk - qi
  second = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
  eps = 1e-7
  at_zero = jnp.abs(second) <= eps
  at_pi = jnp.abs(second - np.pi) <= eps
  half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
  degenerate = at_zero | at_pi
  first_idx, third_idx = (0, 2) if extrinsic else (2, 0)
  zero = jnp.zeros_like(second)
  angles = [zero, second, zero]
  angles[first_idx] = half_sum - half_diff
  angles[third_idx] = half_sum + half_diff
  lock = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
  angles[0] = jnp.where(degenerate, lock, angles[0])
  angles[2] = jnp.where(degenerate, 0., angles[2])
  if not symmetric:
    angles[third_idx] = angles[third_idx] * sign
    angles[1] = angles[1] - np.pi / 2
  out = jnp.stack(angles, axis=-1)
  return (out + np.pi) % (2 * np.pi) - np.pi


def _canonical(q):
  """q or -q (the same rotation), chosen so the first non-zero of w, x, y, z is positive."""
  jnp = _jnp()
  neg, decided = jnp.zeros(q.shape[:-1], bool), jnp.zeros(q.shape[:-1], bool)
  for idx in (3, 0, 1, 2):
    neg = neg | (~decided & (q[..., idx] < 0))
    decided = decided | (q[..., idx] != 0)
  return jnp.where(neg[..., None], -q, q)


class Rotation(typing.NamedTuple):
  """Rotation(s) in 3 dimensions: `quat` has shape (4,) for one rotation, (N, 4) for several."""
  quat: typing.Any

  @classmethod
  def concatenate(cls, rotations: typing.Sequence["Rotation"]) -> "Rotation":
    jnp = _jnp()
    return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

  @classmethod
  def from_quat(cls, quat) -> "Rotation":
    quat = _jnp().asarray(quat)
    _check_last(quat, 4, "from_quat", "quat")
    return cls(_normalize(_float(quat)))

  @classmethod
  def from_matrix(cls, matrix) -> "Rotation":
    matrix = _float(_jnp().asarray(matrix))
    if matrix.ndim not in (2, 3) or matrix.shape[-2:] != (3, 3):
      raise ValueError(f"Expected `matrix` to have shape (3, 3), or (N, 3, 3), got "
                       f"{matrix.shape}")
    return cls(_from_matrix(matrix))

  @classmethod
  def from_rotvec(cls, rotvec, degrees: bool = False) -> "Rotation":
    rotvec = _float(_jnp().asarray(rotvec))
    _check_last(rotvec, 3, "from_rotvec", "rotvec")
    return cls(_from_rotvec(rotvec, degrees))

  @classmethod
  def from_mrp(cls, mrp) -> "Rotation":
    jnp = _jnp()
    mrp = _float(jnp.asarray(mrp))
    _check_last(mrp, 3, "from_mrp", "mrp")
    sq1 = jnp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
    return cls(jnp.concatenate([2 * mrp, 2 - sq1], axis=-1) / sq1)

  @classmethod
  def from_euler(cls, seq: str, angles, degrees: bool = False) -> "Rotation":
    """Rotations from Euler angles: lowercase `seq` (e.g. 'xyz') about the fixed (extrinsic)
    axes, uppercase ('XYZ') about the rotating (intrinsic) ones."""
    jnp = _jnp()
    axes, intrinsic = _parse_seq(seq)
    angles = _float(jnp.asarray(angles))
    if angles.ndim == 0:
      angles = angles.reshape(1)
    if angles.shape[-1] != len(axes) or angles.ndim > 2:
      raise ValueError(f"Expected `angles` to have shape ({len(axes)},) or (N, {len(axes)}) for "
                       f"`seq` {seq!r}, got {angles.shape}")
    if degrees:
      angles = jnp.deg2rad(angles)
    q = _elementary(axes[0], angles[..., 0])
    for n, axis in enumerate(axes[1:], 1):
      e = _elementary(axis, angles[..., n])
      q = _compose(q, e) if intrinsic else _compose(e, q)
    return cls(q)

  @classmethod
  def identity(cls, num: int | None = None, dtype=float) -> "Rotation":
    jnp = _jnp()
    q = jnp.array([0., 0., 0., 1.], dtype=dtype)
    return cls(q if num is None else jnp.tile(q, (num, 1)))

  @classmethod
  def random(cls, random_key, num: int | None = None) -> "Rotation":
    """Uniformly distributed rotations: normalised standard-normal quaternions (the normal
    distribution is invariant under rotations of R^4, so the unit quaternion is uniform)."""
    from jaxlite._src.rng import random
    shape = (4,) if num is None else (num, 4)
    return cls(_normalize(random.normal(random_key, shape)))

  # -- access --------------------------------------------------------------------------------
  @property
  def single(self) -> bool:
    return self.quat.ndim == 1

  def __len__(self):
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __getitem__(self, indexer) -> "Rotation":
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  # -- algebra -------------------------------------------------------------------------------
  def __mul__(self, other: "Rotation") -> "Rotation":
    """self * other: apply `other` first, then `self`."""
    if not isinstance(other, Rotation):
      return NotImplemented
    return Rotation(_compose(self.quat, other.quat))

  def inv(self) -> "Rotation":
    jnp = _jnp()
    return Rotation(self.quat * jnp.asarray([-1, -1, -1, 1], self.quat.dtype))

  def magnitude(self):
    jnp = _jnp()
    return 2. * jnp.arctan2(_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

  def apply(self, vectors, inverse: bool = False):
    """The rotated vectors: shapes (3,) or (N, 3), broadcast against the rotations."""
    jnp = _jnp()
    vectors = jnp.asarray(vectors)
    _check_last(vectors, 3, "apply", "vectors")
    m = _as_matrix(self.quat)
    if inverse:
      m = jnp.swapaxes(m, -1, -2)
    return jnp.einsum("...ij,...j->...i", m, vectors)

  def mean(self, weights=None) -> "Rotation":
    """The rotation maximising the weighted sum of squared quaternion dot products: the top
    eigenvector of sum_i w_i q_i q_i^T (Markley et al. 2007)."""
    jnp = _jnp()
    q = jnp.atleast_2d(self.quat)
    w = jnp.ones(q.shape[0], q.dtype) if weights is None else jnp.asarray(weights, q.dtype)
    if w.ndim != 1:
      raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
    if w.shape[0] != q.shape[0]:
      raise ValueError(f"Expected `weights` to have number of values equal to number of "
                       f"rotations, got {w.shape[0]} values and {q.shape[0]} rotations.")
    k = (w[None, :] * q.T) @ q
    _, v = jnp.linalg.eigh(k)
    return Rotation(v[:, -1])

  # -- conversions ---------------------------------------------------------------------------
  def as_quat(self, canonical: bool = False, scalar_first: bool = False):
    jnp = _jnp()
    q = _canonical(self.quat) if canonical else self.quat
    return jnp.roll(q, 1, axis=-1) if scalar_first else q

  def as_matrix(self):
    return _as_matrix(self.quat)

  def as_rotvec(self, degrees: bool = False):
    return _as_rotvec(self.quat, degrees)

  def as_mrp(self):
    """Modified Rodrigues parameters axis * tan(angle / 4), taking the short way round."""
    jnp = _jnp()
    q = jnp.where((self.quat[..., 3] < 0)[..., None], -self.quat, self.quat)
    return q[..., :3] / (1 + q[..., 3:])

  def as_euler(self, seq: str, degrees: bool = False):
    jnp = _jnp()
    axes, intrinsic = _parse_seq(seq)
    if len(axes) != 3:
      raise ValueError(f"Expected 3 axes, got {seq}.")
    out = _euler_from_quat(self.quat, axes, extrinsic=not intrinsic)
    return jnp.rad2deg(out) if degrees else out


def _float(x):
  jnp = _jnp()
  return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.result_type(float))


def _check_last(x, n: int, fn: str, arg: str):
  if x.ndim not in (1, 2) or x.shape[-1] != n:
    raise ValueError(f"Rotation.{fn}: expected `{arg}` to have shape ({n},) or (N, {n}), "
                     f"got {x.shape}")


class Slerp(typing.NamedTuple):
  """Spherical linear interpolation of rotations at increasing key `times`: between two keys the
  rotation turns at constant angular velocity about a fixed axis."""
  times: typing.Any
  timedelta: typing.Any
  rotations: Rotation
  rotvecs: typing.Any

  @classmethod
  def init(cls, times, rotations: Rotation) -> "Slerp":
    jnp = _jnp()
    if not isinstance(rotations, Rotation):
      raise TypeError("`rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
    times = jnp.asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError(f"Expected times to be specified in a 1 dimensional array, got "
                       f"{times.ndim} dimensions.")
    if times.shape[0] != len(rotations):
      raise ValueError(f"Expected number of rotations to be equal to number of timestamps "
                       f"given, got {len(rotations)} rotations and {times.shape[0]} "
                       f"timestamps.")
    starts = Rotation(rotations.quat[:-1])
    steps = (starts.inv() * Rotation(rotations.quat[1:])).as_rotvec()
    return cls(times, jnp.diff(times), starts, steps)

  def __call__(self, times) -> Rotation:
    jnp = _jnp()
    t = jnp.asarray(times, dtype=self.times.dtype)
    if t.ndim > 1:
      raise ValueError("`times` must be at most 1-dimensional.")
    single = t.ndim == 0
    t = jnp.atleast_1d(t)
    ind = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
    alpha = (t - self.times[ind]) / self.timedelta[ind]
    out = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    return out[0] if single else out

