"""Agent sessions as the platform knows them: records, the idempotent API's services,
and the verdict turned into a reward. The sandboxes are the session host's
(evaluation/sandbox/sessions); this package reaches it through `link`."""
