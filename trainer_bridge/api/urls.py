from django.urls import include, path

from trainer_bridge.api import jobs, rewards, views

urlpatterns = [
    path("pools/", views.PoolListView.as_view(), name="api-pools"),
    path("pools/<slug:slug>/preview/", views.PoolPreviewView.as_view(), name="api-pool-preview"),
    path("pools/<slug:slug>/snapshots/", views.SnapshotListView.as_view(), name="api-snapshots"),
    path("pools/<slug:slug>/snapshots/diff/", views.SnapshotDiffView.as_view(), name="api-snapshot-diff"),
    path(
        "pools/<slug:slug>/snapshots/<str:digest>/export",
        views.SnapshotExportView.as_view(),
        name="api-snapshot-export",
    ),
    path(
        "pools/<slug:slug>/snapshots/<str:digest>/solutions",
        views.SnapshotSolutionsView.as_view(),
        name="api-snapshot-solutions",
    ),
    path("rewards", rewards.RewardBatchView.as_view(), name="api-rewards"),
    path("rewards/<str:batch_id>", rewards.RewardBatchDetailView.as_view(), name="api-reward-batch"),
    path("jobs", jobs.JobListView.as_view(), name="api-jobs"),
    path("jobs/<int:job_id>", jobs.JobDetailView.as_view(), name="api-job"),
    path("jobs/<int:job_id>/metrics", jobs.JobMetricsView.as_view(), name="api-job-metrics"),
    path("jobs/<int:job_id>/rollouts", jobs.JobRolloutsView.as_view(), name="api-job-rollouts"),
    path("", include("trainer_bridge.api.builds")),  # background export builds
]
