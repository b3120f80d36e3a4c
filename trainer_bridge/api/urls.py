from django.urls import path

from trainer_bridge.api import views

urlpatterns = [
    path(
        "pools/<slug:slug>/snapshots/<str:digest>/export",
        views.SnapshotExportView.as_view(),
        name="api-snapshot-export",
    ),
]
