"""memorybank: the composition root and the `memorybank` command."""
