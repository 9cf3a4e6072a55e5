"""Exit codes, the error every command raises, and the parser that reports it on one line."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "CliError", "Parser"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``PROG CMD: error: ...`` (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


class CliError(Exception):
    """A command's failure: its message goes to stderr, ``code`` becomes the exit status."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code
