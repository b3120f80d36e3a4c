from django.urls import path

from evaluation.api import views

urlpatterns = [
    path("samples/", views.SampleUploadView.as_view(), name="api-samples"),
    path("samples/<int:upload_id>/", views.SampleUploadDetailView.as_view(), name="api-sample-upload"),
    path("outcomes/", views.OutcomesView.as_view(), name="api-outcomes"),
    path("pass-at-k/", views.PassAtKView.as_view(), name="api-pass-at-k"),
    path("difficulty/", views.DifficultyView.as_view(), name="api-difficulty"),
]
