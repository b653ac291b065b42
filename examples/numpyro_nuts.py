"""numpyro's NUTS on a small Bayesian linear regression (50 points, slope, intercept, noise).

Runs on jaxlite (`python -m jaxlite examples/numpyro_nuts.py`) or on real JAX (`python
examples/numpyro_nuts.py`); prints the posterior means and standard deviations and the wall
time. `--samples N` sets the warm-up and sample counts.
"""
import argparse
import time

T0 = time.perf_counter()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402


def model(x, y=None):
  slope = numpyro.sample("slope", dist.Normal(0.0, 5.0))
  intercept = numpyro.sample("intercept", dist.Normal(0.0, 5.0))
  sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
  numpyro.sample("y", dist.Normal(slope * x + intercept, sigma), obs=y)


def main(samples=300):
  rng = np.random.default_rng(0)
  x = rng.normal(size=50).astype(np.float32)
  y = (1.5 * x - 0.5 + 0.3 * rng.normal(size=50)).astype(np.float32)
  mcmc = MCMC(NUTS(model), num_warmup=samples, num_samples=samples, progress_bar=False)
  mcmc.run(jax.random.PRNGKey(0), jnp.asarray(x), jnp.asarray(y))
  for name, draws in sorted(mcmc.get_samples().items()):
    print(f"{name:<10s} mean {float(jnp.mean(draws)):.3f} std {float(jnp.std(draws)):.3f}")
  print(f"wall_time {time.perf_counter() - T0:.2f}s")


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--samples", type=int, default=300)
  main(parser.parse_args().samples)
