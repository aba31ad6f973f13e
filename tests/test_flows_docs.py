"""Docs are tested: the runbook index lists every page, and the flow commands have help text."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memoir.flows.cli.main import cli

RUNBOOKS = Path(__file__).resolve().parents[1] / "runbooks"


def test_the_runbook_index_links_every_runbook_page():
    index = (RUNBOOKS / "README.md").read_text()
    pages = sorted(p.name for p in RUNBOOKS.glob("*.md") if p.name != "README.md")
    assert {"overflow-replay.md", "nightly-run-failed.md"} <= set(pages)
    missing = [p for p in pages if f"]({p})" not in index]
    assert not missing, f"runbooks/README.md does not list {missing}"


def test_flow_commands_have_help_and_name_their_runbook():
    runner = CliRunner()
    for args, runbook in ((["replay"], "overflow-replay.md"), (["serve"], "nightly-run-failed.md"),
                          (["flow", "run"], "nightly-run-failed.md")):
        out = runner.invoke(cli, [*args, "--help"])
        assert out.exit_code == 0 and runbook in "".join(out.output.split()), args
    run_help = runner.invoke(cli, ["run", "--help"]).output
    assert "--wait" in run_help and "--flow" in run_help
