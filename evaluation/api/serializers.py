"""Input and output shapes of the rollouts and difficulty API (separate, as DESIGN.md asks)."""

from __future__ import annotations

from rest_framework import serializers


class UploadOut(serializers.Serializer):
    id = serializers.IntegerField()
    digest = serializers.CharField()
    filename = serializers.CharField()
    solver = serializers.CharField(allow_null=True)
    samples = serializers.IntegerField()
    created = serializers.IntegerField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    finished = serializers.BooleanField()
    repeated = serializers.BooleanField(required=False)
    skipped = serializers.IntegerField(required=False)


class OutcomeIn(serializers.Serializer):
    task_id = serializers.CharField(max_length=200)
    solver = serializers.CharField(max_length=120)
    sample_id = serializers.CharField(max_length=200)
    passed = serializers.BooleanField()
    completion = serializers.CharField(required=False, allow_blank=True, default="")


class OutcomesIn(serializers.Serializer):
    outcomes = OutcomeIn(many=True, allow_empty=False, max_length=10_000)


class OutcomesOut(serializers.Serializer):
    created = serializers.IntegerField()
    skipped = serializers.IntegerField()


class PassAtKOut(serializers.Serializer):
    task = serializers.CharField()
    solver = serializers.CharField()
    attempts = serializers.IntegerField()
    passes = serializers.IntegerField()
    pass_at_k = serializers.ListField(child=serializers.DictField())


class DifficultyOut(serializers.Serializer):
    fit = serializers.DictField()
    target = serializers.DictField()
    predictor = serializers.DictField()
    tasks = serializers.ListField(child=serializers.DictField())
    solvers = serializers.ListField(child=serializers.DictField())


class RefitOut(serializers.Serializer):
    enqueued = serializers.BooleanField()


# -- tests proposed from generated inputs (evaluation/verification/generated/) ------------------


class ProposedTestIdsIn(serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1), allow_empty=False, max_length=500,
        help_text="Ids of proposed tests (GET /api/v1/versions/{content_hash}/proposed-tests).",
    )  # fmt: skip


class VersionRefOut(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = serializers.CharField()


class ProposedTestOut(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField(source="version.task.slug")
    version = serializers.IntegerField(source="version.number")
    content_hash = serializers.CharField(source="version.content_hash")
    verification = serializers.IntegerField(source="verification_id")
    reason = serializers.CharField(help_text="counterexample | hidden_for_visible")
    mutant_digest = serializers.CharField(help_text="The surviving mutant a counterexample kills; blank otherwise.")
    mutant_description = serializers.CharField()
    args = serializers.CharField(help_text="The input's positional arguments, as a Python literal tuple.")
    kwargs = serializers.CharField(help_text="Its keyword arguments, as a Python literal dict.")
    expected = serializers.CharField(help_text="The reference's answer, as a Python literal.")
    got = serializers.CharField(help_text="What the mutant did: its answer, 'raised ...' or a time-out.")
    test = serializers.JSONField(help_text="The hidden test as the version's suite kind stores one.")
    generator = serializers.CharField()
    seed = serializers.IntegerField()
    state = serializers.CharField(help_text="proposed | accepted | dismissed")
    accepted_in = VersionRefOut(allow_null=True, help_text="The version it was added to, once accepted.")
    decided_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()


class VersionMadeOut(serializers.Serializer):
    task = serializers.CharField(source="task.slug")
    number = serializers.IntegerField()
    content_hash = serializers.CharField()


class SkippedOut(serializers.Serializer):
    task = serializers.CharField()
    reason = serializers.CharField()


class AcceptOut(serializers.Serializer):
    accepted = serializers.IntegerField()
    versions = VersionMadeOut(many=True)
    skipped = SkippedOut(many=True)


class DismissOut(serializers.Serializer):
    dismissed = serializers.IntegerField()
