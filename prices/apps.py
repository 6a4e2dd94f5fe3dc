from django.apps import AppConfig


class PricesConfig(AppConfig):
    name = "prices"
    verbose_name = "Prices"
