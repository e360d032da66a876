from django.urls import path

from arena.views import pages

app_name = "arena"
urlpatterns = [
    path("", pages.leaderboard, name="leaderboard"),
    path("cohorts/", pages.cohort_list, name="cohorts"),
    path("cohorts/<int:number>/", pages.cohort_detail, name="cohort"),
    path("cohorts/<int:number>/agents/<int:agent_id>/", pages.agent_detail, name="agent"),
    path("decisions/<int:decision_id>/", pages.decision_detail, name="decision"),
]
