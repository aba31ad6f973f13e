"""cards/sanitize/ (patterns, validators, detect, scan): named secret shapes go, near-misses survive byte for byte, markers are stable.

Fake keys are assembled at runtime from a prefix and a random-looking tail so no scanner (and no
reader) mistakes this file for a leak; none of them is a real credential.
"""

from __future__ import annotations

import hashlib
import re

import pytest

from memoir.cards.config import Settings
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.detect import Finding
from memoir.cards.sanitize.patterns import BLOB_RUN_MIN
from memoir.cards.sanitize.scan import contains_sensitive, find_secrets, sanitize_with_report

CAP = Settings.blob_cap  # the sanitizer takes the user's cap from its caller; the default one here

ALNUM36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
B64_40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY9x2Lq8Zt3w"
UPPER16 = "Q3EGRS7XMP1E2ZT4"
JWT = "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ" + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
PEM_BODY = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Sx9\nq8Zt3wY6dH1k0pLmN4oQ5rS7tU9vW2xY4zA6bC8dE0fG==\n"


def pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n{PEM_BODY}-----END {label}-----"


# (id, text, the secret that must disappear, the kind its marker must name)
SECRETS = [
    ("aws_access_key_akia", "aws configure set aws_access_key_id AKIA" + UPPER16, "AKIA" + UPPER16, "aws_access_key"),
    ("aws_access_key_asia", "AWS_ACCESS_KEY_ID=ASIA" + UPPER16 + "\n", "ASIA" + UPPER16, "aws_access_key"),
    ("aws_secret_key_env", "export AWS_SECRET_ACCESS_KEY=" + B64_40, B64_40, "aws_secret_key"),
    ("aws_secret_key_ini", "[default]\naws_secret_access_key = " + B64_40 + "\n", B64_40, "aws_secret_key"),
    ("github_ghp", "git push https://x:ghp_" + ALNUM36 + "@github.com/o/r", "ghp_" + ALNUM36, "github_token"),
    ("github_gho", "token: gho_" + ALNUM36, "gho_" + ALNUM36, "github_token"),
    ("github_ghu", "got ghu_" + ALNUM36 + " back", "ghu_" + ALNUM36, "github_token"),
    ("github_ghs", "GH_TOKEN=ghs_" + ALNUM36, "ghs_" + ALNUM36, "github_token"),
    ("github_ghr", "refresh=ghr_" + ALNUM36, "ghr_" + ALNUM36, "github_token"),
    ("github_fine_grained", "github_pat_11ABCDEFG0" + ALNUM36 + "_xY", "github_pat_11ABCDEFG0" + ALNUM36 + "_xY", "github_token"),
    ("openai_legacy", "OPENAI_API_KEY=sk-" + ALNUM36 + "T3Blbk9xYz12", "sk-" + ALNUM36 + "T3Blbk9xYz12", "openai_key"),
    ("openai_project", "key is sk-proj-" + ALNUM36 + "-Zq_81", "sk-proj-" + ALNUM36 + "-Zq_81", "openai_key"),
    ("anthropic", "client = Anthropic(api_key='sk-ant-api03-" + ALNUM36 + "_Xy-9AA')", "sk-ant-api03-" + ALNUM36 + "_Xy-9AA", "anthropic_key"),
    ("stripe_sk_live", "stripe.api_key = sk_live_" + ALNUM36[:24], "sk_live_" + ALNUM36[:24], "stripe_key"),
    ("stripe_rk_live", "rk_live_" + ALNUM36[:24] + " restricted", "rk_live_" + ALNUM36[:24], "stripe_key"),
    ("stripe_pk_live", "publishable pk_live_" + ALNUM36[:24], "pk_live_" + ALNUM36[:24], "stripe_key"),
    ("stripe_sk_test", "(sk_test_" + ALNUM36[:24] + ")", "sk_test_" + ALNUM36[:24], "stripe_key"),
    ("slack_bot", "SLACK=xoxb-" + "123456789012-1234567890123-" + ALNUM36[:24], "xoxb-123456789012-1234567890123-" + ALNUM36[:24], "slack_token"),
    ("slack_user", "xoxp-" + "123456789012-" + ALNUM36[:20], "xoxp-123456789012-" + ALNUM36[:20], "slack_token"),
    ("slack_app", "app token xapp-1-" + "A01B2C3D4E5-" + ALNUM36[:20], "xapp-1-A01B2C3D4E5-" + ALNUM36[:20], "slack_token"),
    ("slack_webhook", "curl -X POST https://hooks.slack.com/services/" + "T0ABC1234/B0DEF5678/" + ALNUM36[:24], "T0ABC1234/B0DEF5678/" + ALNUM36[:24], "slack_webhook"),
    ("google_api_key", "maps?key=AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "google_api_key"),
    (
        "gcp_service_account",
        '{"type": "service_account", "private_key_id": "abc", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\nq8Zt3wY6dH1k0pLm\\n-----END PRIVATE KEY-----\\n"
        + '", "client_email": "svc"}',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "gcp_service_account_key",
    ),
    ("bearer_header", "Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c", "9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c", "bearer_token"),
    ("bearer_curl", "curl -H 'authorization: bearer ya29.A0ARrdaM-" + ALNUM36 + "' api", "ya29.A0ARrdaM-" + ALNUM36, "bearer_token"),
    ("bearer_json", '{"headers": {"Authorization": "Bearer tok_' + ALNUM36 + '"}}', "tok_" + ALNUM36, "bearer_token"),
    ("jwt", "session cookie value " + JWT + " expired", JWT, "jwt"),
    ("pem_rsa", "id_rsa:\n" + pem("RSA PRIVATE KEY") + "\nok", PEM_BODY.split("\n")[0], "pem_private_key"),
    ("pem_ec", pem("EC PRIVATE KEY"), PEM_BODY.split("\n")[1], "pem_private_key"),
    ("pem_openssh", "cat ~/.ssh/id_ed25519\n" + pem("OPENSSH PRIVATE KEY"), PEM_BODY.split("\n")[0], "pem_private_key"),
    ("pem_pkcs8", pem("PRIVATE KEY"), PEM_BODY.split("\n")[0], "pem_private_key"),
    ("pem_truncated", "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "[output truncated]", PEM_BODY.split("\n")[1], "pem_private_key"),
    ("url_password_postgres", "DATABASE_URL=postgres://app:Sup3r-S3cret@db.internal:5432/app", "Sup3r-S3cret", "url_password"),
    ("url_password_with_at", "redis://default:p@ss%21word9@cache.example.net:6379", "p@ss%21word9", "url_password"),
    ("env_password", "DB_PASSWORD=correct-horse-battery-9", "correct-horse-battery-9", "secret_assignment"),
    ("export_token", "export API_TOKEN=tkn_4f9a8b7c6d5e", "tkn_4f9a8b7c6d5e", "secret_assignment"),
    ("json_api_key", '{"api_key": "e3b0c44298fc1c149afb", "model": "x"}', "e3b0c44298fc1c149afb", "secret_assignment"),
    ("json_compact_password", '{"user":"bob","password":"hunter2!"}', "hunter2!", "secret_assignment"),
    ("yaml_client_secret", "oauth:\n  client_secret: Zk9LmN8pQ7rS6tU5\n", "Zk9LmN8pQ7rS6tU5", "secret_assignment"),
    ("python_kwarg", 'connect(host="db", password="s3cr3t-pw")', "s3cr3t-pw", "secret_assignment"),
    ("python_environ_set", 'os.environ["SECRET_KEY"] = "dj4ng0-k3y-value"', "dj4ng0-k3y-value", "secret_assignment"),
    ("numeric_password", "MYSQL_ROOT_PASSWORD=20240517", "20240517", "secret_assignment"),
    ("query_access_token", "GET /cb?code=1&access_token=AbC123xYz789&state=2", "AbC123xYz789", "secret_assignment"),
    ("cli_flag_password", "docker login --username bob --password Pa55w0rdX registry.io", "Pa55w0rdX", "secret_assignment"),
    ("npm_token", "//registry.npmjs.org/:_authToken=npm_" + ALNUM36, "npm_" + ALNUM36, "npm_token"),
    ("npmrc_auth_token", "//npm.pkg.github.com/:_authToken=abc123def456", "abc123def456", "secret_assignment"),
    ("huggingface_token", "huggingface-cli login --token hf_" + ALNUM36[:34], "hf_" + ALNUM36[:34], "huggingface_token"),
    ("basic_auth_header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "basic_auth"),
    ("curl_user", "curl -u admin:t0ps3cret https://jenkins.example.org", "t0ps3cret", "basic_auth"),
    ("cookie_header", "Cookie: sessionid=8f14e45fceea167a; csrftoken=abc", "sessionid=8f14e45fceea167a; csrftoken=abc", "cookie"),
    ("auth_header_token", "Authorization: token 0123456789abcdef0123", "0123456789abcdef0123", "auth_header"),
    ("private_ipv4_10", "ssh root@10.12.0.7 -p 22", "10.12.0.7", "private_ipv4"),
    ("private_ipv4_172", "listening on 172.20.3.4:8080", "172.20.3.4", "private_ipv4"),
    ("private_ipv4_192", "router at 192.168.1.254.", "192.168.1.254", "private_ipv4"),
    ("link_local_ipv4", "metadata from 169.254.169.254/latest", "169.254.169.254", "private_ipv4"),
    ("cgnat_ipv4", "tailscale peer 100.101.102.103 up", "100.101.102.103", "private_ipv4"),
    ("private_ipv6_ula", "peer fd12:3456:789a:1::1 joined", "fd12:3456:789a:1::1", "private_ipv6"),
    ("link_local_ipv6", "inet6 fe80::1ff:fe23:4567:890a%eth0 scope", "fe80::1ff:fe23:4567:890a", "private_ipv6"),
    ("email", "ping jane.doe+ci@acme-corp.io about it", "jane.doe+ci@acme-corp.io", "email"),
    ("email_in_angle", "From: Bob Smith <bob.smith@mail.example.co.uk>", "bob.smith@mail.example.co.uk", "email"),
]

# Text that looks a little like a secret and must come back byte for byte.
NEAR_MISSES = [
    ("git_sha_40", "commit 4f1c2a9e8b7d6c5f4a3b2c1d0e9f8a7b6c5d4e3f"),
    ("git_short_shas", "4f1c2a9 Fix retry\n9b0e7d1c2a Add sha check\ne8afcc6a1b2c merge"),
    ("sha256_digest", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("uuid", "session 6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b resumed"),
    ("sklearn_file", "python sk-learn.py --fast && import sklearn"),
    ("mcp_tool_name", "called mcp__task-master-ai__next_task and task-master-ai__get_tasks"),
    ("long_hyphenated_name", "see sk-learning-classification-pipeline-notes.md"),
    ("public_ips", "resolvers 8.8.8.8 and 1.1.1.1, host 172.32.0.1, 11.0.0.1"),
    ("version_strings", "upgraded to version 10.0.0, then 1.2.3 and v10.0.0.1; node 192.168.0"),
    ("loopback", "serving on http://127.0.0.1:8000 and [::1]:8000 and 0.0.0.0:80"),
    ("path_env", "PATH=/usr/local/bin:/usr/bin:/bin"),
    ("node_env", "NODE_ENV=production\nLOG_LEVEL=debug"),
    ("token_limits", "TOKEN_LIMIT=4096\nmax_tokens: 4096\nMAX_TOKENS=8192\ninput_tokens=1234"),
    ("secret_metadata_keys", "PASSWORD_FILE=/run/secrets/db\nsecret_name: db-creds\nAWS_ACCESS_KEY_ID_VAR=x"),
    ("prose", "The password is stored in the keychain; rotate the token monthly and keep the secret safe."),
    ("decorator", "@pytest.fixture\ndef client():\n    return app.test_client()"),
    ("ssh_no_tld", "ssh deploy@buildbox 'systemctl restart web'"),
    ("git_remote", "git clone git@github.com:org/repo.git"),
    ("noreply_trailer", "Co-Authored-By: Claude <noreply@anthropic.com>"),
    ("retina_asset", "icons/logo@2x.png and npm install react@18.2.0 @types/node@20.1.0"),
    ("code_references", 'token = os.environ["GITHUB_TOKEN"]\napi_key = self.api_key\npassword = get_password()'),
    ("env_references", 'Authorization: Bearer $TOKEN\nGH_TOKEN: ${{ secrets.GITHUB_TOKEN }}\nAPI_KEY="${API_KEY}"'),
    ("type_annotations", "    api_key: str | None = None\n    token: str\n    password: Optional[str] = None"),
    ("placeholders", 'password: "<your-password>"\ntoken=***\nsecret: null\nAPI_KEY=true'),
    ("certificate", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----"),
    ("public_key", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"),
    ("paths", "/home/dev/proj/src/tokens/secret_store.py:42 in get_api_key"),
    ("author_key", "AUTHOR=Jane Smith\nauthority: root-ca"),
    ("separator_lines", "-" * 300 + "\n" + "=" * 300),
    ("bearer_word", "the bearer of the certificate presents it"),
    ("cidr_free_numbers", "took 10.5s, 172.16 ms, ratio 192.168"),
    ("k8s_secret_ref", "secretKeyRef:\n  name: db\n  key: password"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), [c[1:] for c in SECRETS], ids=[c[0] for c in SECRETS])
def test_secret_shape_is_replaced_by_a_marker_naming_it(text: str, secret: str, kind: str) -> None:
    assert secret in text
    assert contains_sensitive(text)
    out = sanitize(text, CAP)
    assert secret not in out
    assert re.search(rf"\[REDACTED:{kind}:\d+\]", out)
    assert not contains_sensitive(out)
    assert sanitize(out, CAP) == out


def test_corpus_covers_thirty_shapes() -> None:
    assert len(SECRETS) >= 30 and len(NEAR_MISSES) >= 15
    assert len({kind for *_, kind in SECRETS}) >= 20


@pytest.mark.parametrize("text", [c[1] for c in NEAR_MISSES], ids=[c[0] for c in NEAR_MISSES])
def test_near_miss_survives_byte_for_byte(text: str) -> None:
    assert find_secrets(text) == []
    assert sanitize(text, CAP) == text


def test_only_the_password_of_a_url_is_replaced() -> None:
    out = sanitize("postgres://admin:S3cr3tPass@db.example.com:5432/app", CAP)
    assert out == "postgres://admin:[REDACTED:url_password:10]@db.example.com:5432/app"


def test_assignment_keeps_its_key() -> None:
    assert sanitize('export DB_PASSWORD="p4ss word"', CAP) == 'export DB_PASSWORD="[REDACTED:secret_assignment:9]"'


def test_ip_keeps_its_port() -> None:
    assert sanitize("GET http://10.0.0.12:8080/x", CAP) == "GET http://[REDACTED:private_ipv4:9]:8080/x"


def test_overlapping_shapes_merge_into_the_most_specific_marker() -> None:
    out = sanitize("GITHUB_TOKEN=ghp_" + ALNUM36, CAP)
    assert out == "GITHUB_TOKEN=[REDACTED:github_token:40]"


@pytest.mark.parametrize(
    "marker_text",
    [
        "[REDACTED:github_token:40] and [BLOB len=12345 sha=1a2b3c4d]",
        "password=[REDACTED:secret_assignment]",
        '"api_key": "[REDACTED:secret_assignment]"',
        "Authorization: Bearer [REDACTED:jwt]",
        "Cookie: [REDACTED:cookie]",
        "https://admin:[REDACTED:url_password:9]@[REDACTED:internal_host]/x",
        "ssh root@[REDACTED:private_ipv4]",
    ],
    ids=["bare", "env", "json", "bearer", "cookie", "url", "ssh"],
)
def test_markers_are_never_redetected(marker_text: str) -> None:
    assert find_secrets(marker_text) == []
    assert sanitize(marker_text, CAP) == marker_text


def test_sanitize_is_idempotent_over_the_whole_corpus() -> None:
    text = "\n".join(t for _, t, *_ in SECRETS + NEAR_MISSES) + "\n" + "QUJD" * 10 + ALNUM36 * 20
    once = sanitize(text, blob_cap=500)
    assert sanitize(once, blob_cap=500) == once
    assert not contains_sensitive(once)


def test_text_without_secrets_is_returned_unchanged() -> None:
    text = "\n".join(t for _, t in NEAR_MISSES)
    report = sanitize_with_report(text, CAP)
    assert report.text == text
    assert not report.counts


def test_report_counts_markers_by_kind() -> None:
    text = "a AKIA" + UPPER16 + " b 10.0.0.1 c 10.0.0.2 d jane@acme.io"
    report = sanitize_with_report(text, CAP)
    assert report.counts == {"aws_access_key": 1, "private_ipv4": 2, "email": 1}


def test_find_secrets_reports_kind_and_span() -> None:
    text = "key AKIA" + UPPER16 + " end"
    assert find_secrets(text) == [Finding("aws_access_key", 4, 24)]


def _blob_marker(original: str) -> str:
    return f"[BLOB len={len(original)} sha={hashlib.sha256(original.encode()).hexdigest()[:8]}]"


def test_base64_run_becomes_a_blob_marker_with_length_and_hash() -> None:
    blob = (ALNUM36 + "+/") * 10
    out = sanitize(f'<img src="data:image/png;base64,{blob}">', CAP)
    assert out == f'<img src="data:image/png;base64,{_blob_marker(blob)}">'


def test_thinking_signature_is_a_blob_not_a_secret() -> None:
    signature = "EqQBCkgIBRABGAIiQL" + ALNUM36 * 8
    text = '{"type": "thinking", "thinking": "Let me check.", "signature": "' + signature + '"}'
    report = sanitize_with_report(text, CAP)
    assert report.counts == {"blob": 1}
    assert _blob_marker(signature) in report.text
    assert not contains_sensitive(text)


def test_run_just_under_the_minimum_survives() -> None:
    run = (ALNUM36 * 10)[: BLOB_RUN_MIN - 1]
    assert sanitize(run, CAP) == run


def test_long_line_keeps_head_and_tail_around_the_marker() -> None:
    line = "var a=function(b){return b+1};" * 300
    text = "before\n" + line + "\nafter"
    out = sanitize(text, blob_cap=4000)
    kept = re.fullmatch(r"before\n(.*)\[BLOB len=(\d+) sha=([0-9a-f]{8})\](.*)\nafter", out)
    assert kept is not None
    head, length, sha, tail = kept.groups()
    assert line.startswith(head) and line.endswith(tail) and head and tail
    middle = line[len(head) : len(line) - len(tail)]
    assert int(length) == len(middle)
    assert sha == hashlib.sha256(middle.encode()).hexdigest()[:8]
    assert len(out) < 400


def test_long_line_cut_never_splits_a_secret() -> None:
    secret = "ghp_" + ALNUM36
    for offset in range(100, 125, 3):
        line = "x " * (offset // 2) + secret + " y" * 3000
        out = sanitize(line, blob_cap=4000)
        assert not any(secret[i : i + 8] in out for i in range(len(secret) - 8)), offset
        assert sanitize(out, blob_cap=4000) == out


def test_long_text_of_short_lines_is_not_cut() -> None:
    text = "ok line of a long log\n" * 2000
    assert sanitize(text, blob_cap=4000) == text


def test_unicode_that_changes_length_when_lowercased_still_scrubs() -> None:
    text = "İstanbul İ DB_PASSWORD=correct-horse-9 İ"
    assert "correct-horse-9" not in sanitize(text, CAP)


# Issue 17: the shapes seen leaking, pinned on their edges. The corpus test holds one realistic
# line of each; these hold what decides between a secret and its look-alike.

HEX32 = "9f3b2c7d1e0a4b5c8d6e2f1a0b9c8d7e"
B64URL43 = "kX2_p9Lm-Qr7Tz4Wb8Nc1Vd5Fg3Hj6Ks0Ya2Ue9Ri4O"


def luhn_complete(digits: str) -> str:
    """`digits` plus the check digit that makes the whole number pass Luhn."""
    for check in "0123456789":
        number = digits + check
        total = sum(int(c) if i % 2 == 0 else sum(divmod(int(c) * 2, 10)) for i, c in enumerate(reversed(number)))
        if total % 10 == 0:
            return number
    raise AssertionError("unreachable")


def iban(country: str, bban: str) -> str:
    """A valid IBAN: the two check digits computed by mod 97."""
    numeric = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    return f"{country}{98 - numeric % 97:02d}{bban}"


@pytest.mark.parametrize(
    ("text", "token", "kind"),
    [
        ("clone with glpat-" + ALNUM36[:20] + " now", "glpat-" + ALNUM36[:20], "gitlab_token"),
        ("-p pypi-AgEIcHlwaS5vcmc" + ALNUM36 + ALNUM36[:20] + " dist/*", "pypi-AgEIcHlwaS5vcmc" + ALNUM36 + ALNUM36[:20], "pypi_token"),
        ("key SG." + B64URL43[:22] + "." + B64URL43 + ".", "SG." + B64URL43[:22] + "." + B64URL43, "sendgrid_key"),
        ("sid SK" + HEX32 + " ok", "SK" + HEX32, "twilio_key"),
        ("shpat_" + HEX32 + " for the store", "shpat_" + HEX32, "shopify_token"),
        ("doctl -t dop_v1_" + HEX32 * 2, "dop_v1_" + HEX32 * 2, "digitalocean_token"),
        ("vault login hvs." + B64URL43 * 2, "hvs." + B64URL43 * 2, "vault_token"),
        ("lin_api_" + ALNUM36 + "abcd)", "lin_api_" + ALNUM36 + "abcd", "linear_key"),
        ("PMAK-" + HEX32[:24] + "-" + HEX32 + "a1", "PMAK-" + HEX32[:24] + "-" + HEX32 + "a1", "postman_key"),
        ("NRAK-" + UPPER16 + "ABCDEFGHIJK", "NRAK-" + UPPER16 + "ABCDEFGHIJK", "newrelic_key"),
        ("echo dckr_pat_" + B64URL43[:27] + " |", "dckr_pat_" + B64URL43[:27], "dockerhub_token"),
        ("secret whsec_" + ALNUM36, "whsec_" + ALNUM36, "stripe_key"),
        ("token ya29." + B64URL43 + "!", "ya29." + B64URL43, "google_oauth_token"),
        ("client GOCSPX-" + B64URL43[:28], "GOCSPX-" + B64URL43[:28], "google_oauth_token"),
        ("mailchimp " + HEX32 + "-us21 key", HEX32 + "-us21", "mailchimp_key"),
        ("Bot(\"1234567890:AA" + B64URL43[:33] + "\")", "1234567890:AA" + B64URL43[:33], "telegram_bot_token"),
        ("bot MTA" + ALNUM36[:23] + "." + B64URL43[:6] + "." + B64URL43[:30] + " end", "MTA" + ALNUM36[:23] + "." + B64URL43[:6] + "." + B64URL43[:30], "discord_bot_token"),
        ("bot NTA" + ALNUM36[:23] + ".lo9c_a." + B64URL43[:30], "NTA" + ALNUM36[:23] + ".lo9c_a." + B64URL43[:30], "discord_bot_token"),
        ("dsn https://" + HEX32 + "@o1.ingest.sentry.io/2", HEX32, "url_token"),
        ("AGE-SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58] + "\n", "AGE-SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58], "age_secret_key"),
    ],
    ids=lambda v: v if isinstance(v, str) and v.endswith(("_token", "_key")) else None,
)
def test_provider_prefix_is_redacted_whole_and_named(text: str, token: str, kind: str) -> None:
    assert token in text
    out = sanitize(text, CAP)
    assert out == text.replace(token, f"[REDACTED:{kind}:{len(token)}]", 1)


@pytest.mark.parametrize(
    "text",
    [
        "myglpat-" + ALNUM36[:20],  # a prefix glued to a word
        "see task-sk-" + ALNUM36 + " notes",
        "mailgun pubkey-" + HEX32 + " is public",
        "SKIP" + HEX32,
        "md5 " + HEX32 + " of the tarball",  # 32 hex with no "auth token" before it
    ],
)
def test_prefix_look_alikes_survive(text: str) -> None:
    assert sanitize(text, CAP) == text


def test_email_and_private_address_inside_a_path_keep_the_folders_around_them() -> None:
    assert sanitize("/home/x/jane.doe@corp.com/settings.py", CAP) == "/home/x/[REDACTED:email:17]/settings.py"
    assert sanitize('"cwd": "/mnt/10.42.7.19/proj"', CAP) == '"cwd": "/mnt/[REDACTED:private_ipv4:10]/proj"'
    assert sanitize("https://lists.example.org/archive/jane.doe@corp.com/msg1.html", CAP) == (
        "https://lists.example.org/archive/[REDACTED:email:17]/msg1.html"
    )


def test_url_userinfo_is_not_an_email_and_documentation_domains_survive() -> None:
    for text in ("ssh://deploy@build.example.net/srv", "mail user@example.com or ops@mail.example.org"):
        assert sanitize(text, CAP) == text
    # Reserved TLDs stand for real people in fixtures: they go.
    assert sanitize("ADMIN_EMAIL=marta.k@shop-demo.example", CAP) == "ADMIN_EMAIL=[REDACTED:email:25]"


@pytest.mark.parametrize(
    ("text", "host"),
    [
        ("curl http://billing-api.internal:8080/x", "billing-api.internal"),
        ("psql -h db.corp.example.com -U app", "db.corp.example.com"),
        ("ssh buildbox.internal uptime", "buildbox.internal"),
        ("DB_HOST=pgprimary.internal pytest", "pgprimary.internal"),
        ("rsync x backup@nas.local:/v1", "nas.local"),
        ("printer at node7.lan", "node7.lan"),
        ("router.home.arpa answers", "router.home.arpa"),
        ("foo.internal", "foo.internal"),
        ("the printer.local is down again", "printer.local"),
        ('REDIS_HOST = "cache.internal"', "cache.internal"),
    ],
)
def test_internal_host_is_redacted_and_its_neighbours_stay(text: str, host: str) -> None:
    assert sanitize(text, CAP) == text.replace(host, f"[REDACTED:internal_host:{len(host)}]")


@pytest.mark.parametrize(
    "text",
    [
        "_state = threading.local()",
        "        and version.local is None",
        "        if not dist.local:",
        "    it = (d for d in it if d.local)",
        "x = value.local",
        "from dask.local import get_sync",
        "import com.acme.internal;",
        "from google.protobuf.internal import builder",
        "at jdk.internal.misc.Unsafe.park(Native Method)",
        "    local_only=options.local,",
        "cp .env.example .env.local; it imports ./env.local",
        "reach the host at host.docker.internal:5432 or metadata.google.internal",
        "mDNS names look like example.local",
        "GET https://api.example.com/v1 and http://localhost:8080",
    ],
)
def test_internal_host_look_alikes_survive(text: str) -> None:
    assert sanitize(text, CAP) == text


def test_card_number_needs_luhn_an_issuer_and_grouping_or_a_card_word() -> None:
    visa = luhn_complete("453914880343646")
    grouped = " ".join(visa[i : i + 4] for i in range(0, 16, 4))
    assert sanitize(f"card {grouped}, exp 09/29", CAP) == f"card [REDACTED:card_number:{len(grouped)}], exp 09/29"
    assert sanitize(f"seed {visa}", CAP) == f"seed {visa}"  # ungrouped, no card word: an id
    assert sanitize(f'{{"card_number": "{visa}"}}', CAP) == '{"card_number": "[REDACTED:card_number:16]"}'
    bad = visa[:-1] + str((int(visa[-1]) + 1) % 10)
    for text in (
        "card " + " ".join(bad[i : i + 4] for i in range(0, 16, 4)),  # fails Luhn
        "card 4242 4242 4242 4242",  # a published test card
        "card " + luhn_complete("123456789012345"),  # no card network starts with 1
        "elapsed_ns=1764762914123456789",
    ):
        assert sanitize(text, CAP) == text


def test_iban_needs_its_country_length_and_the_mod97_check() -> None:
    de = iban("DE", "370400440532013111")
    spaced = " ".join(de[i : i + 4] for i in range(0, len(de), 4))
    assert sanitize(f"IBAN {spaced} by Friday", CAP) == f"IBAN [REDACTED:iban:{len(spaced)}] by Friday"
    assert sanitize(f"iban={de}", CAP) == f"iban=[REDACTED:iban:{len(de)}]"
    wrong_check = de[:2] + f"{(int(de[2:4]) + 1) % 97:02d}" + de[4:]
    for text in (f"IBAN {wrong_check}", "ZZ" + de[2:], "GB29NWBK60161331926819", de + "9"):
        assert sanitize(text, CAP) == text


@pytest.mark.parametrize(
    ("text", "phone"),
    [
        ("call +1 628 304 7719 now", "+1 628 304 7719"),
        ("sms_to: +447700963218", "+447700963218"),
        ("tel:+1-628-304-7719", "+1-628-304-7719"),
        ("her number is (628) 304-7719, ask first", "(628) 304-7719"),
        ("or 628-304-7719.", "628-304-7719"),
    ],
)
def test_phone_number_is_redacted(text: str, phone: str) -> None:
    assert sanitize(text, CAP) == text.replace(phone, f"[REDACTED:phone_number:{len(phone)}]")


@pytest.mark.parametrize(
    "text",
    [
        "released 2026-12-03T11:55:14.123456+00:00 and 2026-12-03 11:55:14,123",
        "ports 30000-32767, 8000-8100; line 415, column 555; macOS 10.15.7",
        "j = i+1234567890; x = +1.4142135623731; '+1980-02-29 01:02:03'",
        "list('-+0123456789.') and 100-200-3000 and 1-800",
        "timezone +05:30 and +0100, ratio 1e+10",
    ],
)
def test_phone_look_alikes_survive(text: str) -> None:
    assert sanitize(text, CAP) == text


def test_aws_secret_after_its_key_goes_on_the_same_or_next_line_only() -> None:
    key = "AKIA" + UPPER16
    assert sanitize(f"{key} {B64_40}", CAP) == f"[REDACTED:aws_access_key:{len(key)}] [REDACTED:aws_secret_key:40]"
    assert sanitize(f"{key}\n{B64_40}", CAP) == f"[REDACTED:aws_access_key:{len(key)}]\n[REDACTED:aws_secret_key:40]"
    two_lines_down = f"{key}\nnothing here\n{B64_40}"
    assert B64_40 in sanitize(two_lines_down, CAP)
    sha = "4f1c2a9e8b7d6c5f4a3b2c1d0e9f8a7b6c5d4e3f"
    assert sanitize(f"{key} fixed in {sha}", CAP) == f"[REDACTED:aws_access_key:{len(key)}] fixed in {sha}"


def test_aws_documentation_example_pair_survives_in_every_form() -> None:
    for text in (
        "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY. The docs use it too.",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPx…",
        "which held: aws_secret_access_key = wJ…",  # a merge note cut two characters in
    ):
        assert sanitize(text, CAP) == text


def test_netrc_password_goes_and_a_reference_stays() -> None:
    assert sanitize("machine h.example.com login u password Tr0ub4dor-x9", CAP) == (
        "machine h.example.com login u password [REDACTED:netrc_password:12]"
    )
    assert sanitize("machine h.example.com\n  login u\n  password Tr0ub4dor-x9\n", CAP) == (
        "machine h.example.com\n  login u\n  password [REDACTED:netrc_password:12]\n"
    )
    assert sanitize("machine h.example.com login u password $NETRC_PW", CAP) == "machine h.example.com login u password $NETRC_PW"


def test_auth_token_words_make_32_hex_a_secret() -> None:
    assert sanitize(f"The Twilio auth token is {HEX32}; rotate it", CAP) == "The Twilio auth token is [REDACTED:auth_token:32]; rotate it"


def test_kubeadm_bootstrap_token_is_a_literal_not_code() -> None:
    assert sanitize("    token: kx9abc.w7e2f0a1b2c3d4e5", CAP) == "    token: [REDACTED:secret_assignment:23]"


def test_offsets_hold_after_text_that_is_not_ascii() -> None:
    visa = luhn_complete("453914880343646")
    grouped = " ".join(visa[i : i + 4] for i in range(0, 16, 4))
    text = f"café ☕ 日本 card {grouped} and +1 628 304 7719 — fine"
    assert sanitize(text, CAP) == f"café ☕ 日本 card [REDACTED:card_number:{len(grouped)}] and [REDACTED:phone_number:15] — fine"


def test_an_unquoted_value_in_json_rendered_text_ends_at_an_escaped_line_break() -> None:
    rendered = '{"command":"cat > .env <<EOF\\npassword = Hunter2zzQ\\nThe docs say so\\nEOF"}'
    assert sanitize(rendered, CAP) == '{"command":"cat > .env <<EOF\\npassword = [REDACTED:secret_assignment:10]\\nThe docs say so\\nEOF"}'


def test_a_value_in_markdown_inline_code_keeps_its_closing_backtick() -> None:
    assert sanitize("ran `export API_TOKEN=Zz9xQw8vUu7t` first", CAP) == "ran `export API_TOKEN=[REDACTED:secret_assignment:12]` first"


def test_a_marker_keeps_the_kind_and_the_length_of_what_it_replaced() -> None:
    """A reader of a card sees what stood there and how long it was; a marker written before lengths
    were kept (`[REDACTED:kind]`) is still a marker, never re-detected."""
    for secret in ("Tr0ub4dor-x9", "Tr0ub4dor-x9Tr0ub4dor-x9Q"):
        assert sanitize(f"DB_PASSWORD={secret}", CAP) == f"DB_PASSWORD=[REDACTED:secret_assignment:{len(secret)}]"
    out = sanitize_with_report("key ghp_" + ALNUM36 + " and ghp_" + ALNUM36[:30] + "x" * 6, CAP)
    assert out.text.count("[REDACTED:github_token:40]") == 2 and out.counts["github_token"] == 2
    assert sanitize("password: [REDACTED:secret_assignment]", CAP) == "password: [REDACTED:secret_assignment]"
