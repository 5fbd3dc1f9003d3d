"""Kernel names: Itanium demangling, the name read by structure, each library's naming
convention and the classification it gives (category, library, dtype, Tensor Cores)."""
