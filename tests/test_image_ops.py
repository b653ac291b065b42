"""jax.image (resize, scale_and_translate), jax.ops segment reductions and
jax.flatten_util.ravel_pytree: known answers, and values/dtypes against JAX where installed."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle
from jaxlite import image, ops
from jaxlite.flatten_util import ravel_pytree

IMG = np.random.RandomState(0).rand(1, 5, 7, 2).astype(np.float32)
METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]
SHAPES = [(1, 10, 3, 2), (2, 3, 14, 2)]


# --- image -------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_matches_jax(method, shape, antialias):
  real = oracle()
  want = np.asarray(real.image.resize(IMG, shape, method, antialias=antialias))
  got = np.asarray(image.resize(IMG, shape, method, antialias=antialias))
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "lanczos5", "area",
                                    "cubic-pytorch"])
@pytest.mark.parametrize("antialias", [True, False])
def test_scale_and_translate_matches_jax(method, antialias):
  real = oracle()
  args = ((1, 8, 9, 2), (1, 2), np.array([1.6, 0.7], np.float32),
          np.array([0.5, -1.], np.float32), method)
  want = np.asarray(real.image.scale_and_translate(IMG, *args, antialias=antialias))
  got = np.asarray(image.scale_and_translate(IMG, *args, antialias=antialias))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


def test_resize_known_answers():
  x = jnp.array([[0., 1.], [2., 3.]])
  np.testing.assert_array_equal(np.asarray(image.resize(x, (4, 4), "nearest")),
                                [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]])
  np.testing.assert_allclose(np.asarray(image.resize(jnp.array([0., 4.]), (4,), "linear")),
                             [0., 1., 3., 4.])
  np.testing.assert_allclose(np.asarray(image.resize(jnp.arange(4.), (2,), "area")), [0.5, 2.5])
  np.testing.assert_allclose(
      np.asarray(image.resize(jnp.arange(4.), (2,), "linear", antialias=False)), [0.5, 2.5])
  # antialiased: the triangle is twice as wide, weights (.75, .75, .25) / 1.75 around 0.5
  np.testing.assert_allclose(np.asarray(image.resize(jnp.arange(4.), (2,), "linear")),
                             [1.25 / 1.75, 3 - 1.25 / 1.75], rtol=1e-6)
  ints = image.resize(np.arange(4, dtype=np.int32).reshape(2, 2), (3, 3), "linear")
  assert ints.dtype == np.float32
  assert image.resize(np.arange(4, dtype=np.int32), (8,), "nearest").dtype == np.int32


def test_resize_transforms():
  f = lambda x: image.resize(x, (1, 8, 4, 2), "cubic").sum()
  g = jax.grad(f)(jnp.asarray(IMG))
  eps, i = 1e-2, (0, 2, 3, 1)
  bumped = IMG.copy()
  bumped[i] += eps
  np.testing.assert_allclose(float(g[i]), (float(f(bumped)) - float(f(IMG))) / eps, rtol=1e-2)
  batched = jax.vmap(lambda x: image.resize(x, (3, 3), "linear"))(jnp.asarray(IMG[0, :, :3]))
  for k in range(5):
    np.testing.assert_allclose(np.asarray(batched[k]),
                               np.asarray(image.resize(IMG[0, k, :3], (3, 3), "linear")))


@pytest.mark.parametrize("call, err, match", [
    (lambda: image.resize(IMG, (1, 2, 3), "linear"), ValueError, "shape must have length"),
    (lambda: image.resize(IMG, (1, 2, 3, 2), "bogus"), ValueError, "Unknown resize method"),
    (lambda: image.scale_and_translate(IMG, (1, 2, 3, 2), (1, 2), [1., 1.], [0., 0.],
                                       "nearest"), ValueError, "Nearest neighbor"),
])
def test_image_errors(call, err, match):
  with pytest.raises(err, match=match):
    call()


def test_resize_method_enum():
  assert image.ResizeMethod.from_string("bicubic") is image.ResizeMethod.CUBIC
  for alias in ("linear", "bilinear", "trilinear", "triangle"):
    assert image.ResizeMethod.from_string(alias) is image.ResizeMethod.LINEAR
  np.testing.assert_array_equal(np.asarray(image.resize(IMG, (1, 4, 4, 2), "bilinear")),
                                np.asarray(image.resize(IMG, (1, 4, 4, 2),
                                                        image.ResizeMethod.LINEAR)))
  assert [m.value for m in image.ResizeMethod] == list(range(7))


# --- ops.segment_* -----------------------------------------------------------------------------

DATA = np.arange(12, dtype=np.float32).reshape(6, 2) - 3
IDATA = np.array([3, 1, 4, 1, 5, 9], np.int32)
IDS = np.array([0, 0, 2, 5, -1, 2])
SEGMENT_KWARGS = [{}, {"num_segments": 4}, {"num_segments": 3, "bucket_size": 2},
                  {"num_segments": 4, "mode": "clip"},
                  {"num_segments": 4, "indices_are_sorted": False, "unique_indices": False}]
KNOWN = {  # on IDATA with num_segments=4: segments 0 <- rows 0,1; 2 <- rows 2,5; 5, -1 dropped
    "segment_sum": [4, 0, 13, 0], "segment_prod": [3, 1, 36, 1],
    "segment_max": [3, np.iinfo(np.int32).min, 9, np.iinfo(np.int32).min],
    "segment_min": [1, np.iinfo(np.int32).max, 4, np.iinfo(np.int32).max],
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_segment_known(name):
  got = np.asarray(getattr(ops, name)(IDATA, IDS, num_segments=4))
  assert got.dtype == np.int32
  np.testing.assert_array_equal(got, KNOWN[name])


@pytest.mark.parametrize("name", sorted(KNOWN))
@pytest.mark.parametrize("kw", SEGMENT_KWARGS, ids=str)
@pytest.mark.parametrize("data", [DATA, IDATA], ids=["f32", "i32"])
def test_segment_matches_jax(name, kw, data):
  real = oracle()
  want = np.asarray(getattr(real.ops, name)(data, IDS, **kw))
  got = np.asarray(getattr(ops, name)(data, IDS, **kw))
  assert got.dtype == want.dtype
  np.testing.assert_array_equal(got, want)


def test_segment_transforms_and_errors():
  jitted = jax.jit(ops.segment_sum, static_argnums=2)(DATA, IDS, 3)
  np.testing.assert_array_equal(np.asarray(jitted), np.asarray(ops.segment_sum(DATA, IDS, 3)))
  g = jax.grad(lambda d: ops.segment_sum(d, IDS, 3).sum())(DATA)
  np.testing.assert_array_equal(np.asarray(g)[:, 0], [1, 1, 1, 0, 0, 1])
  with pytest.raises(jax.errors.ConcretizationTypeError):
    jax.jit(lambda d, i: ops.segment_sum(d, i))(DATA, IDS)
  with pytest.raises(ValueError, match="num_segments must be non-negative"):
    ops.segment_sum(DATA, IDS, -1)
  with pytest.raises(TypeError, match="segment_sum requires ndarray"):
    ops.segment_sum([1.0, 2.0], IDS[:2])


# --- flatten_util.ravel_pytree -----------------------------------------------------------------

def test_ravel_pytree_round_trip():
  tree = {"a": 1, "b": np.float32(2), "c": [jnp.ones(2, jnp.int32), jnp.zeros((2, 2))]}
  flat, unravel = ravel_pytree(tree)
  assert flat.dtype == np.float32 and flat.shape == (8,)
  np.testing.assert_array_equal(np.asarray(flat), [1, 2, 1, 1, 0, 0, 0, 0])
  back = unravel(flat * 2)
  assert back["c"][0].dtype == np.int32 and back["c"][1].shape == (2, 2)
  np.testing.assert_array_equal(np.asarray(back["c"][0]), [2, 2])
  empty, unravel_empty = ravel_pytree({})
  assert empty.shape == (0,) and empty.dtype == np.float32 and unravel_empty(empty) == {}
  with pytest.raises(TypeError, match="unravel function given array of dtype int32"):
    unravel(jnp.ones(8, jnp.int32))
  g = jax.grad(lambda v: unravel(v)["c"][1].sum())(flat)
  np.testing.assert_array_equal(np.asarray(g), [0, 0, 0, 0, 1, 1, 1, 1])
  np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: unravel(v)["b"])(flat)), 2.0)


def test_ravel_pytree_matches_jax():
  oracle()
  from jax.flatten_util import ravel_pytree as real_ravel
  tree = [np.ones(3, np.float16), {"x": np.arange(2, dtype=np.int8)}, (np.float32(5.),)]
  want, _ = real_ravel(tree)
  got, _ = ravel_pytree(tree)
  assert got.dtype == want.dtype
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
