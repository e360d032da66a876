from django.urls import path

from arena import views

app_name = "arena"
urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("cohorts/", views.cohort_list, name="cohorts"),
    path("cohorts/<int:number>/", views.cohort_detail, name="cohort"),
    path("cohorts/<int:number>/agents/<int:agent_id>/", views.agent_detail, name="agent"),
    path("decisions/<int:decision_id>/", views.decision_detail, name="decision"),
]
