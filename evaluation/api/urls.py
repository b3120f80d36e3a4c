from django.urls import path

from evaluation.api import proposals, sessions, views

urlpatterns = [
    path("samples/", views.SampleUploadView.as_view(), name="api-samples"),
    path("samples/<int:upload_id>/", views.SampleUploadDetailView.as_view(), name="api-sample-upload"),
    path("outcomes/", views.OutcomesView.as_view(), name="api-outcomes"),
    path("pass-at-k/", views.PassAtKView.as_view(), name="api-pass-at-k"),
    path("difficulty/", views.DifficultyView.as_view(), name="api-difficulty"),
    # As the session routes, no trailing slash (docs/api.md writes them so).
    path(
        "versions/<str:content_hash>/proposed-tests",
        proposals.VersionProposedTestsView.as_view(),
        name="api-version-proposed-tests",
    ),
    path("proposed-tests/accept", proposals.ProposedTestsAcceptView.as_view(), name="api-proposed-tests-accept"),
    path("proposed-tests/dismiss", proposals.ProposedTestsDismissView.as_view(), name="api-proposed-tests-dismiss"),
    # The session routes take no trailing slash (as docs/sessions.md writes them).
    path("sessions", sessions.SessionListView.as_view(), name="api-sessions"),
    path("sessions/<str:session_id>", sessions.SessionDetailView.as_view(), name="api-session"),
    path("sessions/<str:session_id>/steps", sessions.SessionStepView.as_view(), name="api-session-steps"),
    path("sessions/<str:session_id>/fork", sessions.SessionForkView.as_view(), name="api-session-fork"),
    path("sessions/<str:session_id>/submit", sessions.SessionSubmitView.as_view(), name="api-session-submit"),
    path("sessions/<str:session_id>/renew", sessions.SessionRenewView.as_view(), name="api-session-renew"),
]
