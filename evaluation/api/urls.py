from django.urls import path, re_path

from evaluation.api import sessions, views

SESSION = r"^sessions/(?P<session_id>[0-9a-f]{32})"

urlpatterns = [
    path("samples/", views.SampleUploadView.as_view(), name="api-samples"),
    path("samples/<int:upload_id>/", views.SampleUploadDetailView.as_view(), name="api-sample-upload"),
    path("outcomes/", views.OutcomesView.as_view(), name="api-outcomes"),
    path("pass-at-k/", views.PassAtKView.as_view(), name="api-pass-at-k"),
    path("difficulty/", views.DifficultyView.as_view(), name="api-difficulty"),
    re_path(r"^sessions/?$", sessions.SessionListView.as_view(), name="api-sessions"),
    re_path(SESSION + r"/?$", sessions.SessionDetailView.as_view(), name="api-session"),
    re_path(SESSION + r"/steps/?$", sessions.SessionStepView.as_view(), name="api-session-steps"),
    re_path(SESSION + r"/fork/?$", sessions.SessionForkView.as_view(), name="api-session-fork"),
    re_path(SESSION + r"/submit/?$", sessions.SessionSubmitView.as_view(), name="api-session-submit"),
    re_path(SESSION + r"/renew/?$", sessions.SessionRenewView.as_view(), name="api-session-renew"),
]
