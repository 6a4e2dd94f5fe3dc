"""URL routes: probes, the admin, the delphi API and the donation page."""

from django.contrib import admin
from django.urls import path

from dws_project import health
from web import views as web_views

urlpatterns = [
    path("live", health.live, name="live"),
    path("ready", health.ready, name="ready"),
    path("version", health.version, name="version"),
    path("health", health.health, name="health"),
    path("admin/", admin.site.urls),
    # the donation page (web app)
    path("", web_views.index, name="index"),
]
