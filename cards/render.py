"""The one jinja2 environment every card file and container is rendered through."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined

env = Environment(
    loader=PackageLoader("cards", "templates"),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    autoescape=False,
)


def render(template: str, **context) -> str:
    return env.get_template(template).render(**context)
