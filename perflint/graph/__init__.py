"""The kernel/operator graph: links between the reader's tables."""
