"""Seeded random program generator for the differential fuzzer: programs are data (an op-list IR)
that `render` turns into Python source valid for both jaxlite and real JAX.

A program is a JSON-able dict:
  {"id", "seed", "x64", "inputs": [{"name", "dtype", "shape", "values", "batch", "py"}],
   "ops": [{"out", "tmpl", "args", "cls", "ulps", "red"}], "outs": [var names]}
`tmpl` is a Python expression with `{0}`, `{1}`... standing for the `args` variable names; `cls`
says how exactly its result must match (see tools/fuzz.py `step_tol`).
"""
from __future__ import annotations

import math
import random

FLOATS = ["float16", "bfloat16", "float32"]
INTS = ["int8", "int16", "int32", "uint8", "uint16", "uint32"]
X64_FLOATS, X64_INTS = ["float64"], ["int64", "uint64"]
SHAPES = [(), (), (0,), (1,), (3,), (4,), (2, 3), (3, 1), (1, 4), (2, 0), (2, 1, 3), (2, 2)]

_FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, float("inf"), float("-inf"), float("nan"),
                1e-3, 100.0, 2.7, -2.7, 1e30, -1e30, 65504.0, 6e-8, 1e-40]
_FLOAT_PLAIN = [0.25, -0.75, 1.5, 2.0, -3.0, 0.1, 0.9, -0.4, 4.5, 7.0]
_PY_SCALARS = [0, 1, -1, 2, 3, 7, 0.5, -0.0, 2.5, -1.5, True, False, 2**31 - 1, 300,
               float("inf"), float("nan"), 1e10]

# ----- dtypes (an approximation of JAX's promotion lattice, used only to pick plausible ops) -----


def kind(dt: str) -> str:
  return "b" if dt == "bool" else "f" if dt in FLOATS + X64_FLOATS else (
    "u" if dt.startswith("u") else "i")


def bits(dt: str) -> int:
  if dt in ("bool", "bfloat16"):
    return 8 if dt == "bool" else 16
  return int("".join(c for c in dt if c.isdigit()))


def default(k: str, x64: bool) -> str:
  return {"b": "bool", "i": "int64" if x64 else "int32", "u": "uint64" if x64 else "uint32",
          "f": "float64" if x64 else "float32"}[k]


def promote(a: str, aw: bool, b: str, bw: bool, x64: bool) -> tuple[str, bool]:
  """Result dtype and weak type of a binary op on (dtype, weak) operands, approximately."""
  if aw and not bw:
    a, aw, b, bw = b, bw, a, aw
  if bw and not aw:  # weak operand: its kind only matters if it is higher
    order = "biuf"
    kb = "i" if kind(b) == "u" else kind(b)
    if order.index(kb) <= order.index(kind(a)) or (kb == "i" and kind(a) == "u"):
      return a, False
    return default(kb, x64), kb == "f" or kb == "i"
  if a == b:
    return a, aw
  ka, kb = kind(a), kind(b)
  if ka == "b":
    return b, aw and bw
  if kb == "b":
    return a, aw and bw
  if ka == "f" or kb == "f":
    if ka == kb:
      if {a, b} == {"float16", "bfloat16"}:
        return "float32", False
      return (a if bits(a) >= bits(b) else b), False
    return (a if ka == "f" else b), False
  if ka == kb:
    return (a if bits(a) >= bits(b) else b), False
  s, u = (a, b) if ka == "i" else (b, a)
  if bits(s) > bits(u):
    return s, False
  n = min(bits(u) * 2, 64 if x64 else 32)
  return f"int{n}", False


class Var:
  def __init__(self, name, dtype, shape, weak=False):
    # the shape rules are approximate (programs that raise are compared too); keep dims valid
    self.name, self.dtype, self.weak = name, dtype, weak
    self.shape = tuple(max(0, int(d)) for d in shape)

  @property
  def k(self):
    return kind(self.dtype)

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return math.prod(self.shape)


# ----- the generator ---------------------------------------------------------------------------


