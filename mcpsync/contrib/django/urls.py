"""``path("mcp/", include("mcpsync.contrib.django.urls"))``: connect, callback, disconnect."""

from django.urls import path

from . import views

app_name = "mcpsync"

urlpatterns = [
    path("connect/<str:server>/", views.connect, name="connect"),
    path("callback/<str:server>/", views.callback, name="callback"),
    path("disconnect/<str:server>/", views.disconnect, name="disconnect"),
]
