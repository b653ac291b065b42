"""PartitionSpec: per-dimension mesh axis names of a NamedSharding.

Pure data, as in JAX: entries are None, an axis name, a tuple of names, or UNCONSTRAINED."""


class _UnconstrainedPartitionSingleton:
  def __repr__(self):
    return "UNCONSTRAINED"

  def __reduce__(self):
    return (_get_unconstrained, ())


UNCONSTRAINED = _UnconstrainedPartitionSingleton()


def _get_unconstrained():
  return UNCONSTRAINED


def _canonical(e):
  # A one-element tuple means the same as the bare name, and an empty tuple as None.
  if isinstance(e, (tuple, list)):
    e = tuple(e)
    if len(e) == 0:
      return None
    return e[0] if len(e) == 1 else e
  return e


class PartitionSpec:
  """Tuple-like description of how each array dimension maps onto mesh axes."""
  __slots__ = ("_partitions", "unreduced", "reduced")
  UNCONSTRAINED = UNCONSTRAINED

  def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
    for p in partitions:
      if not (p is None or p is UNCONSTRAINED or isinstance(p, (str, tuple, list))):
        raise TypeError(
          f"PartitionSpec entries must be None, an axis name, a tuple of axis names or "
          f"P.UNCONSTRAINED; got {p!r} of type {type(p).__name__}")
    self._partitions = tuple(tuple(p) if isinstance(p, list) else p for p in partitions)
    self.unreduced = frozenset(unreduced)
    self.reduced = frozenset(reduced)

  def __repr__(self):
    inner = repr(self._partitions)[1:-1]
    extra = ""
    if self.unreduced:
      extra += f", unreduced={set(self.unreduced)!r}"
    if self.reduced:
      extra += f", reduced={set(self.reduced)!r}"
    return f"P({inner}{extra})"

  def __reduce__(self):
    return (_make_spec, (self._partitions, self.unreduced, self.reduced))

  def __getitem__(self, i):
    if isinstance(i, slice):
      return PartitionSpec(*self._partitions[i])
    return self._partitions[i]

  def __iter__(self):
    return iter(self._partitions)

  def __len__(self):
    return len(self._partitions)

  def __eq__(self, other):
    if isinstance(other, PartitionSpec):
      return (tuple(map(_canonical, self._partitions))
              == tuple(map(_canonical, other._partitions))
              and self.unreduced == other.unreduced and self.reduced == other.reduced)
    return NotImplemented

  def __hash__(self):
    return hash((tuple(map(_canonical, self._partitions)), self.unreduced, self.reduced))

  def index(self, value):
    return self._partitions.index(value)

  def count(self, value):
    return self._partitions.count(value)

  def _normalized_spec_for_aval(self, ndim):
    parts = tuple(map(_canonical, self._partitions))
    return PartitionSpec(*parts, *([None] * (ndim - len(parts))),
                         unreduced=self.unreduced, reduced=self.reduced)


def _make_spec(parts, unreduced, reduced):
  return PartitionSpec(*parts, unreduced=unreduced, reduced=reduced)


P = PartitionSpec
