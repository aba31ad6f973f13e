"""The jinja2 environment every card file and container is rendered through: one set of settings."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined


def template_environment(package: str) -> Environment:
    """Templates of `package`, strict about missing fields, no HTML escaping (Markdown and JSON out)."""
    return Environment(
        loader=PackageLoader(package, "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        autoescape=False,
    )


env = template_environment("cards")


def render(template: str, **context) -> str:
    return env.get_template(template).render(**context)
