"""Presets of `rocmkit infer` (TOML files with the option names as keys)."""
