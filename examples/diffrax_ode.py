"""diffrax: solve the damped oscillator y'' = -k y - c y' with Tsit5 and an adaptive step, and
differentiate the final position with respect to (k, c) through the solver (forward mode,
jax.jacfwd).

Runs on jaxlite (`python -m jaxlite examples/diffrax_ode.py`) or on real JAX (`python
examples/diffrax_ode.py`); prints y(t) at a few times, the gradient and the wall time.
"""
import time

T0 = time.perf_counter()

import diffrax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def vector_field(t, y, args):
  k, c = args
  pos, vel = y
  return jnp.stack([vel, -k * pos - c * vel])


def solve(params, ts):
  sol = diffrax.diffeqsolve(
      diffrax.ODETerm(vector_field), diffrax.Tsit5(), t0=0.0, t1=ts[-1], dt0=0.05,
      y0=jnp.array([1.0, 0.0]), args=params, saveat=diffrax.SaveAt(ts=ts),
      stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8),
      adjoint=diffrax.ForwardMode())
  return sol.ys


def main():
  ts = jnp.array([0.5, 1.0, 2.0, 4.0])
  params = (jnp.array(2.0), jnp.array(0.3))
  ys = jax.jit(solve)(params, ts)
  for t, (pos, vel) in zip(ts.tolist(), ys.tolist()):
    print(f"t {t:.1f} position {pos:.6f} velocity {vel:.6f}")
  # forward-mode sensitivities (diffrax.ForwardMode: jax.jacfwd through the solver)
  grad = jax.jit(jax.jacfwd(lambda p: solve(p, ts)[-1, 0]))(params)
  print(f"d position(4)/dk {float(grad[0]):.6f} d position(4)/dc {float(grad[1]):.6f}")
  print(f"wall_time {time.perf_counter() - T0:.2f}s")


if __name__ == "__main__":
  main()
