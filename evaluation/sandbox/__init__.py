"""Running code in sandboxes: one interface, two backends (bwrap, docker), warm pools."""
