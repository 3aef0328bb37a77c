"""A view built one section per call: the Scaling and What-one-head views.

Each section's builder is registered under its member of the page's ``Section`` enum where it is
defined (``@SECTIONS.builds(Section.RANK)``); ``SECTIONS.view(section, inputs)`` validates the
inputs and runs the chosen builder. The two views differ only in their sections and inputs; the
dispatch lives here once.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, Generic, TypeVar

E = TypeVar("E", bound=Enum)
In = TypeVar("In")
Builder = TypeVar("Builder", bound=Callable[..., Any])


class SectionViews(Generic[E, In]):
    """The builders of a page's sections, one per member of ``sections``, each a function of the
    validated inputs returning that section's view (a frozen dataclass)."""

    def __init__(self, sections: type[E], validate: Callable[[In], In]) -> None:
        self.sections, self.validate = sections, validate
        self.builders: dict[E, Callable[[In], Any]] = {}

    def builds(self, section: E) -> Callable[[Builder], Builder]:
        """Register the decorated function as ``section``'s builder (once per section)."""

        def register(fn: Builder) -> Builder:
            if section in self.builders:
                raise ValueError(f"{section!r} already has a builder: {self.builders[section].__name__}")
            self.builders[section] = fn
            return fn

        return register

    def missing(self) -> list[E]:
        """Sections with no builder yet (none once the view module has loaded)."""
        return [s for s in self.sections if s not in self.builders]

    def view(self, section: E | str, inputs: In) -> Any:
        """The view of one section (a member, or its label: an old link's value) on the validated
        ``inputs``. ValueError on a bad input."""
        return self.builders[self.sections(section)](self.validate(inputs))
