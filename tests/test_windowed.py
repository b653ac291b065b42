"""conv_general_dilated and reduce_window: values against direct NumPy loops over many
configurations, gradients (both modes, second order), vmap against loops, and real JAX (values,
gradients and printed jaxprs; skipped without it)."""
import itertools

import numpy as np
import pytest

import jaxlite as jax
from jaxlite import lax
from jaxlite.test_util import check_grads
from conftest import oracle

RNG = np.random.default_rng(0)


def _f32(*shape):
  return RNG.standard_normal(shape).astype(np.float32)


# --- loop references ---------------------------------------------------------------------------

def _pad_dilate(x, pads, dilation, fill):
  """x (N, C, sp...) dilated then padded (negative pads crop) along the spatial axes."""
  sp = x.shape[2:]
  dil = [0 if d == 0 else (d - 1) * r + 1 for d, r in zip(sp, dilation)]
  out = np.full(x.shape[:2] + tuple(dil), fill, x.dtype)
  out[(slice(None), slice(None)) + tuple(slice(None, None, r) for r in dilation)] = x
  for ax, (lo, hi) in enumerate(pads, start=2):
    out = np.moveaxis(out, ax, 0)
    if lo < 0:
      out = out[-lo:]
    if hi < 0:
      out = out[:out.shape[0] + hi]
    out = np.concatenate([np.full((max(lo, 0),) + out.shape[1:], fill, x.dtype), out,
                          np.full((max(hi, 0),) + out.shape[1:], fill, x.dtype)])
    out = np.moveaxis(out, 0, ax)
  return out


