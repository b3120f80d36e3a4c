"""The curator's pool pages: pools, their preview and snapshots, diffs, and exports."""
