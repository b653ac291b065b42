"""Building sharded Arrays (make_array_from_*), device_get, Shard, committed, typed PRNG keys on
shardings, and jax.debug.visualize_*/inspect_array_sharding (one subprocess per library)."""
import json
import subprocess
import sys

import pytest

_PROGRAM = r"""
import contextlib, io, json
import numpy as np
import {mod} as jax
import {mod}.numpy as jnp
jax.config.update("jax_num_cpu_devices", 8)
from {mod}.sharding import AxisType, NamedSharding, PartitionSpec as P

m = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
m1 = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
s = NamedSharding(m, P("x"))
G = np.arange(32, dtype=np.float32).reshape(8, 4)
out = {{}}

def shards(a):
  return [[d.device.id, repr(d.index), d.replica_id, np.asarray(d.data).tolist()]
          for d in a.addressable_shards]

def err(name, f):
  try:
    f()
    out[name] = None
  except Exception as e:
    out[name] = [type(e).__name__, str(e)]

calls = []
def cb(idx):
  calls.append(repr(idx))
  return G[idx]
a = jax.make_array_from_callback((8, 4), NamedSharding(m, P("x", "y")), cb)
out["callback"] = [repr(a.sharding), a.committed, str(a.dtype), np.asarray(a).tolist(), shards(a)]
out["callback_calls"] = len(calls)
err("callback_shape", lambda: jax.make_array_from_callback((8, 4), s, lambda i: np.zeros((3, 3))))
err("callback_indivisible", lambda: jax.make_array_from_callback((6, 4), s, lambda i: G[i]))
pieces = [jax.device_put(np.full((2, 4), d.id, np.float32), d) for d in m.devices.flat]
b = jax.make_array_from_single_device_arrays((8, 4), s, pieces)
out["single"] = [repr(b.sharding), np.asarray(b).tolist(), shards(b)]
err("single_count", lambda: jax.make_array_from_single_device_arrays((8, 4), s, pieces[:3]))
err("single_shape", lambda: jax.make_array_from_single_device_arrays(
    (8, 4), s, [jax.device_put(np.ones((3, 4), np.float32), d) for d in m.devices.flat]))
c = jax.make_array_from_process_local_data(NamedSharding(m, P(None, "y")), G)
out["local"] = [repr(c.sharding), c.shape, shards(c)]
out["local_shape"] = list(jax.make_array_from_process_local_data(s, G, (8, 4)).shape)
err("local_bad", lambda: jax.make_array_from_process_local_data(s, np.ones((6, 5)), (8, 4)))
got = jax.device_get({{"a": a, "b": 1, "c": [c]}})
out["device_get"] = [type(got["a"]).__name__, got["a"].tolist(), got["b"],
                     type(got["c"][0]).__name__]
out["committed"] = [jnp.ones(3).committed, jax.device_put(jnp.ones(3)).committed,
                    jax.device_put(jnp.ones(3), jax.devices()[1]).committed, a.committed]
out["Shard"] = [jax.Shard.__name__, type(a.addressable_shards[0]) is jax.Shard]
out["single_sharding"] = repr(jnp.ones(3).sharding)
out["tolist"] = [a.tolist() == G.tolist(), str(a) == str(G)]
keys = jax.device_put(jax.random.split(jax.random.key(0), 8), s)
out["keys"] = [repr(keys.sharding), str(jax.typeof(keys)), len(keys.addressable_shards),
               str(jax.typeof(keys.addressable_shards[2].data)),
               keys.addressable_shards[3].replica_id,
               np.asarray(jax.random.key_data(keys.addressable_shards[2].data)).tolist() ==
               np.asarray(jax.random.key_data(keys))[2:4].tolist()]
seen = []
jax.debug.inspect_array_sharding({{"a": a, "b": [c]}}, callback=lambda sh: seen.append(repr(sh)))
out["inspect"] = seen
buf = io.StringIO()
try:
  with contextlib.redirect_stdout(buf):
    jax.debug.visualize_array_sharding(a)
  out["visualize"] = buf.getvalue()
except Exception as e:
  out["visualize"] = [type(e).__name__, str(e)]
err("visualize_3d", lambda: jax.debug.visualize_sharding((2, 2, 2), s))
print(json.dumps(out))
"""

