from django.urls import path

app_name = "ui"
urlpatterns: list = []
