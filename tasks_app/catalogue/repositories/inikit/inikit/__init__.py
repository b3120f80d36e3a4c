"""inikit: read and write INI-style configuration files."""

from inikit.config import Config, MissingOption
from inikit.parser import ParseError, parse
from inikit.writer import dump

__all__ = ["Config", "MissingOption", "ParseError", "dump", "parse"]
