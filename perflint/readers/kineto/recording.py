"""What a PyTorch profiler trace may lack, and how torch.profiler records it (Trace.recording)."""

from __future__ import annotations

RECORDING: dict[str, str] = {
    "steps": "ProfilerStep#N markers",
    "steps_hint": "call prof.step() each iteration",
    "steps_fix": (
        "Call prof.step() once per training/inference iteration inside "
        "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)) so each "
        "iteration is recorded as ProfilerStep#N."
    ),
    "shapes": "'Input Dims'",
    "shapes_hint": "profile with record_shapes=True",
    "shapes_fix": "Profile with torch.profiler.profile(record_shapes=True) (and with_stack=True to get source lines).",
    "device": "deviceProperties",
    "device_hint": "an old PyTorch, or stripped metadata",
    "device_fix": (
        "Profile with a recent PyTorch (1.10+) whose Kineto writes deviceProperties; do not strip the "
        "trace's top-level metadata when post-processing it."
    ),
    "memory": "[memory] events",
    "memory_hint": "profile with profile_memory=True",
}
