"""The README and docs/ stay true to the code: the gate table, the exit codes, the hosts' log folders
and the command list are checked against what the code defines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from click.testing import CliRunner

from memoir.cards.gate_help import GATE_HELP, gate_table
from memoir.cards.hosts.registry import ROWS
from memoir.flows.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
GATE_START = "<!-- gate table: start (rendered by memoir.cards.gate_help.gate_table; do not edit by hand) -->"
GATE_END = "<!-- gate table: end -->"
README_MAX_LINES = 200  # the front door: what memoir is, install, the first hour, hosts, commands, links


def _exit_constants() -> dict[str, int]:
    """Every module-level `EXIT_* = <int>` under flows/, by name."""
    found: dict[str, int] = {}
    for path in sorted((ROOT / "flows").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, int):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.startswith("EXIT_"):
                        assert found.setdefault(target.id, node.value.value) == node.value.value, target.id
    return found


def test_the_gate_table_in_docs_cards_is_exactly_the_one_rendered_from_gate_help():
    text = (DOCS / "cards.md").read_text(encoding="utf-8")
    block = text.split(GATE_START, 1)[1].split(GATE_END, 1)[0].strip("\n") + "\n"
    assert block == gate_table(), ("docs/cards.md's gate table differs from GATE_HELP: paste the output of "
                                   "`python -c \"from memoir.cards.gate_help import gate_table; "
                                   "print(gate_table(), end='')\"` between its markers")


def test_the_gate_table_has_one_row_per_gate_with_its_whole_help_text():
    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", gate_table(), flags=re.M))
    assert list(rows) == list(GATE_HELP)
    assert all(rows[name] == " ".join(text.split()) for name, text in GATE_HELP.items())


def test_the_exit_code_table_lists_every_exit_constant_with_its_number():
    constants = _exit_constants()
    assert {"EXIT_NOT_PRIVATE": 10, "EXIT_NO_PREFECT": 11}.items() <= constants.items()
    text = (DOCS / "operating.md").read_text(encoding="utf-8")
    table = {name: int(code) for code, name in re.findall(r"^\| (\d+) \| `(EXIT_\w+)` \|", text, flags=re.M)}
    assert table == constants


def test_the_readme_is_short_and_links_every_page_of_docs():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < README_MAX_LINES
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert [p for p in pages if f"](docs/{p})" not in text] == []
    assert "](bench/RESULTS.md)" in text and "](runbooks/README.md)" in text


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_readme_docs_and_results_leads_somewhere():
    pages = [README, *sorted(DOCS.glob("*.md")), ROOT / "bench" / "RESULTS.md"]
    broken = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http:", "https:", "mailto:")):
                continue
            dest = (page.parent / target).resolve() if target else page
            if not dest.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and dest.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", dest.read_text(encoding="utf-8"), flags=re.M)
                if anchor not in {_slug(h) for h in headings}:
                    broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []


def test_the_readme_names_every_hosts_default_log_folder():
    text = README.read_text(encoding="utf-8")
    for host in ROWS:
        assert f"| `{host.name}` |" in text, host.name
        if host.root:
            assert f"`~/{host.root}`" in text, (host.name, host.root)


def test_the_readme_lists_every_command_memoir_help_shows():
    commands = re.findall(r"^- `memoir ([a-z-]+)", README.read_text(encoding="utf-8"), flags=re.M)
    commands += re.findall(r"^- `memoir \w[^`]*` / `memoir ([a-z-]+)", README.read_text(encoding="utf-8"), flags=re.M)
    shown = CliRunner().invoke(cli, ["--help"]).output.split("Commands:", 1)[1]
    names = re.findall(r"^  ([a-z-]+)\s", shown, flags=re.M)
    assert names and sorted(set(names) - set(commands)) == []
