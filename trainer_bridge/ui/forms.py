"""The pool form, and criteria in words.

The form only carries values and places messages next to fields: the rules are
PoolCriteria.parse's and pool_create's, so the page, the API and the importers
refuse the same input with the same words.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms

from tasks_app.errors import DomainError
from tasks_app.languages import LANGUAGES
from trainer_bridge.criteria import BANDS, EXCLUDABLE_FLAGS, PoolCriteria

DEFAULT_EXCLUDED = list(PoolCriteria().exclude_flags)
_WHOLE = re.compile(r"^-?\d{1,12}$")


def _text(label: str, help_text: str = "", **attrs: Any) -> forms.CharField:
    # required=False everywhere: the domain says what is missing, in its words.
    return forms.CharField(label=label, required=False, help_text=help_text, widget=forms.TextInput(attrs=attrs))


class PoolForm(forms.Form):
    slug = _text("Slug", "The pool's permanent name: lowercase letters, digits and hyphens.", autocapitalize="off",
                 spellcheck="false", required=True)  # fmt: skip
    title = _text("Title")
    require_verified = forms.BooleanField(
        label="Verified only", required=False, help_text="The approved version's latest verification is verified."
    )
    max_reward_noise = _text("Max reward noise", "0 to 1; tasks whose noise is unknown are left out.",
                             inputmode="decimal")  # fmt: skip
    bands = forms.MultipleChoiceField(
        label="Difficulty bands",
        required=False,
        choices=[(b, b) for b in BANDS],
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: any band. unknown: no difficulty yet.",
    )
    difficulty_min = _text("Difficulty from", "Unknown difficulty is left out once a bound is set.",
                           inputmode="decimal")  # fmt: skip
    difficulty_max = _text("Difficulty to", inputmode="decimal")
    tags_include = _text("Tags, any of", "Comma-separated, e.g. strings, parsing. Empty: any tag.")
    tags_exclude = _text("Tags, none of", "Comma-separated.")
    languages = forms.MultipleChoiceField(
        label="Languages", required=False, choices=[(x, x) for x in LANGUAGES],
        widget=forms.CheckboxSelectMultiple, help_text="None ticked: any language.",
    )  # fmt: skip
    exclude_flags = forms.MultipleChoiceField(
        label="Leave out tasks flagged",
        required=False,
        choices=[(f, f) for f in EXCLUDABLE_FLAGS],
        widget=forms.CheckboxSelectMultiple,
    )
    max_size = _text("At most", "Tasks a snapshot takes, sampled with the seed. Empty: all that match.",
                     inputmode="numeric")  # fmt: skip
    stratify = forms.BooleanField(
        label="Stratify", required=False, help_text="Sample each band and first tag in proportion."
    )
    seed = _text("Seed", "The same seed samples the same tasks.", inputmode="numeric")

    CRITERIA_FIELDS = (
        "require_verified", "max_reward_noise", "bands", "difficulty_min", "difficulty_max", "tags_include",
        "tags_exclude", "exclude_flags", "max_size", "stratify", "seed", "languages",
    )  # fmt: skip

    @classmethod
    def blank(cls) -> PoolForm:
        defaults = PoolCriteria()
        return cls(initial={"exclude_flags": DEFAULT_EXCLUDED, "stratify": defaults.stratify, "seed": defaults.seed})

    def criteria(self) -> dict[str, Any]:
        """The criteria as plain data for PoolCriteria.parse: read from what was sent,
        not from Django's cleaning, so a bad value reaches the domain's check."""
        data = self.data
        out: dict[str, Any] = {
            "require_verified": data.get("require_verified") in ("on", "true", "1"),
            "stratify": data.get("stratify") in ("on", "true", "1"),
            "bands": data.getlist("bands"),
            "languages": data.getlist("languages"),
            # Always sent: none ticked means leave none out, not the default.
            "exclude_flags": data.getlist("exclude_flags"),
        }
        for name in ("max_reward_noise", "difficulty_min", "difficulty_max", "tags_include", "tags_exclude"):
            out[name] = (data.get(name) or "").strip() or None
        for name in ("max_size", "seed"):
            raw = (data.get(name) or "").strip()
            # A whole number as an int; anything else as typed, for parse to name.
            out[name] = int(raw) if _WHOLE.match(raw) else (raw or None)
        return out

    def add_domain_error(self, exc: DomainError) -> None:
        """Put each message of a domain error beside its field; the rest above the form."""
        self.errors  # noqa: B018 - runs the (lenient) cleaning, which add_error needs
        details = exc.details if isinstance(exc.details, dict) else {}
        placed = False
        for name, messages in details.items():
            if not isinstance(messages, list):
                continue
            for message in messages:
                self.add_error(name if name in self.fields else None, str(message))
                placed = True
        if not placed:
            self.add_error(None, exc.message)


def criteria_summary(criteria: dict[str, Any]) -> list[str]:
    """What a pool's criteria select, in short phrases; the defaults go unsaid."""
    c = PoolCriteria.parse(criteria)
    parts = []
    if c.require_verified:
        parts.append("verified only")
    if c.max_reward_noise is not None:
        parts.append(f"noise ≤ {c.max_reward_noise:g}")
    if c.bands:
        parts.append("bands " + ", ".join(c.bands))
    if c.difficulty_min is not None or c.difficulty_max is not None:
        low = "…" if c.difficulty_min is None else f"{c.difficulty_min:g}"
        high = "…" if c.difficulty_max is None else f"{c.difficulty_max:g}"
        parts.append(f"difficulty {low} to {high}")
    if c.tags_include:
        parts.append("tags " + " or ".join(c.tags_include))
    if c.tags_exclude:
        parts.append("not " + ", ".join(c.tags_exclude))
    if c.languages:
        parts.append("in " + " or ".join(c.languages))
    if list(c.exclude_flags) != DEFAULT_EXCLUDED:
        parts.append("leaving out " + (", ".join(c.exclude_flags) if c.exclude_flags else "no flag"))
    if c.max_size is not None:
        parts.append(f"at most {c.max_size} ({'stratified, ' if c.stratify else ''}seed {c.seed})")
    return parts or ["every approved task"]


def criteria_facts(criteria: dict[str, Any]) -> list[tuple[str, str]]:
    """Each criterion with its value as a person reads it (lists joined, None as "-")."""
    out = []
    for name, value in PoolCriteria.parse(criteria).as_dict().items():
        if isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, list):
            text = ", ".join(value) or "none"
        else:
            text = "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
        out.append((name, text))
    return out
