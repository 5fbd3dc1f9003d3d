"""Preparing the benchmark's inputs: traces tiled to size from a real one, a .gz copy, rank
directories, HTA's directory layout; cached in the work directory, rebuilt when a source changes."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

from common import GZ_LEVEL, MB, log

DEFAULT_SOURCE_REL = "traces/hta/negative_queue_length_values_check/rank0.json.gz"


# The biggest real GPU trace in the corpus (54 MB uncompressed): rank files twice the size of the
# default source's, for the --jobs speedup where a run's start-up weighs less.
DEFAULT_BIG_RANK_SOURCE_REL = "traces/hta/df_index_resolver/df_index_resolver.json.gz"


def _digest(path: Path) -> str:
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{int(st.st_mtime)}"


def _cached(dst: Path, meta: dict) -> bool:
    side = dst.with_name(dst.name + ".meta.json")
    try:
        return dst.exists() and json.loads(side.read_text()) == meta
    except (OSError, ValueError):
        return False


def _mark(dst: Path, meta: dict) -> None:
    dst.with_name(dst.name + ".meta.json").write_text(json.dumps(meta))


def build_scaled(py: str, scale_tool: Path, src: Path, size_mb: int, workdir: Path) -> Path:
    dst = workdir / f"trace_{size_mb}mb.json"
    meta = {"src": _digest(src), "tool": _digest(scale_tool), "target_mb": size_mb}
    if _cached(dst, meta):
        return dst
    log(f"  generating {dst.name} (~{size_mb} MB) with scale_trace.py ...")
    tmp = dst.with_name(dst.name + ".tmp.json")
    cmd = [py, str(scale_tool), str(src), str(tmp), "--target-mb", str(size_mb)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"scale_trace.py failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    os.replace(tmp, dst)
    meta["scale_info"] = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    _mark(dst, {k: meta[k] for k in ("src", "tool", "target_mb")})
    (workdir / f"{dst.name}.scale_info.json").write_text(meta["scale_info"])
    return dst


def build_gz(src_json: Path) -> Path:
    dst = src_json.with_name(src_json.name + ".gz")
    meta = {"src": _digest(src_json), "level": GZ_LEVEL}
    if _cached(dst, meta):
        return dst
    log(f"  compressing {dst.name} (gzip level {GZ_LEVEL}) ...")
    tmp = dst.with_name(dst.name + ".tmp")
    with open(src_json, "rb") as fi, gzip.open(tmp, "wb", compresslevel=GZ_LEVEL) as fo:
        shutil.copyfileobj(fi, fo, 1 << 22)
    os.replace(tmp, dst)
    _mark(dst, meta)
    return dst


def _stamp(d: Path) -> Path:
    """The directory's meta file: beside it, so that the directory holds rank files only."""
    return d.with_name(f"{d.name}.meta.json")


def _cached_dir(d: Path, meta: dict[str, object]) -> bool:
    """Whether `d` holds what `meta` describes (its stamp says so); if not, `d` is made empty."""
    try:
        if json.loads(_stamp(d).read_text()) == meta:
            return True
    except (OSError, ValueError):
        pass
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return False


def build_rank_dir(src: Path, workdir: Path, ranks: int, name: str | None = None) -> Path:
    """``ranks`` copies of the source trace, distributedInfo.rank = 0..ranks-1, in
    ``workdir/name`` (default ``ranks<N>``)."""
    d = workdir / (name or f"ranks{ranks}")
    meta = {"src": _digest(src), "ranks": ranks}
    if _cached_dir(d, meta):
        return d
    log(f"  writing {ranks}-rank directory {d.name}/ ...")
    try:
        import orjson  # fast when present (it is in the project's venv)
        loads, dumps = orjson.loads, orjson.dumps
    except ImportError:
        loads = json.loads

        def dumps(o: object) -> bytes:
            return json.dumps(o, separators=(",", ":")).encode()
    opener = gzip.open if src.name.endswith(".gz") else open
    with opener(src, "rb") as f:
        trace = loads(f.read())
    events = dumps(trace.get("traceEvents", []))  # serialized once, shared by all ranks
    info = trace.get("distributedInfo")
    info = dict(info) if isinstance(info, dict) else {}
    info["world_size"] = ranks
    for r in range(ranks):
        info["rank"] = r
        trace["distributedInfo"] = info
        parts = [dumps(k) + b":" + (events if k == "traceEvents" else dumps(v))
                 for k, v in trace.items()]
        with open(d / f"rank{r}.json", "wb") as f:
            f.write(b"{" + b",".join(parts) + b"}\n")
    _stamp(d).write_text(json.dumps(meta))
    return d


def build_job_dir(sources: list[Path], workdir: Path, ranks: int) -> Path:
    """A job of ``ranks`` rank files tiled from the real ranks ``sources`` (rank i holds the events
    of ``sources[i % len(sources)]``, ``distributedInfo.rank`` = i, ``world_size`` = ranks), each
    a ``.json.gz`` (gzip level GZ_LEVEL), in ``workdir/job<ranks>``; cached like the others."""
    d = workdir / f"job{ranks}"
    meta = {"src": [_digest(s) for s in sources], "ranks": ranks, "level": GZ_LEVEL}
    if _cached_dir(d, meta):
        return d
    log(f"  writing {ranks}-rank job {d} ...")
    docs = []
    for src in sources:
        opener = gzip.open if src.name.endswith(".gz") else open
        with opener(src, "rb") as f:
            docs.append(json.loads(f.read()))
    for r in range(ranks):
        doc = docs[r % len(docs)]
        info = doc.get("distributedInfo")
        doc["distributedInfo"] = {**(info if isinstance(info, dict) else {}), "rank": r, "world_size": ranks}
        with open(d / f"rank{r}.json.gz", "wb") as f:
            f.write(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), GZ_LEVEL))
    _stamp(d).write_text(json.dumps(meta))
    return d


def hta_dir(trace: Path, workdir: Path) -> Path:
    """HTA wants a directory of rank files; one symlink to the trace."""
    d = workdir / f"hta_{trace.stem}"
    d.mkdir(exist_ok=True)
    link = d / "rank0.json"
    if link.is_symlink() or link.exists():
        if link.resolve() == trace.resolve():
            return d
        link.unlink()
    link.symlink_to(trace.resolve())
    return d


def _warm_cache(p: Path) -> None:
    files = sorted(x for x in p.iterdir() if x.is_file()) if p.is_dir() else [p]
    for f in files:
        try:
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass
        except OSError:
            pass


def _uncompressed_mb(p: Path) -> float:
    if not p.name.endswith(".gz"):
        return p.stat().st_size / MB
    n = 0
    with gzip.open(p, "rb") as f:
        while chunk := f.read(1 << 22):
            n += len(chunk)
    return n / MB
