"""`jax.debug.visualize_sharding` / `visualize_array_sharding` / `inspect_array_sharding`.

JAX draws the device grid with `rich` and raises ValueError without it. jaxlite uses `rich` when
it is installed (the same table JAX builds) and otherwise prints the same layout as plain text:
rich's SQUARE box, one cell per distinct shard holding "CPU i,j", cell width and height from
JAX's formula (10 * scale rows tall, 2.5 columns per row, shard fraction of the array, at least
`min_width`), text centred, columns shrunk in proportion when the table would pass `max_width`.
The one layout difference from rich: a label wider than its shrunk cell keeps its padding's
share and is shown whole (rich wraps it into "…" over the id, which is unreadable).
"""
from __future__ import annotations

import importlib.util
import sys

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import tree_util


def _chunk_index(size, slc) -> int:
  if slc.start is None and slc.stop is None:
    return 0
  return slc.start // (slc.stop - slc.start)


def _layout(shape, sharding, scale, min_width, max_width):
  """JAX's grid: {(row, col): (label, width, height or None)}, rows and cols counts."""
  if len(shape) > 2 or len(shape) < 1:
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  base_height = int(10 * scale)
  aspect = (shape[1] if len(shape) == 2 else 1) / shape[0]
  base_width = int(base_height * aspect)
  kind = next(iter(sharding.device_set)).platform.upper()
  ids, widths, heights = {}, {}, {}
  for dev, idx in sharding.devices_indices_map(tuple(shape)).items():
    idx = tuple(slice(i, i + 1) if isinstance(i, int) else i for i in idx)
    chunk = tuple(_chunk_index(n, s) for n, s in zip(shape, idx))
    if len(idx) == 2:
      v, h = idx
      vsize = v.stop - v.start if v.stop is not None else shape[0]
      hsize = h.stop - h.start if h.stop is not None else shape[1]
      heights[chunk], widths[chunk] = vsize / shape[0], hsize / shape[1]
    else:
      (h,) = idx
      hsize = h.stop - h.start if h.stop is not None else shape[0]
      chunk = (0,) + chunk
      heights[chunk], widths[chunk] = None, hsize / shape[0]
    ids.setdefault(chunk, set()).add(dev.id)
  rows = max(c[0] for c in ids) + 1
  cols = max(c[1] for c in ids) + 1
  cells = {}
  for c in ids:
    label = f"{kind} " + ",".join(str(i) for i in sorted(ids[c]))
    width = min(max(int(widths[c] * base_width * 2.5), min_width), max_width)
    height = 1 if heights[c] is None else int(heights[c] * base_height)
    left, rem = divmod(width - len(label) - 2, 2)
    top, vrem = divmod(height - 2, 2)
    cells[c] = (label, (max(top, 0), max(left + rem, 0), max(top + vrem, 0), max(left, 0)))
  return cells, rows, cols


def _ratio_reduce(total, ratios, maximums, values):
  """Rich's `ratio_reduce`: takes `total` away from `values` in proportion to `ratios`."""
  ratios = [r if m else 0 for r, m in zip(ratios, maximums)]
  total_ratio = sum(ratios)
  if not total_ratio:
    return list(values)
  remaining, out = total, []
  for ratio, maximum, value in zip(ratios, maximums, values):
    if ratio and total_ratio > 0:
      distributed = min(maximum, round(ratio * remaining / total_ratio))
      out.append(value - distributed)
      remaining -= distributed
      total_ratio -= ratio
    else:
      out.append(value)
  return out


def _render_plain(cells, rows, cols, max_width) -> str:
  widths = [max(len(cells[r, c][0]) + cells[r, c][1][1] + cells[r, c][1][3]
                for r in range(rows)) for c in range(cols)]
  if sum(widths) + cols + 1 > max_width:
    excess = sum(widths) + cols + 1 - max_width
    widths = _ratio_reduce(excess, [1] * cols, [w - 1 for w in widths], widths)
  heights = [max(1 + cells[r, c][1][0] + cells[r, c][1][2] for c in range(cols))
             for r in range(rows)]

  def rule(left, mid, right):
    return left + mid.join("─" * w for w in widths) + right

  lines = [rule("┌", "┬", "┐")]
  for r in range(rows):
    grid = []
    for c in range(cols):
      label, (top, right, bottom, left) = cells[r, c]
      w = widths[c]
      inner = w - left - right
      if inner < len(label):  # the cell was shrunk: padding goes first, then the label
        inner = min(len(label), w)
        left = (w - inner) // 2
        label = label if inner == len(label) else label[:max(inner - 1, 0)] + "…"
      text = " " * left + label.center(inner) + " " * (w - left - inner)
      column = [" " * w] * top + [text] + [" " * w] * (heights[r] - top - 1)
      grid.append(column)
    for i in range(heights[r]):
      lines.append("│" + "│".join(col[i] for col in grid) + "│")
    lines.append(rule("├", "┼", "┤") if r < rows - 1 else rule("└", "┴", "┘"))
  return "\n".join(lines)


