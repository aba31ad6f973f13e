"""cards/sanitize/generic.py: secrets found by where they stand and how they look, not by a provider prefix.

Every value here is synthetic (typed for this file); the corpus in tests/fixtures/secrets/unlisted.jsonl
covers the shapes one by one, these tests pin the rules' edges.
"""

from __future__ import annotations

import base64

import pytest

from memoir.cards.config import Settings
from memoir.cards.hosts.base import tool_call_text
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.fields import sanitize_value
from memoir.cards.sanitize.generic import decoded_text, random_looking
from memoir.cards.sanitize.patterns import lines_with
from memoir.cards.sanitize.providers import (ARTIFACTORY_HINTS, DETECT_SECRETS_HINTS, _artifactory_hint, _may_find,
                                            provider_plugins)
from memoir.cards.sanitize.scan import sanitize_with_report

CAP = Settings.blob_cap


def _kinds(text: str) -> dict[str, int]:
    return dict(sanitize_with_report(text, CAP).counts)


@pytest.mark.parametrize("command, password", [
    ("mysql -uroot -pQp4vX9kTz2 -e 'show tables'", "Qp4vX9kTz2"),
    ("/usr/bin/mysqldump -u app -p'Wm7#rT2yq' shop", "Wm7#rT2yq"),
    ("docker login registry.example.com --username bot -p Zk81mPq0xW3y", "Zk81mPq0xW3y"),
    ("keytool -list -keystore a.jks -storepass Xr5tQ8w2", "Xr5tQ8w2"),
    ("openssl rsa -in k.pem -passin pass:Hq3nV7c1Lp -out plain.pem", "Hq3nV7c1Lp"),
    ("redis-cli -a Jf6sD2kW9qLm ping", "Jf6sD2kW9qLm"),
    ("smbclient //fs/share -U bob%Tn8vR2xq", "Tn8vR2xq"),
    ("sqlplus system/Pw9xK3mQ@XE", "Pw9xK3mQ"),
    ("cd /srv && sshpass -p Lk2mN8qZ ssh ops@web1 'df -h'", "Lk2mN8qZ"),
])
def test_a_password_given_to_a_tool_as_a_flag_is_redacted_and_the_command_kept(command, password):
    out = sanitize(command, CAP)
    assert password not in out
    assert out == command.replace(password, f"[REDACTED:command_password:{len(password)}]")


@pytest.mark.parametrize("command", [
    "mysql -u root -p shop",  # -p alone: mysql prompts for the password
    "ssh -p 2222 ops@web1",
    "docker run -p 8080:80 nginx",  # -p of `docker run` is a port: only `login` takes a password
    "redis-cli -p 6380 info",
    "openssl pkcs12 -in c.p12 -passin env:P12_PASS -nodes",
    "openssl pkcs12 -in c.p12 -passin file:/run/secrets/p12 -nodes",
    "keytool -list -keystore a.jks -storepass:env STOREPASS",
    "sshpass -p \"$SSH_PASS\" ssh ops@web1",
    "zip -r out.zip src/ -x '*.pyc'",
])
def test_a_flag_that_is_no_password_or_a_reference_to_one_survives(command):
    assert sanitize(command, CAP) == command


@pytest.mark.parametrize("text, value", [
    ("Note that password: Vx7#pLq2 is only for staging", "Vx7#pLq2"),
    ("login with PW=Rk4tz9Qa then reboot", "Rk4tz9Qa"),
    ("the root Passwd is Mn3!xq7Z", "Mn3!xq7Z"),
    ("the client secret: Qs9dW2rT6y goes to the vault", "Qs9dW2rT6y"),
])
def test_a_value_after_a_secret_word_in_any_case_or_mid_sentence_is_redacted(text, value):
    assert value not in sanitize(text, CAP)


@pytest.mark.parametrize("text", [
    "the login failed: the password is wrong",
    "Note that password: required for every user",
    "password reset link expired after 24 hours",
    "pw=$ROUTER_PW",
    "passwd: /etc/passwd is world-readable",
    "PASS: test_parse_2",
    "honestly the secret sauce is caching",
])
def test_secret_words_in_ordinary_sentences_keep_their_sentence(text):
    assert sanitize(text, CAP) == text


