"""What the rollouts say: where each task sits for a solver.

Pure computation: pass@k (passk.py), item-response difficulty and ability (irt.py),
the predictor for tasks with few rollouts (predict.py), near-duplicates
(duplicates.py). On the database: ingesting rollouts (rollouts.py), keeping every
fit (fits.py), scanning for duplicates (duplicate_scan.py) and the reads the pages
and the API make (selectors.py, analytics.py)."""
