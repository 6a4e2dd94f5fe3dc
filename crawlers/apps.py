from django.apps import AppConfig


class CrawlersConfig(AppConfig):
    name = "crawlers"
    verbose_name = "Crawlers"
