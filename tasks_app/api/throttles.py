"""One throttle on every API endpoint, counted per token (else per user, else per
client address), at the rate of the view's `throttle_scope` or, without one, the
`user` or `anon` rate. Rates: settings REST_FRAMEWORK DEFAULT_THROTTLE_RATES,
each overridable from the environment (THROTTLE_<SCOPE>). A throttled call is a
429 with Retry-After, in the one error shape."""

from __future__ import annotations

from typing import Any

from rest_framework.throttling import SimpleRateThrottle

from tasks_app.models import ApiToken


class PlatformThrottle(SimpleRateThrottle):
    def __init__(self) -> None:
        # The scope (and so the rate) is known only once the view is: see allow_request.
        pass

    def allow_request(self, request: Any, view: Any) -> bool:
        authenticated = bool(request.user and request.user.is_authenticated)
        self.scope = getattr(view, "throttle_scope", None) or ("user" if authenticated else "anon")
        if not authenticated:
            self.scope = "anon"  # an anonymous caller gets the anonymous rate everywhere
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_rate(self) -> str | None:
        # Read at each call, not frozen at import as DRF's class attribute is: a
        # changed setting (a test's, a reload) takes effect.
        from rest_framework.settings import api_settings

        try:
            return api_settings.DEFAULT_THROTTLE_RATES[self.scope]
        except KeyError:
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured(f"No throttle rate for the scope {self.scope!r}.") from None

    def get_cache_key(self, request: Any, view: Any) -> str:
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"addr-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
