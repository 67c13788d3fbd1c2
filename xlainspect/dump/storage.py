"""Dumps where big jobs keep them: an fsspec URL (`gs://`, `s3://`, `memory://`, ...) read through a
local mirror, the one place xlainspect touches a remote file system.

Every reader of dump files (the directory scan, the HLO and side-file readers, `doctor`'s checks, the
parse cache) works on local paths with bare `os` calls, because a dump is thousands of small files and
per-file overhead is most of a command's cost. A URL is turned into such a path here, once per
command: the objects under it are listed (one listing per top-level folder, all at once: a host's
folder each, in a per-host dump), the ones the mirror lacks are fetched with fsspec's bulk `cat` (its
async file systems, gcsfs and s3fs, send a batch of requests concurrently, never one file after
another), and written under `<cache directory>/remote/<protocol>/<bucket>/<path>` (`xlainspect.cache`).
The mirror keeps each object's generation (gcsfs), ETag (s3fs) or modification time (file systems
without either) and size in a manifest: a later command fetches only objects whose version or size
changed, and a changed object is rewritten, so the parse and answer caches, which key local files by
size and mtime, see it change. On a Dask cluster (`profile --scheduler`) the command only lists a log
dir (`listed`), and each worker mirrors its own host's objects (`local` of each object's URL). With
the cache off (`XLAINSPECT_NO_CACHE=1`, `--no-cache`) the mirror is a temporary folder, removed at exit.

fsspec, gcsfs and s3fs are the `remote` extra (`pip install 'xlainspect[remote]'`), imported only when
a URL is given (asyncio too, for their batches): a run on local files never pays for them.
Credentials are found the way those libraries find them (gcloud's application default
credentials, the AWS credential chain, `STORAGE_EMULATOR_HOST`, `AWS_ENDPOINT_URL`); nothing here
stores them. A bad URL, a missing bucket or object, a refused permission or no network is a DumpError
of one line naming the URL and the cause.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any, TypeGuard

from xlainspect.cache import Cache
from xlainspect.errors import DumpError, one_line
from xlainspect.progress import Progress, silent

_URL = re.compile(r"^(?P<protocol>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")
_DUMPED = re.compile(r"(?:^|/)(?:\d+\.)?(?:[A-Za-z_][\w-]*\.)?module_\d{4,}(?:[./]|$)")
"""A path XLA's dumper wrote (`module_<id>...`, or a file in a per-module folder): the naming rule
`names.MODULE_FILE` classifies, found anywhere in the path relative to the URL."""
_ALSO_READ = re.compile(r"(?:^|/)(?:jax\.log(?:\.gz)?|[^/]*\.xplane\.pb)$")
"""Files commands read beside a dump's: the jax log `capture` saves, jax.profiler's XSpace."""
_BATCH = 256
"""Objects fetched per bulk `cat`: enough for fsspec to keep its concurrent requests busy, few enough
that a batch held in memory stays small however many hosts the dump has."""
_MANIFEST = ".xlainspect-remote.json"

FileSystem = Any
"""An fsspec file system (fsspec ships no types)."""
Details = dict[str, Any]
"""An object's details as fsspec lists them: name, type, size and the store's version fields."""


def is_url(path: str | os.PathLike[str]) -> TypeGuard[str]:
    """Whether `path` is an fsspec URL rather than a local path (`file://` counts as a URL)."""
    return isinstance(path, str) and _URL.match(path) is not None


def local(path: str | os.PathLike[str], progress: Progress = silent) -> Path:
    """The local path to read for `path`: itself, or the mirror of a URL's objects (fetched when new or
    changed). DumpError naming the URL when it cannot be listed or read."""
    if not is_url(path):
        return Path(path)
    if path.startswith("file://"):
        return Path(path.removeprefix("file://"))
    if not path.partition("://")[2].strip("/"):
        raise DumpError(f"{path}: names no bucket or folder")
    fs, root = _filesystem(path)
    with _named(path):
        return _mirror(fs, path, root, progress)


def listed(url: str) -> list[str]:
    """The names, below `url`, of every object under it, listed and none fetched: where a cluster's
    workers fetch each host's own objects, the caller only needs their names. DumpError naming the URL
    when it cannot be listed."""
    fs, root = _filesystem(url)
    root = root.rstrip("/")
    with _named(url):
        fs.invalidate_cache()  # as `_mirror`: a later call must see changes
        found: list[str] = fs.find(root)
    return sorted(_relative(name, root) for name in found if name != root)


def _filesystem(url: str) -> tuple[FileSystem, str]:
    """The fsspec file system for `url` and the path within it; DumpError for an unknown protocol or a
    missing extra."""
    try:
        fsspec = importlib.import_module("fsspec.core")
    except ImportError:
        raise DumpError(f"{url}: reading URLs needs fsspec: pip install 'xlainspect[remote]'") from None
    try:
        return fsspec.url_to_fs(url)
    except ImportError as error:  # fsspec knows the protocol, its implementation is not installed
        raise DumpError(f"{url}: {error} (pip install 'xlainspect[remote]')") from None
    except ValueError as error:
        raise DumpError(f"{url}: not a URL fsspec can read ({error})") from None


def _mirror(fs: FileSystem, url: str, root: str, progress: Progress) -> Path:
    """Fetch what the mirror of `url` lacks; its local folder (or file, for a URL naming one object).
    A folder's sub-folders (a host's each, in a per-host dump) are listed `_FOLDERS_AT_ONCE` at a time,
    and each is mirrored with a manifest of its own: what is held at once is one batch of listings and
    one batch of contents, whatever the number of hosts."""
    root = root.rstrip("/")
    fs.invalidate_cache()  # fsspec keeps listings per file system instance: a later call must see changes
    info: Details = fs.info(root)
    target = _mirror_folder(url)
    if info["type"] != "directory":
        name = root.rpartition("/")[2]
        _update(fs, target, {name: (root, info)})
        return target / name
    top: list[Details] = fs.ls(root, detail=True)
    folders = sorted(entry["name"] for entry in top if entry["type"] == "directory")
    loose = {e["name"]: e for e in top if e["type"] != "directory"}
    kept = _update(fs, target, _read_by_commands(loose, root, root), progress, url)
    advance = progress(f"reading {url}", len(folders))
    for start in range(0, len(folders), _FOLDERS_AT_ONCE):
        chunk = folders[start : start + _FOLDERS_AT_ONCE]
        for folder, listing in zip(chunk, _find_all(fs, chunk)):
            kept += _update(fs, target / _relative(folder, root), _read_by_commands(listing, folder, root))
            advance(1)
    _forget_folders(target, {_relative(folder, root) for folder in folders})
    if not kept:
        raise DumpError(f"{url}: no files that XLA's dumper or jax.profiler writes there")
    return target


_FOLDERS_AT_ONCE = 32
"""Folders listed concurrently: a pod's dump is a folder per host, each a few hundred to thousands of
objects."""


def _read_by_commands(listing: dict[str, Details], folder: str, root: str) -> dict[str, tuple[str, Details]]:
    """The objects of a listing a command may read (path below `folder` -> (object name, details)):
    those XLA's dumper names, jax logs and profiles (the rest of a bucket is not fetched)."""
    kept: dict[str, tuple[str, Details]] = {}
    for name, entry in listing.items():
        below_root = _relative(name, root)
        if entry["type"] != "directory" and (_DUMPED.search(below_root) or _ALSO_READ.search(below_root)):
            kept[_relative(name, folder)] = (name, entry)
    return kept