class Gen:
  """Builds one program: a few inputs, then `n_ops` ops each using earlier variables."""

  def __init__(self, seed: int, x64: bool | None = None, max_ops: int = 4,
               float_inputs: bool = False, wide: bool = True):
    self.r = random.Random(seed)
    # the wide families (tools/fuzz_wide.py) draw from a stream of their own, after the older
    # families: a seed's older ops are the same with or without them
    self.wide = random.Random(seed ^ 0x5EED_3333) if wide else None
    # float_inputs: every input array is floating point and the first is never a Python scalar,
    # so that (nearly) every program can be differentiated: the grad campaign's generator
    self.float_inputs = float_inputs
    self.seed = seed
    self.x64 = self.r.random() < 0.25 if x64 is None else x64
    self.special = self.r.random() < 0.5
    self.inputs, self.ops, self.vars = [], [], []
    self.max_ops = max_ops

  # --- inputs ---
  def dtypes(self):
    if self.float_inputs:
      return FLOATS + (X64_FLOATS if self.x64 else [])
    d = FLOATS * 3 + INTS + ["bool"]
    return d + (X64_FLOATS * 2 + X64_INTS if self.x64 else [])

  def values(self, dtype, n):
    r = self.r
    k = kind(dtype)
    out = []
    for _ in range(n):
      if k == "b":
        out.append(r.random() < 0.5)
      elif k == "f":
        pool = _FLOAT_EDGES if self.special and r.random() < 0.4 else _FLOAT_PLAIN
        out.append(r.choice(pool))
      else:
        lo, hi = (0, 2 ** bits(dtype) - 1) if k == "u" else (-2 ** (bits(dtype) - 1),
                                                             2 ** (bits(dtype) - 1) - 1)
        if self.special and r.random() < 0.3:
          out.append(r.choice([lo, hi, 0, 1, hi - 1, bits(dtype), bits(dtype) + 1]))
        else:
          out.append(r.randint(max(lo, -9), min(hi, 9)))
    return out

  def new_input(self, dtype=None, shape=None, py=False):
    dtype = dtype or self.r.choice(self.dtypes())
    shape = tuple(self.r.choice(SHAPES) if shape is None else shape)
    name = f"x{len(self.inputs)}"
    n = math.prod(shape)
    entry = {"name": name, "dtype": dtype, "shape": list(shape), "py": py,
             "values": self.values(dtype, n), "batch": self.values(dtype, n)}
    if py:  # a Python scalar argument: weakly typed in both libraries
      entry.update(shape=[], values=[self.r.choice(_PY_SCALARS)])
      k = "b" if isinstance(entry["values"][0], bool) else "f" if isinstance(
        entry["values"][0], float) else "i"
      entry["dtype"] = default(k, self.x64)
      entry["batch"] = entry["values"]
    self.inputs.append(entry)
    v = Var(name, entry["dtype"], entry["shape"], weak=py)
    self.vars.append(v)
    return v

  # --- ops ---
  def emit(self, tmpl, args, cls, dtype, shape, weak=False, ulps=0.0, red=1):
    name = f"v{len(self.ops)}"
    self.ops.append({"out": name, "tmpl": tmpl, "args": [a.name for a in args], "cls": cls,
                     "ulps": ulps, "red": red})
    v = Var(name, dtype, shape, weak)
    self.vars.append(v)
    return v

  def pick(self, pred=lambda v: True):
    cands = [v for v in self.vars if pred(v)]
    if not cands:
      return None
    # favour recent values so that programs chain
    return cands[-1] if self.r.random() < 0.6 else self.r.choice(cands)

  def program(self, pid: int) -> dict:
    from fuzz_ops import FAMILIES  # noqa: PLC0415 - the two modules are one unit
    r = self.r
    self.new_input(py=not self.float_inputs and r.random() < 0.1)
    if r.random() < 0.4:
      self.new_input()
    n = r.randint(1, self.max_ops)
    tries = 0
    while len(self.ops) < n and tries < 40:
      tries += 1
      fam = r.choices(list(FAMILIES), weights=[w for w, _ in FAMILIES.values()])[0]
      try:
        FAMILIES[fam][1](self)
      except (ValueError, IndexError, ZeroDivisionError):  # no valid parameters for this value
        continue
    self._wide_ops()
    outs = [self.vars[-1].name]
    if len(self.ops) > 1 and r.random() < 0.15:
      outs.append(r.choice(self.vars[:-1]).name)
    return {"id": pid, "seed": self.seed, "x64": self.x64, "inputs": self.inputs,
            "ops": self.ops, "outs": outs}

  def _wide_ops(self):
    """Up to two ops of the wide families, drawn from their own stream (see __init__)."""
    if self.wide is None:
      return
    from fuzz_wide import WIDE_FAMILIES  # noqa: PLC0415 - one unit with fuzz_ops
    base, self.r = self.r, self.wide
    try:
      for _ in range(self.r.choice([0, 1, 1, 2])):
        fam = self.r.choices(list(WIDE_FAMILIES), weights=[w for w, _ in
                                                           WIDE_FAMILIES.values()])[0]
        try:
          WIDE_FAMILIES[fam][1](self)
        except (ValueError, IndexError, ZeroDivisionError):
          continue
    finally:
      self.r = base


def generate(seed: int, n: int, max_ops: int = 4, float_inputs: bool = False,
             wide: bool = True) -> list[dict]:
  """`n` programs; program i depends only on (seed, i), `float_inputs` and `wide`."""
  return [Gen(seed * 1_000_003 + i, max_ops=max_ops, float_inputs=float_inputs,
              wide=wide).program(i) for i in range(n)]


# ----- rendering -------------------------------------------------------------------------------

HEADER = "import numpy as np\n"


def render(prog: dict, hook: bool = False) -> str:
  """The program as source defining `f(x0, x1, ...)`; with `hook`, every op's result passes
  through `T(name, value)` (used to record JAX's eager intermediates for tolerances)."""
  params = ", ".join(i["name"] for i in prog["inputs"])
  lines = [f"def f({params}):"]
  for op in prog["ops"]:
    expr = op["tmpl"].format(*op["args"])
    lines.append(f"  {op['out']} = T({op['out']!r}, {expr})" if hook else f"  {op['out']} = {expr}")
  outs = prog["outs"]
  lines.append(f"  return {outs[0]}" if len(outs) == 1 else f"  return ({', '.join(outs)},)")
  return "\n".join(lines) + "\n"


def one_line(prog: dict, batch: bool = False) -> str:
  """The whole program on one line for reports: `v0 = ...; v1 = ...; -> v1  with x0=f32[3][...]`.
  With `batch`, vmap's second batch row follows (`; batch x0=[...]`) for inputs that have one
  (Python scalars are unbatched), so a vmap mismatch is matched against every value it ran on."""
  body = "; ".join(f"{op['out']} = {op['tmpl'].format(*op['args'])}" for op in prog["ops"])
  ret = ", ".join(prog["outs"])

  def desc(i):
    if i["py"]:
      return f"{i['name']}={i['values'][0]!r}"
    return f"{i['name']}={i['dtype']}{i['shape']}{i['values']}"
  x64 = " [x64]" if prog["x64"] else ""
  args = "; ".join(desc(i) for i in prog["inputs"])
  rows = "".join(f"; batch {i['name']}={i['batch']}" for i in prog["inputs"]
                 if batch and not i["py"] and i["batch"] != i["values"])
  return f"{body + '; ' if body else ''}-> {ret}  with {args}{rows}{x64}"