def visualize_sharding(shape, sharding, *, use_color: bool = True, scale: float = 1.,
                       min_width: int = 9, max_width: int = 80, color_map=None):
  """Prints the layout of an array of `shape` over the devices of `sharding`."""
  shape = tuple(shape)
  cells, rows, cols = _layout(shape, sharding, scale, min_width, max_width)
  if importlib.util.find_spec("rich") is not None:
    return _render_rich(cells, rows, cols, use_color, max_width, color_map)
  sys.stdout.write(_render_plain(cells, rows, cols, max_width) + "\n")


def _render_rich(cells, rows, cols, use_color, max_width, color_map):
  import rich.align
  import rich.box
  import rich.console
  import rich.padding
  import rich.table
  console = rich.console.Console(width=max_width)
  # jaxlite draws without colours (JAX colours only with matplotlib and a colour terminal).
  table = rich.table.Table(show_header=False, show_lines=True, padding=0, highlight=True,
                           pad_edge=False, box=rich.box.SQUARE)
  for r in range(rows):
    table.add_row(*[rich.padding.Padding(rich.align.Align(cells[r, c][0], "center",
                                                          vertical="middle"), cells[r, c][1])
                    for c in range(cols)])
  console.print(table, end="\n\n")


inspect_sharding_p = core.Primitive("inspect_sharding")


def _inspect_impl(x, *, callback):
  # Run whole (an unpartitioned program): the value lives on the default device.
  from jaxlite._src.base import devices
  callback(devices.SingleDeviceSharding(devices.default_device()))
  return []


def _register_inspect():
  from jaxlite._src.compiler import passes
  from jaxlite._src.interpreters import ad, batching
  p = inspect_sharding_p
  p.multiple_results = True
  p.def_impl(_inspect_impl)
  p.def_abstract_eval(lambda x, **params: [])
  passes.effectful_primitives.add(p)  # no results: kept by DCE for its callback
  from jaxlite._src.compiler.xla import lowering as hlo
  # compiled: the partitioner called back when it partitioned (Program); nothing runs
  hlo.register(p, lambda ctx, x, **params: [])
  ad.jvp_rules[p] = lambda primals, tangents, **params: (p.bind(*primals, **params), [])
  ad.primitive_transposes[p] = lambda ct, *args, **params: [None] * len(args)
  batching.primitive_batchers[p] = lambda vals, dims, **params: (p.bind(*vals, **params), [])


_register_inspect()


def inspect_array_sharding(value, *, callback):
  """Calls `callback` with the sharding of every array leaf of `value`: a concrete array's now;
  under a trace, the sharding in the value's type when it has one (explicit axes), else the one
  the propagation pass gives the value, when jit partitions the program (once per partitioned
  program, as JAX calls it at compile time; a program run whole reports the default device)."""
  def inspect(leaf):
    if isinstance(leaf, core.Tracer):
      sharding = core.get_aval(leaf).sharding
      if sharding is not None:
        callback(sharding)
      else:
        inspect_sharding_p.bind(leaf, callback=callback)
    else:
      callback(leaf.sharding)
  tree_util.tree_map(inspect, value)


def visualize_array_sharding(arr, **kwargs):
  """Prints the layout of Array `arr`'s sharding (see `visualize_sharding`)."""
  shape = arr.shape
  inspect_array_sharding(arr, callback=lambda s: visualize_sharding(shape, s, **kwargs))


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(inspect_sharding_p, pk.SHARDING, role="inspect_sharding",
            propagation_rule="inspect")
