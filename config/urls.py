from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from config.ops import views as ops_views

urlpatterns = [
    # Normally answered by config.ops.middleware.OpsMiddleware before routing; named here so
    # they resolve (and reverse) like any route when that middleware is not in front.
    path("livez", ops_views.livez, name="livez"),
    path("healthz", ops_views.healthz, name="healthz"),
    path("metrics", ops_views.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("api/v1/", include("tasks_app.api.urls")),
    path("api/v1/", include("evaluation.api.urls")),
    path("api/v1/", include("trainer_bridge.api.urls")),
    path("", include("evaluation.ui.urls")),
    path("", include("trainer_bridge.ui.urls")),
    path("", include("trainer_bridge.ui.job_urls")),
    path("", include("tasks_app.ui.urls")),
]

# A failed request's answer: a database that does not answer is a 503 that says so.
handler500 = "config.errors.server_error"
