"""A tiny model and its training loop: what a project's pre-merge performance test exercises.

torch is imported inside the functions, so that the test module imports without it and the
`perflint.profile()` test skips where torch is missing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def make_model(width: int = 64) -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(width, 4 * width),
        torch.nn.GELU(),
        torch.nn.Linear(4 * width, width),
    )


def train(model: Any, steps: int = 3, batch: int = 32, on_step: Callable[[], None] | None = None) -> float:
    """A few optimizer steps on random data; the last loss. `on_step` is called at the end of each
    step (a profiler's `step()`, which marks the steps in its trace)."""
    import torch

    width = model[0].in_features
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = torch.zeros(())
    for _ in range(steps):
        x = torch.randn(batch, width)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if on_step is not None:
            on_step()
    return float(loss.detach())