_VIS = r"""
import contextlib, io, json
import numpy as np
import jaxlite as jax
jax.config.update("jax_num_cpu_devices", 8)
from jaxlite.sharding import NamedSharding, PartitionSpec as P
m = jax.make_mesh((4, 2), ("x", "y"))
m1 = jax.make_mesh((8,), ("x",))
cases = {"xy": ((8, 8), NamedSharding(m, P("x", "y")), {}),
         "col": ((8, 8), NamedSharding(m, P(None, "y")), {}),
         "row1d": ((8,), NamedSharding(m1, P("x")), {}),
         "flat2axes": ((16, 4), NamedSharding(m, P(("x", "y"))), {}),
         "scale_half": ((8, 8), NamedSharding(m, P("x", "y")), {"scale": 0.5}),
         "overflow": ((4, 16), NamedSharding(m, P("y", "x")), {})}
out = {}
for name, (shape, s, kw) in cases.items():
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    jax.debug.visualize_sharding(shape, s, **kw)
  out[name] = buf.getvalue()
print(json.dumps(out))
"""


def _run(program, mod="jaxlite"):
  r = subprocess.run([sys.executable, "-c", program.replace("{mod}", mod).replace(
      "{{", "{").replace("}}", "}")], capture_output=True, text=True, timeout=600)
  assert r.returncode == 0, r.stderr[-3000:]
  return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ours():
  return _run(_PROGRAM)


@pytest.fixture(scope="module")
def theirs():
  from conftest import oracle
  oracle()
  return _run(_PROGRAM, "jax")


def test_make_array_known_answers(ours):
  sharding, committed, dtype, value, shards = ours["callback"]
  assert committed and dtype == "float32"
  assert value == [[float(v) for v in range(4 * r, 4 * r + 4)] for r in range(8)]
  assert ours["callback_calls"] == 8
  assert shards[3] == [3, "(slice(2, 4, None), slice(2, 4, None))", 0, [[10.0, 11.0], [14.0, 15.0]]]
  assert ours["single"][1][2] == [2.0] * 4 and ours["single"][1][7] == [6.0] * 4
  assert ours["local"][1] == [8, 4]
  assert ours["local_shape"] == [8, 4]
  assert ours["device_get"] == ["ndarray", value, 1, "ndarray"]
  assert ours["committed"] == [False, False, True, True]
  assert ours["Shard"] == ["Shard", True]
  assert ours["tolist"] == [True, True]
  assert ours["keys"][1:] == ["key<fry>[8]", 8, "key<fry>[2]", 1, True]
  assert ours["inspect"][0] == sharding


_ERRORS = {
    "callback_shape": ("ValueError", "Expected shard shape (2, 4) doesn't match the single "
                       "device array shape (3, 3). Shape of Array is float32[8,4] with sharding"),
    "callback_indivisible": ("IndivisibleError", None),
    "single_count": ("ValueError", "Expected 8 per-device arrays (this is how many devices are "
                     "addressable by the sharding), but got 3"),
    "single_shape": ("ValueError", "Expected shard shape (2, 4) doesn't match the single "
                     "device array shape (3, 4)."),
    "local_bad": ("ValueError", "When calling `make_array_from_process_local_data` on a single "
                  "process, global_shape should be None or equal to local_data.shape."),
    "visualize_3d": ("ValueError", "`visualize_sharding` only works for shapes with 1 and 2 "
                     "dimensions."),
}


@pytest.mark.parametrize("name", sorted(_ERRORS))
def test_bad_input_known_answers(ours, name):
  cls, start = _ERRORS[name]
  assert ours[name] is not None and ours[name][0] == cls
  if start:
    assert ours[name][1].startswith(start), ours[name][1]


@pytest.mark.parametrize("name", sorted(set(_ERRORS) - {"visualize_3d"}))
def test_bad_input_classes_match_jax(ours, theirs, name):
  assert ours[name][0] == theirs[name][0]


@pytest.mark.parametrize("key", ["callback", "single", "local", "local_shape", "device_get",
                                 "committed", "Shard", "single_sharding", "tolist", "keys",
                                 "inspect"])
def test_matches_jax(ours, theirs, key):
  if key == "Shard":  # JAX's Shard is a class of jax._src.array; the name is what is public
    assert ours[key][0] == theirs[key][0]
    return
  if key == "single":
    # JAX keeps each device's own array, so replicas may hold different data; on one host
    # jaxlite's shards are views of one global buffer, whose value (replica 0's) agrees.
    assert ours[key][:2] == theirs[key][:2]
    assert [sh[:3] for sh in ours[key][2]] == [sh[:3] for sh in theirs[key][2]]
    return
  assert ours[key] == theirs[key]


