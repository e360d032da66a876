from django.contrib import admin
from django.urls import include, path

from forecaster.api import api
from markets import views as markets_views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("markets.urls")),
    path("", markets_views.market_list, name="home"),
]