def test_a_random_token_after_a_key_word_or_an_equals_sign_goes_whatever_its_prefix():
    assert _kinds("I rotated the API key to zz_live_8fK2qL9xV3mN7pR1tY5wB0cD4") == {"entropy_token": 1}
    assert _kinds("secret 3kP9qLm2Xv8ZrT5wN1bY7cD0fG4hJ6sA2eQ9uI1o") == {"entropy_token": 1}
    assert _kinds("export CI_TRIGGER=trg_Hq83Kdn29XlPq0Zr7Vm4Tb1Wy") == {"entropy_token": 1}


@pytest.mark.parametrize("text", [
    "git show 4f1c2a9e8d7b6c5a4f3e2d1c0b9a8f7e6d5c4b3a --stat",
    "the key commit 4f1c2a9e8d7b6c5a4f3e2d1c0b9a8f7e6d5c4b3a introduced it",  # hex after a plain "key"
    "checksum=9e107d9d372bb6826bd81d3542a419d6",  # hex after `=` is a digest
    "request token id 6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b was logged",
    "the token token_counter_for_batch_2 overflowed",
    "cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo2 ..",
    "# public key: age1he396z8hztk3qj9c2ryfh6ht3k0j2x03te9c7yccrl3lkc9dwfru65wjuy",
])
def test_hashes_ids_names_and_public_keys_after_those_words_survive(text):
    assert sanitize(text, CAP) == text


def test_random_looking_tells_a_token_from_a_name():
    assert random_looking("Hq83Kdn29XlPq0Zr7Vm4Tb1W")
    assert random_looking("7g3kq9xz1m5b2n8c4v6f0d2s9a")
    assert not random_looking("sha256_hexdigest_of_the_file")
    assert not random_looking("SomeVeryLongClassNameFactory2")
    assert not random_looking("6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b")
    assert not random_looking("abcdefghijklmnopqrstuvwx")  # no digit


def test_base64_that_decodes_to_a_credential_goes_and_base64_of_ordinary_text_stays():
    pair = base64.b64encode(b"ci-bot:Wq7#nR2kZx").decode()
    url = base64.b64encode(b"postgres://app:Lm4!qW9z@db0:5432/app").decode()
    text = base64.b64encode(b"Welcome to the staging cluster, please be nice").decode()
    assert _kinds(f'{{"identity":"{pair}"}}') == {"encoded_secret": 1}
    assert _kinds(f"  DATABASE_URL: {url}") == {"encoded_secret": 1}
    assert sanitize(f"  motd: {text}", CAP) == f"  motd: {text}"
    assert decoded_text(text) == "Welcome to the staging cluster, please be nice"
    assert decoded_text("Hq83Kdn29XlPq0Zr7Vm4Tb1W") is None  # random bytes are not text


def test_a_webhook_url_loses_its_token_and_keeps_its_host_and_id():
    out = sanitize("curl -X POST https://discord.com/api/webhooks/123456789012345678/aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9f", CAP)
    assert out == "curl -X POST https://discord.com/api/webhooks/123456789012345678/[REDACTED:webhook_token:43]"
    out = sanitize("https://chat.example.com/hooks/7g3kq9xz1m5b2n8c4v6f0d2s9a", CAP)
    assert out == "https://chat.example.com/hooks/[REDACTED:webhook_token:26]"
    for kept in ("https://github.com/acme/app/settings/hooks/new", "chmod +x .git/hooks/pre-commit",
                 "https://github.com/acme/app/settings/hooks/481516234",
                 "https://github.com/acme/tool/blob/main/examples/hooks/bash_command_validator_example.py"):
        assert sanitize(kept, CAP) == kept


def test_a_url_signature_and_a_token_as_url_user_are_redacted():
    out = sanitize("https://acct.blob.core.windows.net/b/db.bak?sv=2022-11-02&sig=Kq8Xr2Lm9Vt3Wn7Yp1Zs5Bd4Fh6Jc0", CAP)
    assert out.endswith("&sig=[REDACTED:url_token:30]")
    out = sanitize("curl https://Zk81mPq0xW3yTr5v:@api.example.com/v1", CAP)
    assert out == "curl https://[REDACTED:url_token:16]:@api.example.com/v1"


