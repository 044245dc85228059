"""``path("mcp/", include("mcpsync.contrib.django.urls"))``: connect, callback, disconnect,
and the MCP Apps host pages (:mod:`.views`)."""

from django.urls import path

from . import views

app_name = "mcpsync"

urlpatterns = [
    path("connect/<str:server>/", views.connect, name="connect"),
    path("callback/<str:server>/", views.callback, name="callback"),
    path("disconnect/<str:server>/", views.disconnect, name="disconnect"),
    path("apps/sandbox/", views.app_sandbox, name="app-sandbox"),
    path("apps/<str:server>/call/", views.app_call, name="app-call"),
    path("apps/<str:server>/<str:tool>/", views.app, name="app"),
]
