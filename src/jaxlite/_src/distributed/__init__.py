"""jaxlite.distributed's machinery: process state over MPI (`state`), MPI collectives on NumPy
buffers (`mpi_collectives`), global arrays (`global_arrays`) and multihost utilities."""
