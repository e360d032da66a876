# The Forecaster Arena image: one image for the web app, the Celery workers, beat and the
# release step (compose.yaml picks the command). See docs/deploy.md.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what the site runs from: no .venv, database or var/ of a checkout leaks into the image.
COPY pyproject.toml manage.py ./
COPY forecaster ./forecaster
COPY arena ./arena
COPY markets ./markets
COPY agents ./agents
COPY scoring ./scoring
COPY templates ./templates
COPY static ./static
COPY docs ./docs

# Editable, so BASE_DIR stays /app: templates/, static/ and docs/methodology.md are read from
# beside the packages, not from site-packages. The deploy extra adds gunicorn.
RUN pip install -e ".[deploy]"

# Collected at build time, so every container starts with whitenoise's manifest in place
# (forecaster.E002). collectstatic runs only the staticfiles checks and needs no database.
RUN DEBUG=0 OFFLINE_AGENTS=1 python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 app \
    && mkdir -p /data/releases \
    && chown app /data/releases
USER app

ENV DEBUG=0 \
    RELEASES_ROOT=/data/releases

EXPOSE 8000
CMD ["gunicorn", "forecaster.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--worker-class", "gthread", "--threads", "8", "--timeout", "60", "--access-logfile", "-"]
