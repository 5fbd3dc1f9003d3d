"""Comparing a run with an earlier one: the snapshot of a trace (`snapshot`), which trace and
which kernel group of the baseline goes with which of the current run (`matching`), the
comparison of two snapshots (`compare`), what stays the same across runs, findings and devices
(`identity`), the baseline one trace is checked against (`trace_baseline`), the snapshot and
accepted-findings files on disk (`files`) and the accepted-findings ratchet (`accepted`).

It reads what metrics and facts derive from a trace; the engine, reports and commands use it.
Problems are raised (InputError, UsageError) or returned, never printed.
"""
