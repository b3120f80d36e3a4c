from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
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
