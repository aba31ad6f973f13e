import pytest

from cards.signatures import error_signature


@pytest.mark.parametrize("text,expected", [
    ("Traceback (most recent call last):\n  File \"/srv/app/db.py\", line 41, in get\n"
     "sqlite3.OperationalError: database is locked", "OperationalError: database is locked"),
    ("ImportError: cannot import name 'bar' from 'foo' (/home/dev/app/foo.py)",
     "ImportError: cannot import name <str> from <str> (<path>)"),
    ("fatal error: concurrent map writes\n\ngoroutine 7 [running]:", "fatal: concurrent map writes"),
    ("src/main.rs:12:5: error[E0502]: cannot borrow `v` as mutable", "E0502: <path>:<n>:<n>: error[E<n>]: cannot borrow `v` as mutable"),
    ("--- FAIL: TestShorten (0.00s)\n    shorten_test.go:19: got 404", "FAIL: TestShorten"),
    ("test result: ok. 19 passed; 0 failed; 0 ignored", ""),
    ('{"compilerOptions": {"target": "ES2022"}}', ""),
])
def test_error_signature(text, expected):
    assert error_signature(text) == expected


def test_same_failure_on_two_machines_has_one_signature():
    a = "PermissionError: [Errno 13] Permission denied: '/home/ann/app/data/cache.db'"
    b = "PermissionError: [Errno 13] Permission denied: '/Users/bob/src/app/data/cache.db'"
    assert error_signature(a) == error_signature(b)
