"""The Kineto reader follows its column specification (perflint/readers/kineto/columns.py), and its
modules do not reach into each other's private state (that they import in no circle is
tests/tools/test_layering.py's check, for every module).

The specification drives the schema, the builders and the C scanner's row order; the extension
reports the rows it fills and the arg keys it reads, and must agree (a build that does not is
never used, so without these tests its speed-up would be lost silently).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import msgspec
import pytest

from perflint.readers.kineto import columns, native_scan, schema
from perflint.readers.kineto.columns import DEFAULT, FIELDS, SCANNER_COMM_ROWS, SCANNER_ROWS, TABLE_TYPES, TABLES
from tests.conftest import FIXTURES, ROOT

PKG = "perflint.readers.kineto"
KINETO = ROOT / "perflint" / "readers" / "kineto"


def _kscan() -> object:
    """The extension; skipped where it was not built (a build that fails to import fails here)."""
    if importlib.util.find_spec(f"{PKG}._kscan") is None:
        pytest.skip("C scanner not built (perflint/readers/kineto/_kscan.c)")
    return importlib.import_module(f"{PKG}._kscan")


def test_scanner_fills_the_specified_rows() -> None:
    rows = getattr(_kscan(), "ROWS", None)
    assert rows == SCANNER_ROWS, "_kscan.c fills its rows in another order than columns.SCANNER_ROWS: rebuild it, or align the two"
    assert native_scan.built()  # and the reader uses it


def test_scanner_fills_the_specified_collective_records() -> None:
    assert getattr(_kscan(), "COMM_ROWS", None) == SCANNER_COMM_ROWS
    record = {r for rows in SCANNER_COMM_ROWS for r in rows}
    assert record == {r for f in FIELDS if f.record for r in f.rows}  # only in the records, never a row of every event
    assert not record & {r for rows in SCANNER_ROWS for r in rows}


def test_scanner_reads_the_specified_arg_keys() -> None:
    keys = getattr(_kscan(), "ARG_KEYS", ())
    want = [k for f in FIELDS if not f.event for k in f.keys]
    assert len(set(keys)) == len(keys)
    assert set(keys) == set(want)


def test_every_scanned_field_has_its_rows() -> None:
    """Each field read from a trace has rows (three for grid and block), each named once."""
    names = [r for rows in (*SCANNER_ROWS, *SCANNER_COMM_ROWS) for r in rows]
    assert len(names) == len(set(names))
    for f in FIELDS:
        assert f.rows and set(f.rows) <= set(names), f.name
    assert columns.ROW["grid.z"] == columns.ROW["grid.x"] + 2


@pytest.mark.parametrize("table", sorted(TABLES))
def test_tables_are_the_models(table: str) -> None:
    """The specification names exactly the model table's columns."""
    spec = [c.name for c in TABLES[table]]
    assert len(spec) == len(set(spec))
    assert set(spec) == {f.name for f in fields(TABLE_TYPES[table])}


def _struct_keys(struct: type[msgspec.Struct]) -> dict[str, str]:
    return {f.name: f.encode_name for f in msgspec.structs.fields(struct)}


def _arg_keys(tables: tuple[str, ...]) -> dict[str, str]:
    read = {c.field.name for t in tables for c in TABLES[t] if not c.field.event and c.field.rule != DEFAULT}
    return {attr: key for f in FIELDS if f.name in read for attr, key in zip(f.attrs, f.keys)}


def test_args_structs_follow_the_specification() -> None:
    """Every arg key a table reads is decoded (the strict struct: complete events' args only)."""
    assert _struct_keys(schema.Args) == _arg_keys(tuple(TABLES))
    assert _struct_keys(schema.XArgs) == _arg_keys(columns.COMPLETE_TABLES)
    first = next(f for f in msgspec.structs.fields(schema.XArgs) if f.name == "ext_id")
    assert first.default is None  # a first spelling is Optional: the next one counts where it is missing


def test_strict_defaults_are_the_lenient_readings() -> None:
    """A missing key decodes strictly to the value the lenient rules make of a missing one."""
    got = msgspec.json.decode(b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {}}', type=schema.XEvent)
    assert got.args.seq == -1 and got.args.grid == (0, 0, 0) and got.args.stack is None and got.args.device is None


WITHOUT_EXTENSION = """
import sys
sys.modules["perflint.readers.kineto._kscan"] = None  # its import fails, as where it was not built
from perflint.readers.kineto import native_scan, reader
from perflint.readers.kineto.reference import build_trace_reference
from perflint.readers.source import read_bytes
from tests.readers.test_perf_equivalence import assert_same_trace
assert not native_scan.built() and not native_scan.available()
path = sys.argv[1]
data = read_bytes(path)
events, doc = reader.decode(path, data)
want = build_trace_reference(path, events, doc)
for size in ("2000", "1000000"):
    import os
    os.environ["PERFLINT_CHUNK_BYTES"] = size
    assert_same_trace(want, reader.read_kineto(path, data))
print(len(want.ops), len(want.gpu))
"""


def test_reads_without_the_extension() -> None:
    """Where the C scanner cannot be imported, the Python builders read the trace (the same tables)."""
    path = FIXTURES / "gpu" / "gemm_fp16_aligned.pt.trace.json.gz"
    run = subprocess.run([sys.executable, "-c", WITHOUT_EXTENSION, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    ops, gpu = map(int, run.stdout.split())
    assert ops > 0 and gpu > 0


# --------------------------------------------------------------------------- module structure


def _modules() -> dict[str, Path]:
    """The package's Python modules by name."""
    return {f"{PKG}.{p.stem}" if p.stem != "__init__" else PKG: p for p in sorted(KINETO.glob("*.py"))}


def _private_members() -> set[str]:
    """Private attributes and methods the kineto modules' classes define (self._x, def _x)."""
    names: set[str] = set()
    for p in KINETO.glob("*.py"):
        for cls in (n for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.ClassDef)):
            for n in ast.walk(cls):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(n.name):
                    names.add(n.name)
                elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and _private(n.attr):
                    names.add(n.attr)
    return names


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_reaches_into_private_state() -> None:
    """No kineto module imports another's private names or touches another object's private
    members (only `self` and `cls` do)."""
    members = _private_members()
    modules = _modules()
    bad = []
    for m, p in modules.items():
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(PKG):
                for a in n.names:
                    if _private(a.name):
                        bad.append(f"{m}: imports {n.module}.{a.name}")
            elif isinstance(n, ast.Attribute) and n.attr in members:
                if not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")):
                    bad.append(f"{m}:{n.lineno}: .{n.attr}")
    assert not bad, bad
