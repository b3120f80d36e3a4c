"""Repository tasks (suite kind `repository`): a small project an agent edits, its
tests, protected paths and patches. See docs/repository-tasks.md."""
