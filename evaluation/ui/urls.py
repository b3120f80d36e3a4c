from django.urls import path

from evaluation.ui import analytics, difficulty, sessions, views

app_name = "verification"
urlpatterns = [
    path("verification/bulk/", views.bulk_verify, name="bulk"),
    path("difficulty/", difficulty.dashboard, name="difficulty"),
    path("analytics/", analytics.dashboard, name="analytics"),
    path("analytics/<str:name>.<str:fmt>", analytics.download, name="analytics-download"),
    path("difficulty/upload/", difficulty.upload, name="difficulty-upload"),
    path("difficulty/refit/", difficulty.refit, name="difficulty-refit"),
    path("difficulty/duplicates/", difficulty.scan_duplicates, name="difficulty-duplicates"),
    path("t/<slug:slug>/versions/<int:number>/verification/", views.report, name="report"),
    path("t/<slug:slug>/versions/<int:number>/verification/progress/", views.progress, name="progress"),
    path("t/<slug:slug>/versions/<int:number>/verification/run/", views.rerun, name="rerun"),
    path(
        "t/<slug:slug>/versions/<int:number>/verification/proposals/accept/",
        views.proposals_accept_all,
        name="proposals-accept",
    ),
    path(
        "t/<slug:slug>/versions/<int:number>/verification/proposals/<int:proposal_id>/accept/",
        views.proposal_accept,
        name="proposal-accept",
    ),
    path(
        "t/<slug:slug>/versions/<int:number>/verification/proposals/<int:proposal_id>/dismiss/",
        views.proposal_dismiss,
        name="proposal-dismiss",
    ),
    path("review/accept-proposed/", views.bulk_accept_proposed, name="bulk-accept-proposed"),
    path("t/<slug:slug>/mutants/<str:digest>/equivalent/", views.mark_equivalent, name="mark-equivalent"),
    path("sessions/<str:session_id>/", sessions.detail, name="session"),
]
