from django.urls import include, path

from . import views

urlpatterns = [
    path("tools", views.tools),
    path("add", views.add),
    path("slow", views.slow),
    path("remote/tools", views.remote_tools),
    path("remote/call/<str:name>", views.remote_call),
    path("login", views.demo_login),
    path("mcp/", include("mcpsync.contrib.django.urls")),
]
