"""Reports render finished results; they never read traces."""
