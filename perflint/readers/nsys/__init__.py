"""Nsight Systems SQLite exports (`nsys export --type sqlite`): schema detection per export
version (schema), the table queries (queries), device properties (devices), names as Kineto
spells them (names), the NVTX op layer (nvtx) and the reader (reader)."""

from perflint.readers.nsys.reader import NsysReader

__all__ = ["NsysReader"]
