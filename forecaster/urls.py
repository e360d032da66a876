from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

from forecaster.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers and crawlers ask for /favicon.ico whatever the page links; lazy, because the
    # manifest storage of production only knows the hashed name once collectstatic ran.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.svg"))),
    path("api/v1/", api.urls),
    path("", include("markets.urls")),
    path("", include("arena.urls")),
]
