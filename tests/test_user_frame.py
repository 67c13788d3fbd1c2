"""Issue 45 item 4: host time charged to the user's frame (the first frame outside jax and installed
packages, `by_source.user_frame`), in the steps' `host_ran` and the headline."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from xlainspect.analysis.profile import profile
from xlainspect.analysis.profile.by_source import user_files, user_frame
from xlainspect.dump.xplane import read_trace


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/home/dev/gpu/program/shared_programs/cnn_profile.py", True),
        ("fixtures/generate.py", True),
        ("train.py", True),
        (r"C:\Users\me\project\train.py", True),
        ("/usr/lib/python3.12/site-packages/jax/_src/api.py", False),
        ("/venv/lib/python3.12/site-packages/flax/linen/module.py", False),
        ("/usr/lib/python3/dist-packages/numpy/core/numeric.py", False),
        ("/src/jax/jax/_src/array.py", False),  # a checkout of jax, installed editable
        ("/src/jax/jaxlib/xla_client.py", False),
        ("/home/me/jax_experiments/train.py", True),  # a folder that only starts with jax
    ],
)
def test_user_frame_is_decided_by_the_files_folders(path, expected):
    assert user_frame(path) is expected


def test_user_files_by_base_name_leave_out_jax_and_installed_packages():
    sources = [
        "/home/me/run.py:12",
        "/home/me/run.py:30",
        "/venv/lib/python3.12/site-packages/optax/_src/alias.py:40",
        "/home/me/model/layers.py:7",
    ]
    assert user_files(sources) == {"layers.py": "/home/me/model/layers.py", "run.py": "/home/me/run.py"}


def test_host_time_in_jax_frames_is_charged_to_the_users_frame_around_them():
    """profile_host_bound's `run_step` (generate.py:452, the user's) calls `jax.block_until_ready`:
    its time is run_step's, never jax's `api.py` frame; the pipeline's `make_batch` keeps its own."""
    report = profile(read_trace(FIXTURES / "profiles" / "profile_host_bound"))
    names = {name for step in report.steps for name in step.host}
    assert not [name for name in names if "block_until_ready" in name]
    first = report.steps[0].host
    assert list(first)[:2] == ["generate.py:452 run_step", "generate.py:437 make_batch"]
    assert first["generate.py:452 run_step"] == pytest.approx(5063.6e-6, abs=1e-7)


def test_without_a_users_frame_around_them_jax_frames_keep_their_names():
    """cnn_profile's loop runs at module level, begun before the trace: no frame of the user's wraps
    `block_until_ready` in the trace, so the host time stays on jax's frame (`api.py:2757`)."""
    report = profile(read_trace(FIXTURES / "gpu_corpus" / "cnn_profile" / "trace"))
    assert report.step_summary is not None
    assert list(report.step_summary.typical.host)[:2] == ["api.py:2757 block_until_ready", "array.py:333 __getitem__"]
