from django.urls import path

from trainer_bridge.ui import views

# "pools/new" and "pools/preview" have no trailing slash, a pool's pages do: a pool
# may be named "new" and its page is still reachable.
app_name = "pools"
urlpatterns = [
    path("pools/", views.pool_list, name="list"),
    path("pools/new", views.pool_new, name="create"),
    path("pools/preview", views.preview, name="preview"),
    path("pools/<slug:slug>/", views.pool_detail, name="detail"),
    path("pools/<slug:slug>/freeze", views.freeze, name="freeze"),
    path("pools/<slug:slug>/snapshots/<str:digest>/builds", views.build_start, name="build"),
    path("pools/<slug:slug>/builds/<uuid:build_id>", views.build_progress, name="build-progress"),
]
