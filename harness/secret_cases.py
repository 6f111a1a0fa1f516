"""Real-shaped credentials the screen must refuse, and secret-sounding memories it must accept.

No credential is written out in this file: each is assembled at run time from its vendor's published
prefix and seeded random characters, so no scanner mistakes the repository for a leak and no value
is real. Each entry says which kind the screen must report.
"""

from __future__ import annotations

import base64
import json
import random
import string

import attrs

_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


@attrs.frozen
class Case:
    """One memory text and the kind the screen reports in it (None: it must pass)."""

    name: str
    text: str
    kind: str | None
    secret: str = ""
    """The credential's exact characters, which no refusal may echo (empty for harmless cases)."""


def _random(alphabet: str, length: int, seed: str) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


def _b64url_json(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _pem(label: str, seed: str) -> str:
    body = "\n".join(_random(_B64, 64, f"{seed}{line}") for line in range(4))
    return f"-----{'BEGIN'} {label}-----\n{body}\n-----END {label}-----"


def _jwt(seed: str) -> str:
    header = _b64url_json({"alg": "HS256", "typ": "JWT"})
    payload = _b64url_json({"sub": "1234567890", "name": "Ada", "iat": 1716239022})
    return f"{header}.{payload}.{_random(_URLSAFE, 43, seed)}"


def _secret(name: str, kind: str, template: str, secret: str) -> Case:
    return Case(name=name, text=template.format(secret), kind=kind, secret=secret)


def secrets() -> list[Case]:
    """At least 30 real-shaped credentials in the sentences people would save them in."""
    r = _random
    return [
        _secret("aws key id", "aws_access_key", "prod AWS key {}", "AKIA" + r(_UPPER_DIGITS, 16, "aws1")),
        _secret(
            "aws temporary key id",
            "aws_access_key",
            "session creds {} expire hourly",
            "ASIA" + r(_UPPER_DIGITS, 16, "aws2"),
        ),
        _secret("aws secret access key", "aws_secret_key", "AWS secret is {} for the deploy user", r(_B64, 40, "aws3")),
        _secret("github classic token", "github_token", "my GitHub token: {}", "ghp_" + r(_ALNUM, 36, "gh1")),
        _secret("github oauth token", "github_token", "CI uses {}", "gho_" + r(_ALNUM, 36, "gh2")),
        _secret(
            "github fine-grained token",
            "github_token",
            "{} for the release bot",
            "github_pat_" + r(_ALNUM + "_", 82, "gh3"),
        ),
        _secret("gitlab personal token", "gitlab_token", "GitLab PAT {}", "glpat-" + r(_URLSAFE, 20, "gl1")),
        _secret("gitlab runner token", "gitlab_token", "runner registered with {}", "glrt-" + r(_URLSAFE, 24, "gl2")),
        _secret(
            "slack bot token",
            "slack_token",
            "Slack bot: {}",
            "xoxb-"
            + r(string.digits, 12, "sl1")
            + "-"
            + r(string.digits, 13, "sl2")
            + "-"
            + r(string.ascii_lowercase + string.digits, 24, "sl3"),
        ),
        _secret(
            "slack webhook",
            "slack_token",
            "alerts post to {}",
            "https://hooks.slack.com/services/T"
            + r(_UPPER_DIGITS, 8, "sw1")
            + "/B"
            + r(_UPPER_DIGITS, 8, "sw2")
            + "/"
            + r(_ALNUM, 24, "sw3"),
        ),
        _secret("stripe live key", "stripe_key", "Stripe live secret {}", "sk_" + "live_" + r(_ALNUM, 24, "st1")),
        _secret("stripe restricted key", "stripe_key", "reporting uses {}", "rk_" + "live_" + r(_ALNUM, 24, "st2")),
        _secret("stripe test key", "stripe_key", "staging Stripe key {}", "sk_" + "test_" + r(_ALNUM, 24, "st3")),
        _secret("rsa private key", "private_key", "deploy key:\n{}\nkeep it safe", _pem("RSA PRIVATE KEY", "pk1")),
        _secret("ec private key", "private_key", "{}", _pem("EC PRIVATE KEY", "pk2")),
        _secret("openssh private key", "private_key", "the bastion key is {}", _pem("OPENSSH PRIVATE KEY", "pk3")),
        _secret("pkcs8 private key", "private_key", "tls key {}", _pem("PRIVATE KEY", "pk4")),
        _secret(
            "postgres dsn",
            "url_password",
            "prod db is postgres://app:{}@db.internal/prod",
            "S3cr3t!" + r(_ALNUM, 6, "db1"),
        ),
        _secret("mysql dsn", "url_password", "mysql://root:{}@10.0.0.5:3306/bank", r(_ALNUM, 14, "db2")),
        _secret(
            "redis dsn without user", "url_password", "cache at redis://:{}@cache.internal:6379/0", r(_ALNUM, 18, "db3")
        ),
        _secret(
            "mongodb srv dsn",
            "url_password",
            "mongodb+srv://svc:{}@cluster0.mongodb.net/app",
            r(_ALNUM, 16, "db4") + "$&",
        ),
        _secret(
            "https basic auth",
            "url_password",
            "artifacts at https://ci:{}@repo.example.com/simple",
            r(_ALNUM, 12, "db5"),
        ),
        _secret("jwt", "jwt", "session token {}", _jwt("jwt1")),
        _secret(
            "openai legacy key",
            "openai_key",
            "OpenAI: {}",
            "sk-" + r(_ALNUM, 20, "oa1") + "T3Blbk" + "FJ" + r(_ALNUM, 20, "oa2"),
        ),
        _secret("openai project key", "openai_key", "OPENAI_API_KEY is {}", "sk-" + "proj-" + r(_URLSAFE, 48, "oa3")),
        _secret("anthropic key", "anthropic_key", "Claude key {}", "sk-" + "ant-api03-" + r(_URLSAFE, 40, "an1")),
        _secret("google api key", "google_api_key", "maps key {}", "AI" + "za" + r(_URLSAFE, 35, "go1")),
        _secret(
            "sendgrid key", "sendgrid_key", "mail via {}", "SG." + r(_URLSAFE, 22, "sg1") + "." + r(_URLSAFE, 43, "sg2")
        ),
        _secret("twilio api key", "twilio_key", "twilio {}", "SK" + r(_HEX, 32, "tw1")),
        _secret(
            "npm token", "npm_token", ".npmrc has //registry.npmjs.org/:_authToken={}", "npm_" + r(_ALNUM, 36, "np1")
        ),
        _secret("pypi token", "pypi_token", "upload with {}", "pypi-" + "AgEIcHlwaS5vcmc" + r(_URLSAFE, 80, "py1")),
        _secret("mailchimp key", "mailchimp_key", "newsletter key {}", r(_HEX, 32, "mc1") + "-us6"),
        _secret(
            "azure storage key",
            "azure_storage_key",
            "DefaultEndpointsProtocol=https;AccountName=acme;{}",
            "AccountKey=" + r(_ALNUM + "+/", 86, "az1") + "==",
        ),
        _secret("square oauth secret", "square_oauth_secret", "square {}", "sq0csp-" + r(_URLSAFE, 43, "sq1")),
        _secret("hugging face token", "huggingface_token", "HF token {}", "hf_" + r(_ALNUM, 34, "hf1")),
        _secret(
            "discord bot token",
            "discord_bot_token",
            "bot {}",
            "M" + r(_URLSAFE, 23, "dc1") + "." + r(_URLSAFE, 6, "dc2") + "." + r(_URLSAFE, 27, "dc3"),
        ),
        _secret(
            "password assignment",
            "password_assignment",
            'config: DB_PASSWORD="{}"',
            "Tr0ub4dor&" + r(string.digits, 3, "pw1"),
        ),
        _secret("memory bank token", "memorybank_token", "my bank token {}", "mbk" + "_" + r(_URLSAFE, 43, "mb1")),
        _secret("bare random token", "high_entropy_string", "the API key is {}", r(_ALNUM, 32, "he1")),
        # Unquoted, as env files, YAML and shells write them: no shape but the name before them.
        _secret(
            "env file password",
            "password_assignment",
            "docker .env: POSTGRES_PASSWORD={}",
            "Winter" + r(string.digits, 4, "env1") + "!",
        ),
        _secret(
            "env file password of letters and digits",
            "password_assignment",
            "DB_PASSWORD={} for the reporting replica",
            "correcthorse" + r(string.digits, 2, "env2"),
        ),
        _secret(
            "django secret key",
            "password_assignment",
            "settings for prod: SECRET_KEY={}",
            "django-insecure-" + r(string.ascii_lowercase + string.digits, 24, "env3"),
        ),
        _secret(
            "exported token",
            "password_assignment",
            "export SENTRY_AUTH_TOKEN={}; then run the release",
            r(_HEX, 40, "env4"),
        ),
        _secret(
            "yaml password",
            "password_assignment",
            "password: {}",
            "Tr0ub4dor&" + r(string.digits, 3, "yml1") + "xyz!",
        ),
        _secret(
            "command line option password",
            "password_assignment",
            "nightly: backup.sh --db-password={} --out /backups",
            r(_ALNUM, 8, "cli1") + "#" + r(string.digits, 2, "cli2"),
        ),
        _secret(
            "mysql client password",
            "command_line_password",
            "connect with mysql -u root -p{} bank",
            "Winter" + r(string.digits, 4, "my1") + "!",
        ),
        _secret(
            "quoted mysql client password",
            "command_line_password",
            "mariadb -h db.internal -u app -p'{}' -e 'select 1'",
            "Spring " + r(string.digits, 4, "my2") + "?",
        ),
        _secret(
            "aws secret access key in config",
            "aws_secret_key",
            'aws_secret_access_key = "{}"',
            r(_B64, 40, "aws4"),
        ),
        _secret(
            "aws secret access key in an env file", "aws_secret_key", "AWS_SECRET_ACCESS_KEY={}", r(_B64, 40, "aws5")
        ),
    ]


def _harmless(name: str, text: str) -> Case:
    return Case(name=name, text=text, kind=None)


def harmless() -> list[Case]:
    """At least 30 memories that talk about secrets, or look technical, and hold none."""
    return [
        _harmless("rotation policy", "The password rotates every 30 days"),
        _harmless("token bucket", "We use a token bucket rate limiter with 60 tokens per minute"),
        _harmless("pointer to a vault", "The AWS key is in 1Password under 'prod-aws'"),
        _harmless("docs placeholder dsn", "Connect with mysql://user:password@host:3306/name as in the docs"),
        _harmless("starred dsn", "The logs show postgres://app:***@db.internal/prod, password redacted"),
        _harmless("templated dsn", "DATABASE_URL=postgres://app:${DB_PASSWORD}@db.internal/prod"),
        _harmless("dsn without password", "Local MariaDB is mysql://root@127.0.0.1:3306 with an empty password"),
        _harmless("commit sha", "Deploy commit 3f9a1c2e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the login bug"),
        _harmless("uuid", "The project id is 123e4567-e89b-12d3-a456-426614174000"),
        _harmless("typeid", "Pinned memory mem_01h455vb4pex5vsknk084sn02q is the deploy note"),
        _harmless("secret ingredient", "The secret ingredient in grandma's soup is cinnamon"),
        _harmless("quoted secret word", 'Her secret: "cinnamon" in the chili'),
        _harmless("secret manager command", "Load the key with export API_KEY=$(op read op://prod/aws/key)"),
        _harmless("key prefixes explained", "sk_live keys are for production and sk_test keys for staging"),
        _harmless("key file path", "The SSH private key file is ~/.ssh/id_ed25519; never share it"),
        _harmless("pem marker in prose", "A PEM file starts with a BEGIN PRIVATE KEY line"),
        _harmless("jwt explained", "JWTs have three base64url parts separated by dots"),
        _harmless("token scope advice", "Create ghp_ tokens with the repo scope only"),
        _harmless("github url", "Docs are at https://github.com/Yelp/detect-secrets/blob/master/README.md"),
        _harmless("image url", "Photo at https://example.com/images/2024/IMG_20240612_153012.jpg"),
        _harmless("identifier", "MysqlFulltextSearch2 ranks memories with BM25 over FULLTEXT candidates"),
        _harmless("shortcut", "Ctrl+Shift+P opens the command palette in VSCode"),
        _harmless("flight", "Flight LH1234 to Frankfurt leaves 2024-06-12 at 07:45 from gate B22"),
        _harmless("parcel", "UPS tracking number 1Z999AA10123456784 for the monitor"),
        _harmless("wifi name", "The office wifi network is CoffeeShop_Guest_5GHz"),
        _harmless("password in vault prose", "password: ask Dana, it is in the team vault"),
        _harmless("placeholder assignment", 'Set password = "${DB_PASSWORD}" in the compose file'),
        _harmless("model limit", "The model's context limit is 200000 tokens"),
        _harmless("bucket", "Backups go to s3://acme-prod-backups/2024/ nightly"),
        _harmless("redis url", "Redis runs at redis://127.0.0.1:6379/0 in development"),
        _harmless("bearer format", "The header is Authorization: Bearer <token> on every call"),
        _harmless("passphrase policy", "Passphrases need at least 12 characters and one digit"),
        _harmless("kubernetes secret name", "The Kubernetes secret db-credentials lives in namespace prod"),
        _harmless(
            "image digest", "Pinned image sha256:9b2a6c1e0f3d4b5a69788c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f"
        ),
        _harmless("project path", "The repo is at /home/alice/Projects/MemoryBank2026/src"),
        _harmless("api key env name", "The service reads OPENAI_API_KEY and ANTHROPIC_API_KEY from the environment"),
        _harmless("hook name", "useMemoryBankSearchQuery2024Hook caches results for a minute"),
        _harmless("isbn", "Reading ISBN 978-3-16-148410-0 this month"),
        # Near misses of the unquoted forms: a name without a value, a placeholder, code, a prompt for the password.
        _harmless("password set in the vault", "Remember to set DB_PASSWORD in the vault before the deploy"),
        _harmless("api key pointer", "the API key is in 1Password under prod-aws"),
        _harmless("env placeholder", "The .env.example has POSTGRES_PASSWORD=<password> and SECRET_KEY=changeme"),
        _harmless("env from the host", "DB_PASSWORD=${DB_PASSWORD} is read from the host's environment"),
        _harmless("masked token in a log", "The log prints API_TOKEN=****1234, masked"),
        _harmless("mysql prompts", "mysql -u root -p asks for the password; -P3306 is the port"),
        _harmless("mysql from the environment", "mysql -u root -p$MYSQL_PWD reads it from the environment"),
        _harmless("token rate", "Rate limit token: 60 per minute per user"),
        _harmless("code reads the password", "token = request.cookies.get(session) and password = get_password()"),
        _harmless("yaml tag", "password: !vault | encrypted with the team key"),
        _harmless("ci secret reference", "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} in the release workflow"),
        _harmless("password settings", "password_min_length: 12 and token_ttl=3600 in the auth config"),
    ]
