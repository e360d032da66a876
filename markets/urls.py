from django.urls import path

from markets import views

app_name = "markets"
urlpatterns = [
    path("markets/", views.market_list, name="list"),
]
