"""The parsed configuration: sections of options, in the order they were read."""

from __future__ import annotations

TRUE_WORDS = frozenset({"1", "yes", "true", "on"})
FALSE_WORDS = frozenset({"0", "no", "false", "off"})
_MISSING = object()


class MissingOption(KeyError):
    """The section or the option does not exist and no default was given."""


class Config:
    def __init__(self) -> None:
        self._sections: dict[str, dict[str, str]] = {}

    def add_section(self, name: str) -> None:
        self._sections.setdefault(name.lower(), {})

    def sections(self) -> list[str]:
        return list(self._sections)

    def options(self, section: str) -> list[str]:
        return list(self._sections.get(section.lower(), {}))

    def has(self, section: str, key: str) -> bool:
        return key.lower() in self._sections.get(section.lower(), {})

    def set(self, section: str, key: str, value: str) -> None:
        self.add_section(section)
        self._sections[section.lower()][key.lower()] = value

    def get(self, section: str, key: str, default: object = _MISSING) -> str:
        options = self._sections.get(section.lower())
        if options is None or key.lower() not in options:
            if default is _MISSING:
                raise MissingOption(f"{section}.{key}")
            return default
        return options[key.lower()]

    def get_int(self, section: str, key: str, default: object = _MISSING) -> int:
        value = self.get(section, key, default)
        if value is default:
            return value
        try:
            return int(value, 0)
        except ValueError:
            raise ValueError(f"{section}.{key}: {value!r} is not an integer") from None

    def get_bool(self, section: str, key: str, default: object = _MISSING) -> bool:
        value = self.get(section, key, default)
        if value is default:
            return value
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise ValueError(f"{section}.{key}: {value!r} is not a boolean")

    def get_list(self, section: str, key: str, separator: str = ",") -> list[str]:
        """The value split on `separator` and on line breaks, blanks dropped."""
        value = self.get(section, key, "")
        items = []
        for line in value.splitlines():
            items.extend(part.strip() for part in line.split(separator))
        return [item for item in items if item]

    def merged(self, other: Config) -> Config:
        """A new Config: this one's options, with `other`'s over them."""
        result = Config()
        for source in (self, other):
            for section in source.sections():
                result.add_section(section)
                for key in source.options(section):
                    result.set(section, key, source.get(section, key))
        return result