def test_detect_secrets_provider_rules_cover_providers_memoir_has_no_row_for():
    key = "Rw3Q" * 21 + "Xz9+/A=="  # 88 characters, the Azure storage key's length
    line = f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={key};EndpointSuffix=core.windows.net"
    assert key not in sanitize(line, CAP)
    artifactory = "AKCp8" + "kQ2mZ7xR4vN9" * 5
    assert artifactory not in sanitize(f"ARTIFACTORY_API = {artifactory}", CAP)
    reference = "APBxw8RfTsQ4uT9mN2kL5pV3"  # an Artifactory reference token after a tab, and alone on its line
    assert reference not in sanitize(f"x\t{reference}", CAP) and reference not in sanitize(f"ok\n{reference}\n", CAP)


def test_the_provider_rules_read_a_line_with_api_or_map_only_when_it_holds_another_hint():
    token = "kQ2mZ7xR4vN9" * 3
    text = f"see the API docs\nMAP_{token}\nthe APP id {token}\nx AP6{token}\nibm key {token}"
    read = [text[s:e] for s, e in lines_with(text, DETECT_SECRETS_HINTS, _artifactory_hint())]
    assert read == [f"x AP6{token}", f"ibm key {token}"]
    assert f"AP6{token}" not in sanitize(f"x AP6{token}", CAP)  # Artifactory's password shape still goes
    assert ARTIFACTORY_HINTS[1].search("the API")  # a rule off its pinned patterns is hinted by any `AP`


def test_a_detect_secrets_rule_is_skipped_only_on_lines_where_it_would_find_nothing():
    # Pinned: the installed rules are the ones the literals were read from, so the skip is in force.
    assert all(literals is not None for _, _, literals in provider_plugins())
    key = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2"  # 44 characters, an IBM Cloud IAM key's length
    lines = [
        f"ibm_cloud_iam_api_key = {key}", f"TOKEN: {key}", f"the API Token is {key}", f"the API docs say {key}",
        f"SL_API_KEY = {'ab12' * 16}", f"Cloudant_password = {'0f' * 32}", f"IBM_COS_SECRET_KEY = {'a1' * 24}",
        "x AKCp8" + "kQ2mZ7xR4vN9" * 5, f'"AP6{"xY9" * 4}" and the API', f"ſl_api_key = {'ab12' * 16} in the API",
        f"AccountKey={'Rw3Q' * 22}", f"https://api.softlayer.com/soap/v3/{'ab12' * 16}",
    ]
    found = 0
    for line in lines:
        lower = line.lower() if line.isascii() else None
        for plugin, blind, literals in provider_plugins():
            hits = list(plugin.analyze_string(line))
            found += len(hits)
            assert not hits or _may_find(line, lower, blind, literals), (type(plugin).__name__, line)
    assert found >= len(lines) - 2  # the lines above hold secrets the rules do find


def test_the_provider_independent_rules_can_be_left_out_for_the_bench():
    line = "sshpass -p Lk2mN8qZ ssh ops@web1"
    assert sanitize_with_report(line, CAP, generic=False).text == line
    assert "Lk2mN8qZ" not in sanitize_with_report(line, CAP).text


def test_sanitizing_twice_changes_nothing_more():
    text = ("mysql -pQp4vX9kTz2\nNote that password: Vx7#pLq2 here\nsecret 3kP9qLm2Xv8ZrT5wN1bY7cD0fG4hJ6sA2eQ9uI1o\n"
            "https://Zk81mPq0xW3yTr5v:@api.example.com/v1 https://chat.example.com/hooks/7g3kq9xz1m5b2n8c4v6f0d2s9a")
    once = sanitize(text, CAP)
    assert sanitize(once, CAP) == once


def test_a_password_in_a_command_given_as_an_argument_list_is_redacted():
    argv = ["mysql", "-uroot", "-pQp4vX9kTz2", "shop"]
    assert sanitize_value({"command": argv}) == {"command": ["mysql", "-uroot", "-p[REDACTED:command_password:10]", "shop"]}
    assert "Qp4vX9kTz2" not in tool_call_text("shell", {"command": argv})
    assert sanitize_value(["ssh", "-p", "2222", "web1"]) == ["ssh", "-p", "2222", "web1"]
