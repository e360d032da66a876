import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forecaster.settings")
application = get_wsgi_application()

# What is loaded now (Django, the apps, the URLconf, templates) lives as long as the process:
# moved out of the collector's view, it no longer makes each full collection scan it, which
# was most of a page's p95 (bench/README.md §3).
gc.freeze()
