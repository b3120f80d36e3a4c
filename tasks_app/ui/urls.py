from django.urls import path

from tasks_app.ui import views

app_name = "ui"
urlpatterns = [
    path("", views.task_list, name="task-list"),
    path("bulk/", views.bulk, name="bulk"),
    path("new/", views.task_create, name="task-create"),
    path("new/solution-row/", views.solution_row, name="solution-row"),
    path("new/archive/", views.archive_upload, name="archive-create"),
    path("review/", views.review_queue, name="review-queue"),
    path("t/<slug:slug>/", views.task_detail, name="task-detail"),
    path("t/<slug:slug>/edit/", views.task_edit, name="task-edit"),
    path("t/<slug:slug>/archive/", views.archive_upload, name="archive-version"),
    path("t/<slug:slug>/transition/", views.task_transition, name="task-transition"),
    path("t/<slug:slug>/versions/", views.version_list, name="version-list"),
    path("t/<slug:slug>/versions/<int:number>/", views.version_detail, name="version-detail"),
    path("t/<slug:slug>/diff/", views.version_diff, name="version-diff"),
]
