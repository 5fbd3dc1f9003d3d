"""FLOP and byte models: per op call (`op_work`), per GPU row (`kernel_work`), per op call
shapes (`model`). Formulas and conventions: docs/flops.md."""

from perflint.metrics.work.models import Work, model
from perflint.metrics.work.trace import kernel_work, op_work, work_ops

__all__ = ["Work", "kernel_work", "model", "op_work", "work_ops"]
