from django.urls import path

from markets import views

app_name = "markets"
urlpatterns = [
    path("markets/", views.market_list, name="list"),
    path("markets/<str:polymarket_id>/", views.market_detail, name="detail"),
]
