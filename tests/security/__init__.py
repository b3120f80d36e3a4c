"""Hostile programs against the sandboxes: none may pass, escape, or break the host."""