# The layouts JAX prints through rich (recorded from JAX 0.10.2 with rich installed, without
# colour); jaxlite prints the same text with or without rich.
_LAYOUTS = {
    # (8, 8) P('x', 'y')
    "xy": """\
┌──────────┬──────────┐
│  CPU 0   │  CPU 1   │
├──────────┼──────────┤
│  CPU 2   │  CPU 3   │
├──────────┼──────────┤
│  CPU 4   │  CPU 5   │
├──────────┼──────────┤
│  CPU 6   │  CPU 7   │
└──────────┴──────────┘
""",
    # (8, 8) P(None, 'y')
    "col": """\
┌───────────┬───────────┐
│           │           │
│           │           │
│           │           │
│           │           │
│CPU 0,2,4,6│CPU 1,3,5,7│
│           │           │
│           │           │
│           │           │
│           │           │
└───────────┴───────────┘
""",
    # (8,) P('x',)
    "row1d": """\
┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┐
│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │
└───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┘
""",
    # (16, 4) P(('x', 'y'),)
    "flat2axes": """\
┌───────┐
│ CPU 0 │
├───────┤
│ CPU 1 │
├───────┤
│ CPU 2 │
├───────┤
│ CPU 3 │
├───────┤
│ CPU 4 │
├───────┤
│ CPU 5 │
├───────┤
│ CPU 6 │
├───────┤
│ CPU 7 │
└───────┘
""",
    # (8, 8) P('x', 'y')
    "scale_half": """\
┌───────┬───────┐
│ CPU 0 │ CPU 1 │
├───────┼───────┤
│ CPU 2 │ CPU 3 │
├───────┼───────┤
│ CPU 4 │ CPU 5 │
├───────┼───────┤
│ CPU 6 │ CPU 7 │
└───────┴───────┘
""",
    # (4, 16) P('y', 'x'): wider than 80 columns. Rich wraps the labels into "…" over the id;
    # the plain-text fallback keeps them whole in the shrunk cells.
    "overflow": """\
┌───────────────────┬───────────────────┬───────────────────┬──────────────────┐
│                   │                   │                   │                  │
│       CPU 0       │       CPU 2       │       CPU 4       │      CPU 6       │
│                   │                   │                   │                  │
│                   │                   │                   │                  │
├───────────────────┼───────────────────┼───────────────────┼──────────────────┤
│                   │                   │                   │                  │
│       CPU 1       │       CPU 3       │       CPU 5       │      CPU 7       │
│                   │                   │                   │                  │
│                   │                   │                   │                  │
└───────────────────┴───────────────────┴───────────────────┴──────────────────┘
""",
}


@pytest.fixture(scope="module")
def layouts():
  return _run(_VIS)


# With rich installed jaxlite draws with it, as JAX does, and a label wider than its shrunk cell
# wraps into "…" over its id exactly as in JAX's drawing (checked against JAX 0.10.2 with rich);
# the plain renderer above shows it whole.
_RICH_OVERFLOW = """\
┌───────────────────┬───────────────────┬───────────────────┬──────────────────┐
│                   │                   │                   │                  │
│         …         │         …         │         …         │                  │
│         0         │         2         │         4         │                  │
│                   │                   │                   │                  │
│                   │                   │                   │                  │
├───────────────────┼───────────────────┼───────────────────┼──────────────────┤
│                   │                   │                   │                  │
│         …         │         …         │         …         │                  │
│         1         │         3         │         5         │                  │
│                   │                   │                   │                  │
│                   │                   │                   │                  │
└───────────────────┴───────────────────┴───────────────────┴──────────────────┘
"""


@pytest.mark.parametrize("name", sorted(_LAYOUTS))
def test_visualize_layouts_known_answers(layouts, name):
  import importlib.util
  if name == "overflow" and importlib.util.find_spec("rich") is not None:
    assert layouts[name] == _RICH_OVERFLOW
  else:
    assert layouts[name] == _LAYOUTS[name]


def test_visualize_array_sharding(ours):
  import importlib.util
  if importlib.util.find_spec("rich") is None:
    # Without rich JAX raises ValueError; jaxlite prints its plain-text layout.
    assert ours["visualize"] == ("┌───────┬───────┐\n│ CPU 0 │ CPU 1 │\n├───────┼───────┤\n"
                                 "│ CPU 2 │ CPU 3 │\n├───────┼───────┤\n│ CPU 4 │ CPU 5 │\n"
                                 "├───────┼───────┤\n│ CPU 6 │ CPU 7 │\n└───────┴───────┘\n")


def test_visualize_without_rich_jax_raises(theirs):
  import importlib.util
  if importlib.util.find_spec("rich") is not None:
    pytest.skip("rich is installed: JAX draws with it")
  assert theirs["visualize"] == ["ValueError", "`visualize_sharding` requires `rich` to be "
                                 "installed."]