def _update(
    fs: FileSystem, target: Path, objects: dict[str, tuple[str, Details]], progress: Progress = silent, url: str = ""
) -> int:
    """Bring the mirror folder `target` to `objects` (path below it -> (object name, details)): fetch
    those whose version or size its manifest does not hold, in bulk, and delete those gone. Returns
    how many objects it holds. `progress` hears of each batch fetched (a folder of one host's many
    files; a pod's folders are counted by `_mirror` instead)."""
    manifest = _read_manifest(target)
    wanted = {name: _version(entry) for name, (_, entry) in objects.items()}
    missing = [name for name, version in wanted.items() if manifest.get(name) != version]
    advance = (progress if missing else silent)(f"fetching {url}", len(missing))  # no stage: nothing to fetch
    for start in range(0, len(missing), _BATCH):
        batch = missing[start : start + _BATCH]
        fetched: dict[str, bytes | BaseException] = fs.cat([objects[name][0] for name in batch], on_error="return")
        for name in batch:
            data = fetched[objects[name][0]]
            if isinstance(data, BaseException):
                raise data
            Cache.write(target / name, data)
            manifest[name] = wanted[name]
        advance(len(batch))
    gone = set(manifest) - set(wanted)
    for name in gone:  # gone from the bucket: gone from the mirror
        with contextlib.suppress(OSError):
            os.unlink(target / name)
        del manifest[name]
    if missing or gone or not (target / _MANIFEST).exists():
        target.mkdir(parents=True, exist_ok=True)
        Cache.write(target / _MANIFEST, json.dumps(manifest, sort_keys=True).encode())
    return len(wanted)


