from django.urls import path

from trainer_bridge.ui import jobs

app_name = "jobs"
urlpatterns = [
    path("jobs/", jobs.job_list, name="list"),
    path("jobs/<int:job_id>/", jobs.job_detail, name="detail"),
]