def conv_loop(x, w, strides, pads, lhs_dil, rhs_dil, fgc=1, bgc=1):
  """Canonical NC.../OI... convolution, one output element at a time."""
  xp = _pad_dilate(x.astype(np.float64), pads, lhs_dil, 0.0)
  n = x.shape[0]
  o, i = w.shape[:2]
  ks = w.shape[2:]
  eff = [(k - 1) * r + 1 for k, r in zip(ks, rhs_dil)]
  osp = [max(0, (p - e) // s + 1) if p >= e else 0 for p, e, s in zip(xp.shape[2:], eff, strides)]
  out = np.zeros((n // bgc, o) + tuple(osp))
  og = o // (fgc * bgc)
  for nb, oc in itertools.product(range(n // bgc), range(o)):
    group = oc // og
    bidx = nb + (group if bgc > 1 else 0) * (n // bgc)
    chans = range(group * i, (group + 1) * i) if fgc > 1 else range(i)
    for pos in itertools.product(*map(range, osp)):
      acc = 0.0
      for ci, ch in enumerate(chans):
        for kpos in itertools.product(*map(range, ks)):
          src = tuple(p * s + k * r for p, s, k, r in zip(pos, strides, kpos, rhs_dil))
          acc += xp[(bidx, ch) + src] * w[(oc, ci) + kpos]
      out[(nb, oc) + pos] = acc
  return out


def reduce_window_loop(x, op, init, window, strides, pads, base_dil, win_dil):
  xp = _pad_dilate(x[None, None].astype(np.float64), pads, base_dil, init)[0, 0]
  eff = [(w - 1) * r + 1 for w, r in zip(window, win_dil)]
  osp = [max(0, (p - e) // s + 1) if p >= e else 0 for p, e, s in zip(xp.shape, eff, strides)]
  out = np.full(osp, init)
  for pos in itertools.product(*map(range, osp)):
    vals = [xp[tuple(p * s + k * r for p, s, k, r in zip(pos, strides, kpos, win_dil))]
            for kpos in itertools.product(*map(range, window))]
    out[pos] = op.reduce(np.array(vals, np.float64), initial=init)
  return out


# --- conv values -------------------------------------------------------------------------------

CONV_CONFIGS = [
    # (lhs shape NC.., rhs shape OI.., strides, padding, lhs_dil, rhs_dil, fgc, bgc)
    ((2, 3, 6, 5), (4, 3, 3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 1),
    ((2, 3, 6, 5), (4, 3, 3, 2), (2, 3), ((1, 2), (2, 0)), (1, 1), (1, 1), 1, 1),
    ((1, 2, 7, 7), (3, 2, 2, 3), (1, 2), ((-1, 1), (1, -2)), (1, 1), (2, 1), 1, 1),
    ((2, 2, 4, 3), (3, 2, 2, 2), (1, 1), ((1, 1), (0, 2)), (2, 3), (1, 2), 1, 1),
    ((2, 6, 5, 5), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 2, 1),
    ((2, 6, 5, 4), (6, 2, 2, 2), (2, 1), ((0, 1), (1, 0)), (1, 2), (2, 1), 3, 1),
    ((4, 3, 5, 5), (6, 3, 2, 2), (1, 1), ((0, 0), (1, 1)), (1, 1), (1, 1), 1, 2),
    ((6, 2, 5), (3, 2, 3), (2,), ((1, 1),), (1,), (2,), 1, 3),
    ((2, 3, 4, 4, 3), (2, 3, 2, 2, 2), (1, 2, 1), ((0, 1), (1, 0), (0, 0)), (1, 1, 2),
     (1, 1, 1), 1, 1),
    ((2, 3, 3), (4, 3, 5), (1,), ((0, 0),), (1,), (1,), 1, 1),  # window larger: empty output
]


@pytest.mark.parametrize("cfg", CONV_CONFIGS)
def test_conv_matches_loop(cfg):
  ls, rs, strides, pads, ld, rd, fgc, bgc = cfg
  x, w = _f32(*ls), _f32(*rs)
  got = lax.conv_general_dilated(x, w, strides, pads, ld, rd, feature_group_count=fgc,
                                 batch_group_count=bgc)
  want = conv_loop(x, w, strides, pads, ld, rd, fgc, bgc)
  assert got.shape == want.shape and got.dtype == np.float32
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
  jitted = jax.jit(lambda x, w: lax.conv_general_dilated(
      x, w, strides, pads, ld, rd, feature_group_count=fgc, batch_group_count=bgc))(x, w)
  np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("specs", [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"),
                                   ("NWHC", "OIHW", "NCWH"), ("CHWN", "IOHW", "HNCW")])
def test_conv_layouts(specs):
  x, w = _f32(2, 3, 5, 4), _f32(4, 3, 3, 2)
  want = conv_loop(x, w, (2, 1), ((1, 0), (1, 1)), (1, 1), (1, 2))
  to = lambda a, src, dst: np.transpose(a, [src.index(ch) for ch in dst])
  got = lax.conv_general_dilated(to(x, "NCHW", specs[0]), to(w, "OIHW", specs[1]), (2, 1),
                                 ((1, 0), (1, 1)), rhs_dilation=(1, 2), dimension_numbers=specs)
  np.testing.assert_allclose(np.asarray(got), to(want, "NCHW", specs[2]), rtol=1e-4, atol=1e-4)


def test_conv_string_padding_and_wrappers():
  x, w = _f32(2, 3, 7, 6), _f32(4, 3, 3, 2)
  for padding, want_pads in [("SAME", ((1, 1), (0, 0))), ("SAME_LOWER", ((1, 1), (0, 0))),
                             ("VALID", ((0, 0), (0, 0)))]:
    got = lax.conv(x, w, (2, 2), padding)
    np.testing.assert_allclose(np.asarray(got), conv_loop(x, w, (2, 2), want_pads, (1, 1),
                                                          (1, 1)), rtol=1e-4, atol=1e-4)
  w3 = _f32(4, 3, 2, 3)
  for padding, want_pads in [("SAME", ((0, 1), (1, 1))), ("SAME_LOWER", ((1, 0), (1, 1)))]:
    got = lax.conv(x, w3, (1, 1), padding)
    np.testing.assert_allclose(np.asarray(got), conv_loop(x, w3, (1, 1), want_pads, (1, 1),
                                                          (1, 1)), rtol=1e-4, atol=1e-4)
  got = lax.conv_with_general_padding(x, w, (1, 1), ((1, 0), (0, 1)), (2, 1), (1, 2))
  np.testing.assert_allclose(np.asarray(got), conv_loop(x, w, (1, 1), ((1, 0), (0, 1)),
                                                        (2, 1), (1, 2)), rtol=1e-4, atol=1e-4)
  assert lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC")) == \
      lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))


def test_conv_dtypes():
  x, w = np.arange(24, dtype=np.int32).reshape(1, 2, 3, 4), np.ones((1, 2, 2, 2), np.int32)
  got = lax.conv(x, w, (1, 1), "VALID")
  assert got.dtype == np.int32
  np.testing.assert_array_equal(got, conv_loop(x, w, (1, 1), ((0, 0),) * 2, (1, 1), (1, 1)))
  h = lax.conv(x.astype(np.float16), w.astype(np.float16), (1, 1), "VALID",
               preferred_element_type=np.float32)
  assert h.dtype == np.float32


@pytest.mark.parametrize("call,err,msg", [
    (lambda x, w: lax.conv(x, w[:, :2], (1, 1), "SAME"), ValueError, "rhs input feature"),
    (lambda x, w: lax.conv(x, w.astype(np.float16), (1, 1), "SAME"), TypeError,
     "same dtypes, got float32, float16"),
    (lambda x, w: lax.conv(x, w[0], (1, 1), "SAME"), TypeError, "ndim to be equal, got 4 and 3"),
    (lambda x, w: lax.conv(x, w, (1,), "SAME"), ValueError, "same number of dimensions"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2),
     ValueError, "2 does not divide 3"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", batch_group_count=3),
     ValueError, "3 does not divide 2"),
    (lambda x, w: lax.conv(x, w, (1, 1), "FOO"), RuntimeError, "Unrecognized padding"),
    (lambda x, w: lax.conv(x, w, (1, 1), [(-3, -3), (0, 0)]), ValueError, "Negative padding"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW",
                                                                                    "OIHW")),
     TypeError, "must be length 3"),
])
def test_conv_errors(call, err, msg):
  with pytest.raises(err, match=msg):
    call(_f32(2, 3, 5, 5), _f32(4, 3, 3, 3))


# --- reduce_window values ----------------------------------------------------------------------

RW_CONFIGS = [
    # (shape, window, strides, padding, base_dil, win_dil)
    ((5, 6), (2, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((5, 6), (2, 2), (2, 3), ((1, 0), (1, 2)), (1, 1), (1, 1)),
    ((2, 5, 6), (1, 3, 2), (1, 2, 1), ((0, 0), (-1, 1), (1, -1)), (1, 1, 2), (1, 2, 1)),
    ((4, 7), (3, 2), (2, 2), ((1, 1), (0, 0)), (2, 1), (1, 3)),
    ((3,), (5,), (1,), ((0, 0),), (1,), (1,)),  # window larger: empty
]
OPS = [(lax.add, np.add, 0.0), (lax.max, np.maximum, -np.inf), (lax.min, np.minimum, np.inf)]


@pytest.mark.parametrize("cfg", RW_CONFIGS)
@pytest.mark.parametrize("op", OPS, ids=["sum", "max", "min"])
def test_reduce_window_matches_loop(cfg, op):
  shape, window, strides, pads, bd, wd = cfg
  x = _f32(*shape)
  got = lax.reduce_window(x, op[2], op[0], window, strides, pads, bd, wd)
  want = reduce_window_loop(x, op[1], op[2], window, strides, pads, bd, wd)
  assert got.shape == want.shape and got.dtype == np.float32
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_reduce_window_ints_and_strings():
  x = np.arange(30, dtype=np.int32).reshape(5, 6)
  got = lax.reduce_window(x, 0, lax.add, (2, 2), (1, 1), "SAME")
  assert got.dtype == np.int32
  np.testing.assert_array_equal(got, reduce_window_loop(x, np.add, 0, (2, 2), (1, 1),
                                                        ((0, 1), (0, 1)), (1, 1), (1, 1)))
  got = lax.reduce_window(x, np.iinfo(np.int32).min, lax.max, (3, 2), (2, 2), "VALID")
  np.testing.assert_array_equal(got, [[13, 15, 17], [25, 27, 29]])
  with pytest.raises(TypeError, match="wrong number of window_dimensions"):
    lax.reduce_window(x, 0, lax.add, (2,), (1, 1))


# --- gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [CONV_CONFIGS[i] for i in (1, 2, 3, 5, 6, 7)])
def test_conv_grads(cfg):
  ls, rs, strides, pads, ld, rd, fgc, bgc = cfg
  f = lambda x, w: lax.conv_general_dilated(x, w, strides, pads, ld, rd,
                                            feature_group_count=fgc, batch_group_count=bgc)
  check_grads(f, (_f32(*ls), _f32(*rs)), order=2, modes=("fwd", "rev"), eps=1e-2, atol=5e-2,
              rtol=5e-2)


def test_conv_grads_layout():
  f = lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (0, 2)), (1, 2), (2, 1),
                                            ("NHWC", "HWIO", "NCHW"))
  check_grads(f, (_f32(2, 5, 4, 3), _f32(2, 2, 3, 4)), order=1, modes=("fwd", "rev"),
              eps=1e-2, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("cfg", RW_CONFIGS[:4])
@pytest.mark.parametrize("op", OPS, ids=["sum", "max", "min"])
def test_reduce_window_grads(cfg, op):
  shape, window, strides, pads, bd, wd = cfg
  n = int(np.prod(shape))
  x = (RNG.permutation(n).astype(np.float32) * 0.5).reshape(shape)  # no ties
  f = lambda x: lax.reduce_window(x, op[2], op[0], window, strides, pads, bd, wd)
  check_grads(f, (x,), order=2, modes=("fwd", "rev"), eps=1e-2, atol=5e-2, rtol=5e-2)


# --- vmap --------------------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [CONV_CONFIGS[i] for i in (1, 4, 6)])
@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 2), (3, 1)])
def test_conv_vmap(cfg, in_axes):
  ls, rs, strides, pads, ld, rd, fgc, bgc = cfg
  f = lambda x, w: lax.conv_general_dilated(x, w, strides, pads, ld, rd,
                                            ("NCHW", "IOHW", "NHWC"), fgc, bgc)
  x, w = _f32(*ls), np.swapaxes(_f32(*rs), 0, 1)
  xs = x if in_axes[0] is None else np.stack([x, 2 * x - 1], in_axes[0])
  ws = w if in_axes[1] is None else np.stack([w, -w * 3], in_axes[1])
  got = jax.vmap(f, in_axes)(xs, ws)
  take = lambda a, ax, b: a if ax is None else np.take(a, b, ax)
  want = np.stack([f(take(xs, in_axes[0], b), take(ws, in_axes[1], b)) for b in range(2)])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", OPS, ids=["sum", "max", "min"])
def test_reduce_window_vmap(op):
  _, window, strides, pads, bd, wd = RW_CONFIGS[2]
  f = lambda x: lax.reduce_window(x, op[2], op[0], window, strides, pads, bd, wd)
  xs = _f32(2, 5, 3, 6)
  got = jax.vmap(f, 2)(xs)
  want = np.stack([f(xs[:, :, b]) for b in range(3)])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
  # a per-example gradient runs the batched JVP / transpose rules
  g = jax.vmap(jax.grad(lambda x: f(x).sum()), 2)(xs)
  want = np.stack([jax.grad(lambda x: f(x).sum())(xs[:, :, b]) for b in range(3)])
  np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)


# --- oracle: real JAX --------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", CONV_CONFIGS[:8])
def test_conv_vs_jax(cfg):
  jax_ = pytest.importorskip("jax")
  ls, rs, strides, pads, ld, rd, fgc, bgc = cfg
  x, w = _f32(*ls), _f32(*rs)

  def fn(lib):
    return lambda x, w: lib.lax.conv_general_dilated(
        x, w, strides, pads, ld, rd, feature_group_count=fgc, batch_group_count=bgc)
  want = np.asarray(fn(jax_)(x, w))
  np.testing.assert_allclose(np.asarray(fn(jax)(x, w)), want, rtol=1e-4, atol=1e-4)
  assert str(jax.make_jaxpr(fn(jax))(x, w)) == str(jax_.make_jaxpr(fn(jax_))(x, w))
  ct = _f32(*want.shape)
  loss = lambda lib: lambda x, w: (fn(lib)(x, w) * ct).sum()
  for g, h in zip(jax.grad(loss(jax), (0, 1))(x, w), jax_.grad(loss(jax_), (0, 1))(x, w)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-4, atol=1e-4)


def test_conv_jaxprs_vs_jax():
  jax_ = pytest.importorskip("jax")
  x, w = _f32(2, 5, 5, 3), _f32(3, 3, 3, 4)
  for lib_fn in [
      lambda lib: lambda x, w: lib.lax.conv_general_dilated(
          x, w, (2, 1), [(1, 0), (0, 2)], (1, 2), (2, 1), ("NHWC", "HWIO", "NCHW"),
          precision="highest"),
      lambda lib: lambda x, w: lib.lax.conv_general_dilated(
          x, w, (1, 2), "SAME", None, (1, 2), ("NHWC", "HWIO", "NHWC")),
      lambda lib: jax_.grad(lambda x, w: lib.lax.conv_general_dilated(
          x, w, (2, 2), "SAME", None, (2, 1), ("NHWC", "HWIO", "NHWC")).sum(), (0, 1))
      if lib is jax_ else jax.grad(lambda x, w: lib.lax.conv_general_dilated(
          x, w, (2, 2), "SAME", None, (2, 1), ("NHWC", "HWIO", "NHWC")).sum(), (0, 1))]:
    assert str(jax.make_jaxpr(lib_fn(jax))(x, w)) == str(jax_.make_jaxpr(lib_fn(jax_))(x, w))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("strides,kernel", [((1, 1), (3, 3)), ((2, 2), (3, 2)),
                                            ((2, 1), (2, 2))])
def test_conv_transpose_vs_jax(padding, strides, kernel):
  jax_ = pytest.importorskip("jax")
  x, w = _f32(2, 5, 4, 3), _f32(*kernel, 3, 2)
  want = jax_.lax.conv_transpose(x, w, strides, padding)
  got = lax.conv_transpose(x, w, strides, padding)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
  want = jax_.lax.conv_transpose(x, np.swapaxes(w, 2, 3), strides, padding,
                                 transpose_kernel=True)
  got = lax.conv_transpose(x, np.swapaxes(w, 2, 3), strides, padding, transpose_kernel=True)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cfg", RW_CONFIGS[:4])
@pytest.mark.parametrize("op", ["add", "max", "min"])
def test_reduce_window_vs_jax(cfg, op):
  jax_ = pytest.importorskip("jax")
  shape, window, strides, pads, bd, wd = cfg
  init = {"add": 0.0, "max": -np.inf, "min": np.inf}[op]
  n = int(np.prod(shape))
  x = (RNG.permutation(n).astype(np.float32) * 0.5).reshape(shape)

  def fn(lib):
    return lambda x: lib.lax.reduce_window(x, init, getattr(lib.lax, op), window, strides,
                                           pads, bd, wd)
  np.testing.assert_allclose(np.asarray(fn(jax)(x)), np.asarray(fn(jax_)(x)), rtol=1e-5)
  assert str(jax.make_jaxpr(fn(jax))(x)) == str(jax_.make_jaxpr(fn(jax_))(x))
  if op != "add" and any(d != 1 for d in wd):
    return  # JAX has no VJP for max/min windows with window dilation
  ct = _f32(*np.shape(fn(jax_)(x)))
  g = jax.grad(lambda x: (fn(jax)(x) * ct).sum())(x)
  h = jax_.grad(lambda x: (fn(jax_)(x) * ct).sum())(x)
  np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-5, atol=1e-5)


# --- reduce_window with any computation -----------------------------------------------------

def _argmax_pair(lib):
  def combine(a, b):
    return lib.lax.max(a[0], b[0]), lib.lax.select(a[0] >= b[0], a[1], b[1])
  return combine


GENERIC = [
    ("mul", lambda lib, x, i: lib.lax.reduce_window(x, 1., lib.lax.mul, (2, 2), (1, 2),
                                                    [(1, 0), (0, 1)])),
    ("add_init", lambda lib, x, i: lib.lax.reduce_window(x, 1., lib.lax.add, (2, 3), (2, 1),
                                                         "SAME", (1, 2), (2, 1))),
    ("pair", lambda lib, x, i: lib.lax.reduce_window((x, i), (-np.inf, 0), _argmax_pair(lib),
                                                     (2, 2), (1, 1), "VALID")),
]


@pytest.mark.parametrize("name,fn", GENERIC, ids=[g[0] for g in GENERIC])
def test_generic_reduce_window(name, fn):
  x, i = _f32(4, 5), np.arange(20, dtype=np.int32).reshape(4, 5)
  got = jax.tree.leaves(fn(jax, x, i))
  if name == "mul":
    want = reduce_window_loop(x, np.multiply, 1.0, (2, 2), (1, 2), ((1, 0), (0, 1)), (1, 1),
                              (1, 1))
    np.testing.assert_allclose(np.asarray(got[0]), want, rtol=1e-5)
  batched = jax.tree.leaves(jax.vmap(lambda x, i: fn(jax, x, i), (1, None))(
      np.stack([x, -x], 1), i))
  for b, sign in enumerate((1, -1)):
    for g, w in zip(batched, jax.tree.leaves(fn(jax, sign * x, i))):
      np.testing.assert_allclose(np.asarray(g)[b], np.asarray(w), rtol=1e-5)
  jax_ = pytest.importorskip("jax")
  for g, w in zip(got, jax_.tree.leaves(fn(jax_, x, i))):
    assert np.asarray(g).dtype == np.asarray(w).dtype
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)
  assert str(jax.make_jaxpr(lambda x, i: fn(jax, x, i))(x, i)) == \
      str(jax_.make_jaxpr(lambda x, i: fn(jax_, x, i))(x, i))


def test_generic_reduce_window_skips_padding_and_holes():
  # XLA folds only a window's real elements into the init value: padding and base-dilation
  # holes contribute nothing (init is not an identity of add here).
  x = np.zeros(3, np.float32)
  np.testing.assert_array_equal(lax.reduce_window(x, 1., lax.add, (2,), (1,), [(1, 1)]),
                                [1, 1, 1, 1])
  np.testing.assert_array_equal(lax.reduce_window(x + 2, 1., lax.add, (3,), (1,), [(0, 0)],
                                                  (2,)), [5, 3, 5])


@pytest.mark.parametrize("fgc,bgc,xs,ws,dn", [
    (2, 1, (2, 6, 5, 5), (4, 3, 3, 3), None),
    (1, 2, (2, 3, 5, 5), (4, 3, 3, 3), None),
    (3, 1, (2, 5, 4, 6), (3, 2, 2, 6), ("NHWC", "HWIO", "NCHW")),
    (1, 3, (6, 5, 4, 2), (3, 2, 2, 6), ("NHWC", "HWIO", "NHWC")),
    (1, 2, (3, 5, 6, 4), (6, 2, 3, 2), ("CHWN", "OWIH", "HNCW")),
])
def test_grouped_conv_grads_vs_jax(fgc, bgc, xs, ws, dn):
  """Gradients of grouped convolutions: values and printed jaxprs as JAX's."""
  jax_ = pytest.importorskip("jax")
  x, w = _f32(*xs), _f32(*ws)

  def grad(lib):
    return lib.grad(lambda x, w: (lib.lax.conv_general_dilated(
        x, w, (2, 1), [(1, 0), (0, 1)], None, (1, 2), dn, feature_group_count=fgc,
        batch_group_count=bgc) ** 2).sum(), (0, 1))
  for g, h in zip(grad(jax)(x, w), grad(jax_)(x, w)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-4, atol=1e-4)
  assert str(jax.make_jaxpr(grad(jax))(x, w)) == str(jax_.make_jaxpr(grad(jax_))(x, w))


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 0), (2, 1)), ((0, 0), (1, 1))])
@pytest.mark.parametrize("strides, rhs_dilation", [((1, 1), None), ((2, 3), (1, 2))])
def test_conv_transpose_use_consistent_padding_matches_jax(padding, strides, rhs_dilation):
  """use_consistent_padding=True reads tuple padding as the forward conv's (k - 1 - p a side);
  strings mean the same either way."""
  real = oracle()
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 7, 7, 3)).astype(np.float32)
  w = rng.standard_normal((3, 4, 3, 5)).astype(np.float32)
  kw = dict(rhs_dilation=rhs_dilation, dimension_numbers=("NHWC", "HWIO", "NHWC"),
            use_consistent_padding=True)
  got = jax.lax.conv_transpose(x, w, strides, padding, **kw)
  want = real.lax.conv_transpose(x, w, strides, padding, **kw)
  assert got.shape == want.shape
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
