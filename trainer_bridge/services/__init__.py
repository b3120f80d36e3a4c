"""Writes of the trainer bridge (DESIGN.md: services and selectors)."""
