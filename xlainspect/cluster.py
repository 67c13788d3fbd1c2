"""Per-host work on a Dask distributed cluster, for a job bigger than one machine: each item a task, run
where the cluster's workers are, only the answers brought back.

A job of a thousand hosts has a thousand traces (100s of MB each) where the hosts wrote them: a shared
file system or a bucket. `workers.map_shared` reads them all on this machine; `map_on_cluster` sends each
host's summary to a worker that reads that host's files where they lie, and gathers the small answers.
Dask distributed is an engine people already run (`dask scheduler`, `dask worker`), with its own
scheduling, retries on a lost worker and dashboards; it is the `dask` extra, imported here, inside the
function, only when a scheduler is given: `import xlainspect` and every local run never load it.

The workers must import the same xlainspect: the functions travel by name. A worker without it, or with
another version, is refused before any task runs. A scheduler that cannot be reached, a worker lost
for good (Dask retries a task on another worker first), or a cluster that goes away mid-run is a
ClusterError of one line: there is no answer, never a part of one.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Generator
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

from xlainspect.errors import XlaInspectError, one_line

T = TypeVar("T")
R = TypeVar("R")

CONNECT_SECONDS = 10.0
"""How long to try to reach the scheduler before saying it cannot be reached."""


class ClusterError(XlaInspectError):
    """The Dask cluster could not run the work: no scheduler at the address, workers without this
    xlainspect, a worker lost for good. Not the input's fault, but as final for this run (exit 2)."""


def map_on_cluster(scheduler: str, function: Callable[[T], R], items: list[T]) -> list[R]:
    """`[function(item) for item in items]`, each item a task on the Dask cluster whose scheduler is at
    `scheduler` (`tcp://host:8786`), in order. An exception a task raises is raised here, as in a local
    run; a cluster that fails is a ClusterError."""
    distributed: Any = _distributed(scheduler)
    with _quiet():
        try:
            client = distributed.Client(scheduler, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            raise ClusterError(f"cannot reach the Dask scheduler at {scheduler}: {one_line(error)}") from None
        with client:
            _same_xlainspect(client, scheduler)
            futures = client.map(function, items, pure=False)
            try:
                return client.gather(futures)
            except _lost(distributed) as error:
                cause = f"{type(error).__name__}: {one_line(error)}"
                raise ClusterError(f"the Dask cluster at {scheduler} lost the run ({cause}): no answer") from None


def _distributed(scheduler: str) -> object:
    try:
        return importlib.import_module("distributed")
    except ImportError:
        raise ClusterError(
            f"running on the Dask scheduler at {scheduler} needs distributed: pip install 'xlainspect[dask]'"
        ) from None


def _same_xlainspect(client: Any, scheduler: str) -> None:
    """Refuse workers that do not run this xlainspect's version (tasks name its functions), or none."""
    mine = _version()
    workers: dict[str, dict[str, dict[str, str | None]]] = client.get_versions(packages=["xlainspect"])["workers"]
    if not workers:
        raise ClusterError(f"the Dask scheduler at {scheduler} has no workers (start some: dask worker {scheduler})")
    for address, found in sorted(workers.items()):
        theirs = found.get("packages", {}).get("xlainspect")
        if theirs != mine:
            raise ClusterError(
                f"the Dask worker {address} runs xlainspect {theirs or '(not installed)'}, this is {mine}: "
                "install the same version on every worker"
            )


def _version() -> str | None:
    try:
        return version("xlainspect")
    except PackageNotFoundError:
        return None


def _lost(distributed: Any) -> tuple[type[BaseException], ...]:
    """What gathering raises when the cluster, not a task, failed: a task whose workers kept dying
    (KilledWorker, after Dask's retries), tasks cancelled or a connection closed as the scheduler left."""
    comm: Any = importlib.import_module("distributed.comm.core")
    utils: Any = importlib.import_module("distributed.utils")
    return (distributed.KilledWorker, utils.CancelledError, comm.CommClosedError, TimeoutError)


@contextlib.contextmanager
def _quiet() -> Generator[None]:
    """Quiet the `distributed` loggers, which log each failed connection and lost worker on stderr: the
    ClusterError says it once."""
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
