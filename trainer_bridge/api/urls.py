from django.urls import path

from trainer_bridge.api import views

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
]
