#!/bin/sh
exec python -m pytest -q "$@"
