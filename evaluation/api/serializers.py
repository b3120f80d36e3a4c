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
