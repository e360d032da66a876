from django.contrib import admin
from django.urls import include, path

from forecaster.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("markets.urls")),
    path("", include("arena.urls")),
]
