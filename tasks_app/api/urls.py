from django.urls import path

from tasks_app.api import repository, views

urlpatterns = [
    path("me/", views.MeView.as_view(), name="api-me"),
    path("tokens/", views.TokenListView.as_view(), name="api-token-list"),
    path("tokens/<int:token_id>/", views.TokenDetailView.as_view(), name="api-token-detail"),
    path("tasks/", views.TaskListView.as_view(), name="api-task-list"),
    path("tasks/<slug:slug>/", views.TaskDetailView.as_view(), name="api-task-detail"),
    path("tasks/<slug:slug>/versions/", views.VersionListView.as_view(), name="api-version-list"),
    path("tasks/<slug:slug>/versions/<int:number>/", views.VersionDetailView.as_view(), name="api-version-detail"),
    path(
        "tasks/<slug:slug>/versions/archive/",
        repository.ArchiveVersionCreateView.as_view(),
        name="api-version-archive",
    ),
    path(
        "tasks/<slug:slug>/versions/<int:number>/tree/",
        repository.TreeArchiveView.as_view(),
        name="api-version-tree",
    ),
    path(
        "tasks/<slug:slug>/versions/<int:number>/files/<path:path>",
        repository.TreeFileView.as_view(),
        name="api-version-file",
    ),
    path(
        "tasks/<slug:slug>/versions/<int:number>/solutions/",
        views.SolutionListView.as_view(),
        name="api-solution-list",
    ),
    path("tasks/<slug:slug>/diff/", views.DiffView.as_view(), name="api-diff"),
    path("tasks/<slug:slug>/transitions/", views.TransitionListView.as_view(), name="api-transition-list"),
    path("review-queue/", views.ReviewQueueView.as_view(), name="api-review-queue"),
    path("archives/", repository.ArchiveTaskCreateView.as_view(), name="api-archive-create"),
    path("import/", views.ImportView.as_view(), name="api-import"),
    path("export/", views.ExportView.as_view(), name="api-export"),
]
