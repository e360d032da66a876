from django.urls import path

from arena.views import data as data_views
from arena.views import info as info_views
from arena.views import markets as market_views
from arena.views import models as model_views
from arena.views import pages
from arena.views.page_cache import kept_for_a_minute_or_until_the_data_moves as kept_a_minute
from arena.views.page_cache import kept_until_the_data_moves as kept

app_name = "arena"
# The pages a year of data makes costly are kept whole until the data moves (page_cache.py),
# the status page, which reads the clock too, for a minute at most; the others cost a few
# milliseconds.
urlpatterns = [
    path("", kept(pages.leaderboard, reads=("sort", "cohorts", "view")), name="leaderboard"),
    path("cohorts/", kept(pages.cohort_list), name="cohorts"),
    path("cohorts/<int:number>/", kept(pages.cohort_detail, reads=("range",)), name="cohort"),
    path(
        "cohorts/<int:number>/agents/<int:agent_id>/",
        kept(pages.agent_detail, reads=("range",)),
        name="agent",
    ),
    path("decisions/<int:decision_id>/", kept(pages.decision_detail), name="decision"),
    path("models/", kept(model_views.model_list), name="models"),
    # Stable ids may hold "/" or ":" (a provider-style id): the path converter keeps them.
    path(
        "models/<path:internal_id>/", kept(model_views.model_detail, reads=("range",)), name="model"
    ),
    path("methodology/", info_views.methodology, name="methodology"),
    path("status/", kept_a_minute(info_views.status), name="status"),
    path("about/", info_views.about, name="about"),
    path("data/", data_views.data_page, name="data"),
    path("data/releases/<str:name>/", data_views.release_detail, name="release"),
    # <str:> never holds a "/": a file name with one does not even reach the view.
    path(
        "data/releases/<str:name>/<str:filename>",
        data_views.release_file,
        name="release_file",
    ),
    path("markets/<str:polymarket_id>/", kept(market_views.market_detail), name="market"),
]
