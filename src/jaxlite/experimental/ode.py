"""Public `jax.experimental.ode`: `odeint` (adaptive Dormand-Prince with an adjoint gradient)
and the step helpers JAX's module exposes."""
from jaxlite._src.numpy.util import promote_dtypes_inexact  # noqa: F401
from jaxlite._src.libs.ode import (  # noqa: F401
    abs2,
    fit_4th_order_polynomial,
    initial_step_size,
    interp_fit_dopri,
    map,
    mean_error_ratio,
    odeint,
    optimal_step_size,
    ravel_first_arg,
    runge_kutta_step,
    safe_map,
    safe_zip,
    zip,
)
from jaxlite._src.base.tree_util import tree_leaves, tree_map  # noqa: F401
from jaxlite.flatten_util import ravel_pytree  # noqa: F401
