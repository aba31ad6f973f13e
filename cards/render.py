"""The jinja2 environment every card file and container is rendered through: one set of settings."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined


def template_environment(package: str, *, html: bool = False) -> Environment:
    """Templates of `package`, strict about missing fields; HTML escaping only for `html` pages.

    Markdown and JSON go out as written; an HTML page shows card text, which may hold markup, as text.
    """
    return Environment(
        loader=PackageLoader(package, "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=html,
        autoescape=html,
        auto_reload=False,  # shipped with memoir: never changed under a running process, never stat'ed again
    )


env = template_environment("memoir.cards")


def render(template: str, **context) -> str:
    return env.get_template(template).render(**context)
