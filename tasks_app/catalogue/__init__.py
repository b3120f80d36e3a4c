"""The platform's sample catalogue: tasks written for this project, stored as data.

One JSON file per area under data/ (strings, arithmetic, data structures,
parsing, algorithms, data processing), each a list of
`{"slug", "title", "tags", "seed_state", "content"}` objects whose content
is what `VersionContent.parse` accepts. Every task carries a reference
solution and at least one adversarial (wrong) one, with a note saying what
is wrong with it; tests/tasks_app/test_catalogue.py runs them all.
"""

from tasks_app.catalogue.entries import SEED_STATES, CatalogueEntry, catalogue_entries
from tasks_app.catalogue.loading import LoadReport, catalogue_load

__all__ = ["SEED_STATES", "CatalogueEntry", "LoadReport", "catalogue_entries", "catalogue_load"]
