import json

from click.testing import CliRunner

from cards.config import load_settings
from flows.cli import cli
from flows.status_sections import record_model_run


def _status(home) -> dict:
    from flows import commands  # noqa: F401

    result = CliRunner().invoke(cli, ["--home", str(home), "status", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_status_says_honestly_that_the_model_stage_is_off(memoir_home):
    data = _status(memoir_home)
    assert data["model"]["enabled"] is False
    assert data["model"]["state"].startswith("off: rule stage only")


def test_a_model_alert_of_the_last_run_shows_in_status(memoir_home):
    settings = load_settings(home=memoir_home)
    record_model_run(settings.state_dir, "2026-12-01T03:30:00Z", "on: m at http://127.0.0.1:9", {"timeout": 1},
                     ["model_silent: batch run-c-1 produced nothing within 60 s; requeued"])
    data = _status(memoir_home)
    assert data["model"]["alerts"] == ["model_silent: batch run-c-1 produced nothing within 60 s; requeued"]
    from flows import commands  # noqa: F401

    text = CliRunner().invoke(cli, ["--home", str(memoir_home), "status"]).output
    assert "ALERT    model_silent" in text


def test_a_corrupt_index_is_an_alarm_in_status(memoir_home):
    settings = load_settings(home=memoir_home)
    settings.index_dir.mkdir(parents=True)
    (settings.index_dir / "index.db").write_bytes(b"this is not a database" * 100)
    data = _status(memoir_home)
    assert data["index"]["status"] == "corrupt"
