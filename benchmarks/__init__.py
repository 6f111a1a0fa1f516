"""Benchmarks: commands that print figures (not timed tests). See docs/benchmarks.md."""
