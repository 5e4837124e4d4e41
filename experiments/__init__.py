"""Launchers (absl flags), presets and benchmarks. Flags are defined here only."""
