"""`profile`: measured time per op, steps and the job from jax.profiler traces, beside each op's roofline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from xlainspect.analysis.commands.cost import ChipChoice, chip_for
from xlainspect.analysis.profile import ProfileReport, only_function
from xlainspect.analysis.profile.costs import unjoined_note
from xlainspect.analysis.profile.hosts import job_profile
from xlainspect.analysis.runner import remembered
from xlainspect.dump.directory import load_dump
from xlainspect.dump.storage import is_url
from xlainspect.dump.xplane import host_traces, url_host_traces


def profile_report(
    trace: str | Path,
    dump: str | Path | None = None,
    chip: ChipChoice = ChipChoice(),
    *,
    function: str | None = None,
    strict: bool = False,
    step_function: str | None = None,
    scheduler: str | None = None,
) -> ProfileReport:
    """Measured time per HLO op from a jax.profiler trace; with the run's dump, each op's roofline time,
    efficiency and time lost, GPU kernels run in command buffers placed on their op. `function` narrows
    it to one function (one that matches nothing is an error); `step_function` names the function whose
    executions are the steps (without step markers, the one with the most device time). `scheduler`, a
    Dask scheduler's address (`tcp://host:8786`), runs each host's read of its trace as a task on that
    cluster, whose workers read the files where they lie: a trace at a URL (`gs://`, `s3://`) is only
    listed here, each worker fetches its host's files, and the report names the URLs; the answer is
    otherwise the same."""
    if scheduler is not None and is_url(trace):  # not remembered: only the workers see the objects
        return _profile(url_host_traces(trace), dump, chip, function, strict, step_function, scheduler)
    return _remembered_profile(
        trace, dump, chip, function=function, strict=strict, step_function=step_function, scheduler=scheduler
    )


@remembered("trace", "dump", uses=("jax", "jaxlib", "google.protobuf"))
def _remembered_profile(
    trace: str | Path,
    dump: str | Path | None,
    chip: ChipChoice,
    *,
    function: str | None,
    strict: bool,
    step_function: str | None,
    scheduler: str | None,
) -> ProfileReport:
    """`profile_report` of local files (URLs mirrored first, by `remembered`), remembered."""
    return _profile(host_traces(trace), dump, chip, function, strict, step_function, scheduler)


def _profile(
    hosts: Mapping[str, Sequence[str | Path]],
    dump: str | Path | None,
    chip: ChipChoice,
    function: str | None,
    strict: bool,
    step_function: str | None,
    scheduler: str | None,
) -> ProfileReport:
    if dump is None:
        return only_function(job_profile(hosts, None, chip_for(None, chip), step_function, scheduler), function)
    loaded = load_dump(dump, strict=strict)
    report = job_profile(hosts, loaded, chip_for(next(iter(loaded.modules), None), chip), step_function, scheduler)
    report.skipped = [*loaded.skipped, *report.skipped]
    if not report.joined:
        labels = report.op_events.labels() if report.op_events is not None else set[str]()
        report.notes.append(unjoined_note(loaded, _joined_folder(report) or str(dump), labels, report.skipped))
    return only_function(report, function)


def _joined_folder(report: ProfileReport) -> str | None:
    """The folder of the dump the shown host's ops joined with (its own in a per-host dump)."""
    job = report.job
    rows = [row for row in job.hosts if row.host == job.ops_host] if job is not None else []
    return rows[0].dump if rows else None
