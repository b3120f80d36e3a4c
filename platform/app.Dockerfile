# The platform's application image: web (gunicorn), Celery workers and beat all run it.
# Built from the repository root (compose.yaml does this):
#
#   docker build -f platform/app.Dockerfile -t taskplatform-app .
#
# Sandboxes are not run in this image: sandbox workers start them beside themselves on
# the host's Docker engine (SANDBOX_BACKEND=docker; docs/operations.md).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Dependencies first, in a layer of their own: a code change does not reinstall them.
COPY requirements.txt /app/requirements.txt
RUN pip install -r /app/requirements.txt

# A fixed uid, so every sandbox worker replica on a host owns (and trusts) the shared
# harness copy and sandbox uid locks under SANDBOX_SHARED_DIR.
RUN groupadd --system --gid 10001 platform \
    && useradd --system --uid 10001 --gid platform --home-dir /app --no-create-home --shell /usr/sbin/nologin platform \
    && mkdir -p /app/var/static \
    && chown -R platform:platform /app/var

WORKDIR /app
COPY --chown=root:root . /app

USER platform:platform
EXPOSE 8000
# Overridden per service in compose.yaml; this one is the web server.
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "4", "--threads", "16"]
