"""The baseline's JSON files on disk: reading one (a problem is an InputError naming the file),
telling a snapshot file from a trace, and the bytes a document is written as."""

from __future__ import annotations

import os
from typing import Any

from perflint.baseline.snapshot import SNAPSHOT_SCHEMA, SNAPSHOT_VERSION
from perflint.errors import InputError


def read_json(path: str) -> Any:
    import orjson  # here, not at start-up: most runs have no baseline

    try:
        with open(path, "rb") as fh:
            return orjson.loads(fh.read())
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON: {exc}") from None


def json_bytes(doc: Any) -> bytes:
    """`doc` as perflint writes its JSON files: indented, keys sorted, one trailing newline."""
    import orjson

    # Subjects of accepted entries hold fact values as they are (numpy scalars among them).
    option = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    return orjson.dumps(doc, option=option, default=str) + b"\n"


def is_snapshot_file(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as fh:
        head = fh.read(256)
    return SNAPSHOT_SCHEMA.encode() in head


def read_snapshot(path: str) -> dict[str, Any]:
    """A snapshot file's document, its schema checked."""
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != SNAPSHOT_SCHEMA or not isinstance(doc.get("traces"), list):
        raise InputError(path, f"not a perflint snapshot (expected schema '{SNAPSHOT_SCHEMA}')")
    if doc.get("schema_version") != SNAPSHOT_VERSION:
        raise InputError(path, f"unsupported snapshot schema_version {doc.get('schema_version')!r}")
    return doc
