"""Scrub secrets, private addresses, e-mail addresses and pasted blobs before anything is stored.

Named shapes first: git SHAs, content hashes, UUIDs, asset names and paths are legitimate things
for a card to mention, and corrupting a true fact is a worse failure than missing an exotic token.
"Looks random" counts only where a value stands as a credential stands: after a secret word, a
key word or `=`, as a tool's password flag, in a webhook path, or base64 that decodes to one.

The package, lowest first: `patterns` (the provider-prefix table, the regexes), `prefilter` (one
polars pass over a batch of texts: which detector families have a hint in each), `validators`
(Luhn, IBAN mod 97, secret key names, documentation values), `generic` (the rules that need no
provider table), `providers` (detect-secrets' rules for the few providers memoir has no row for),
`shapes` (what a credential is wherever it stands: a prefix and a random body, a bare random token,
the credential lines of known files, with the ids, hashes and public keys that must survive),
`maintained` (Betterleaks' maintained provider rules, on the lines memoir's prefilter picks),
`detect` (every sensitive span), `scan` (the one pass that finds spans and blobs and writes the
markers: `sanitize`, `sanitize_with_report`, `find_secrets`, `contains_sensitive`) and `fields`
(structured values and every field a writer stores).

Rules (each decision pinned by tests/test_sanitize.py and the corpus in tests/test_sanitize_corpus.py):
- A secret becomes `[REDACTED:<kind>:<length>]` (kind and length, so a card that held one still
  reads); only the secret part is replaced (`password=` keeps its key,
  `scheme://user:[REDACTED:url_password:9]@host` keeps user and host).
- Loopback (127/8, ::1) and 0.0.0.0 survive: they name no network. RFC 1918, CGNAT 100.64/10,
  link-local 169.254/16, ULA fc00::/7 and link-local fe80::/10 are redacted. Only a full dotted
  quad is an address: "version 10.0.0" and "v10.0.0.1" survive, a bare "10.0.0.1" does not.
- `local@domain.tld` is an e-mail, inside a path too (`/home/[REDACTED:email]/settings.py`: the
  folders around it stay); `@decorator`, `pkg@1.2.3`, `logo@2x.png`, `user@buildbox` (no TLD, as
  in ssh commands), `git@github.com`, `noreply@...` and documentation domains (`user@example.com`,
  `ops@mail.example.org`) survive. `user@nas.local` is an ssh target: the host goes, the user stays.
- Provider tokens are named by their fixed prefix (`glpat-`, `pypi-AgEIcHlwaS5vcmc`, `SG.`, `SK`+32
  hex, `shpat_`, `dop_v1_`, `hvs.`, `AGE-SECRET-KEY-1`, ...); a prefix glued to a word is not one.
  A URL user name that is a token (a Sentry DSN key) goes like a password. A 32-hex value right
  after "auth token" goes (Twilio). `.netrc` `machine ... password X` loses X.
- An AWS secret key needs no name: 40 mixed-case characters on the line of an `AKIA` key or the
  next. The AWS docs' example pair (`AKIAIOSFODNN7EXAMPLE`, `wJalr...EXAMPLEKEY`) survives anywhere.
- Host names under `.internal`, `.local`, `.lan`, `.intranet`, `.home.arpa` and `*.corp.*` are
  redacted (`printer.local`, `db.corp.example.com`). `x.local` is also attribute access, so a
  name without a hyphen or digit, a URL, a port or a host key (`DB_HOST=`) stays where the text
  reads as code (`version.local is None`, `from dask.local import`, `x = value.local`, `d.local)`).
  `localhost`, `*.example.com`, `example.local`, `host.docker.internal`, `metadata.google.internal`
  and files (`./env.local`, `.env.local`) stay.
- Card numbers: 13-19 digits of a card network's length and first digits, Luhn-valid; plain runs
  only after a card word (one random id in ten passes Luhn), grouped 4-4-4-4 / 4-6-5 always.
  Published test cards (`4242 4242 4242 4242`) survive. IBANs: a known country's length and the
  mod-97 check (the ISO example IBANs survive).
- Phones: `+` and 9 to 15 digits (not `+0`, not a decimal, not a date), `(415) 555-2671` and
  `415-555-2671`; versions, dates, timestamps, ports, ranges and line numbers survive.
- `KEY=value`, `"key": "value"`, line-leading `key: value` and `--password value` are redacted
  when the key ends in a secret word (password, token, secret, api_key, auth, credential,
  cookie, ...; `SECRET_KEY_BASE`, with a word after it, is missed) and the value is a literal:
  numbers under a token/secret key (`max_tokens: 4096`), `$VAR`, `${{ secrets.X }}`,
  `<placeholder>`, booleans, type names and code (`self.token`, `get_token()`) survive, as do
  keys that name a property of a secret (`TOKEN_LIMIT`, `SECRET_NAME`, `PASSWORD_FILE`, `*_ID`).
- Blobs: an unbroken run of at least BLOB_RUN_MIN base64/hex characters (base64 images,
  thinking signatures, hex dumps) is replaced whole by `[BLOB len=N sha=xxxxxxxx]`; a line
  longer than `blob_cap` (minified JS, one-line JSON dumps) keeps a short head and tail around
  the marker. Length and hash describe the original text the marker replaced. A long text made
  of ordinary lines is not cut here: which part of a long log matters is the distiller's call.
- Without a provider table (`generic`): a password given to mysql, sshpass, docker/podman/helm
  login, keytool, jarsigner, openssl (`pass:`), redis-cli, mongo, ldap*, zip/7z, sqlcmd, ipmitool,
  smbclient, snmp*, xfreerdp, lftp, curl, skopeo, sqlplus and htpasswd goes (`-p 2222` to ssh or
  docker run, `-passin env:X`, `$VAR` stay); a value after `password`, `passwd`, `pwd`, `pw`,
  `passphrase`, `secret` in any case, mid-sentence too, goes when it holds a digit or a symbol
  ("the password is wrong" stays); a random-looking token (digits among short letter runs) after a
  key, token, secret, bearer or password word, or a 24+ character mixed-case one after `=`, goes
  (hex after a plain "key" or `=` is a hash, a UUID an id); base64 that decodes to `user:password`
  or to text holding a secret goes (base64 of ordinary text stays); the path after `/hooks/`,
  `/webhooks/`, `/webhookb2/` and a secret query parameter (`sig=`, `access_token=`) go.
- Markers are never re-detected, so `sanitize(sanitize(x)) == sanitize(x)`.
"""

from __future__ import annotations

from memoir.cards.sanitize.scan import sanitize

__all__ = ["sanitize"]
