"""Where each task sits for a solver: pass@k from rollouts (passk.py) and
item-response difficulty and ability (irt.py). Pure computation: the models,
services and Celery tasks that feed and store them live beside the pipeline's."""