def _forget_folders(target: Path, folders: set[str]) -> None:
    """Delete mirrored folders (those with a manifest) whose folder left the bucket."""
    with contextlib.suppress(OSError):
        for child in target.iterdir():
            if child.is_dir() and child.name not in folders and (child / _MANIFEST).exists():
                shutil.rmtree(child, ignore_errors=True)


def _find_all(fs: FileSystem, folders: list[str]) -> list[dict[str, Details]]:
    """`fs.find(folder, detail=True)` of each folder: one gathered batch of coroutines on an async file
    system (gcsfs, s3fs), one call after another on others."""
    if not folders:
        return []
    if getattr(fs, "async_impl", False):
        import asyncio

        asyn = importlib.import_module("fsspec.asyn")

        async def gather() -> list[dict[str, Details]]:
            return await asyncio.gather(*(fs._find(folder, detail=True) for folder in folders))

        return asyn.sync(fs.loop, gather)
    return [fs.find(folder, detail=True) for folder in folders]


def _relative(name: str, root: str) -> str:
    """An object's path below `root`; a name that would climb out of the mirror is refused."""
    relative = name[len(root) + 1 :]
    if not relative or any(part in ("", ".", "..") for part in relative.split("/")):
        raise DumpError(f"{name}: an object name that is no file path")
    return relative


def _version(info: Details) -> list[str | int | None]:
    """What changes when an object is rewritten: gcsfs's generation, s3fs's ETag, else the modification
    time a file system reports, with the size."""
    for key in ("generation", "ETag", "etag", "md5Hash", "mtime", "LastModified", "created"):
        if info.get(key) is not None:
            return [str(info[key]), info.get("size")]
    return [None, info.get("size")]


def _mirror_folder(url: str) -> Path:
    """`<cache directory>/remote/<protocol>/<bucket and path>`, readable as the URL it mirrors; a
    temporary folder removed at exit when caching is off."""
    cache = Cache.configured()
    if not cache.enabled:
        folder = Path(tempfile.mkdtemp(prefix="xlainspect-remote-"))
        atexit.register(shutil.rmtree, folder, True)
        return folder
    protocol, _, rest = url.partition("://")
    parts = [p for p in rest.split("/") if p not in ("", ".", "..")]
    digest = hashlib.blake2b(url.encode(), digest_size=4).hexdigest()  # URLs differing only in what was dropped
    return cache.directory.joinpath("remote", protocol, *parts[:-1], f"{parts[-1] if parts else ''}.{digest}")


def _read_manifest(folder: Path) -> dict[str, list[str | int | None]]:
    try:
        return json.loads((folder / _MANIFEST).read_text())
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def _named(url: str) -> Generator[None]:
    """The libraries' errors as one DumpError line naming the URL and the cause. gcsfs logs each
    request it gave up on with its traceback (logger "gcsfs"): the DumpError says it, once."""
    quiet = logging.getLogger("gcsfs")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        yield
    except DumpError:
        raise
    except FileNotFoundError:
        raise DumpError(f"{url}: no such bucket, folder or object") from None
    except PermissionError as error:
        raise DumpError(f"{url}: permission denied ({one_line(error)})") from None
    except _remote_errors() as error:
        raise DumpError(f"{url}: cannot read ({one_line(error)})") from None
    finally:
        quiet.setLevel(level)


def _remote_errors() -> tuple[type[BaseException], ...]:
    """The failures of a request that are about the storage, not our code: OS errors (no network, a
    timeout), and the errors of the HTTP and cloud libraries that are installed."""
    found: list[type[BaseException]] = [OSError, ValueError]
    for module, names in (
        ("aiohttp", ("ClientError",)),
        ("botocore.exceptions", ("BotoCoreError", "ClientError")),
        ("gcsfs.retry", ("HttpError",)),
        ("google.auth.exceptions", ("GoogleAuthError",)),
    ):
        with contextlib.suppress(ImportError):
            imported = __import__(module, fromlist=list(names))
            found += [getattr(imported, name) for name in names]
    return tuple(found)
