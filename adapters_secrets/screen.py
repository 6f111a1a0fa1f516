"""`DetectSecretsScreen`: credentials in a memory's text, found with Yelp's detect-secrets (ADR 0024).

Four kinds of test, each chosen so that ordinary memories pass (LoCoMo's 5,882 turns: no finding):

- **detect-secrets' patterns** for credentials with a recognisable shape (AWS key ids, GitHub, GitLab,
  Slack, Stripe, OpenAI, npm, PyPI, SendGrid, Twilio, ... tokens, PEM private keys, JWTs, quoted
  `password = "..."` assignments). Only each plugin's compiled patterns (`denylist`) and pure helpers
  (`analyze_string`, `is_formally_valid`, `calculate_shannon_entropy`) are used: `analyze_line` reads
  detect-secrets' process-wide settings and may call vendors' APIs to verify a key, which a save must
  not. Plugins tuned for source code that would refuse prose are left out (public IP addresses,
  Artifactory's `AP...` words, bare hex strings such as commit ids).
- **Passwords in URLs** (`postgres://app:S3cr3t!@db/prod`): detect-secrets' basic-auth pattern stops at
  `!$&'()*+,;=`, which real passwords hold, and refuses documentation placeholders
  (`user:password@`); ours takes any password and leaves obvious placeholders alone.
- **Unquoted secrets in env files, config and shell** (`POSTGRES_PASSWORD=Winter2024!`, `password: Tr0ub4dor&3`,
  `mysql -pWinter2024!`): detect-secrets' keyword plugin takes unquoted values only in files it knows by their
  extension (YAML, INI), which a memory has not, so a value after a secret-named NAME and `=` or `: ` is judged
  here: one word holding a digit or a symbol, not a placeholder (`<password>`, `${VAR}`, `changeme`, `***`) and
  not code (`request.cookies.get(...)`).
- **Bare random-looking strings** (an AWS secret access key pasted alone): detect-secrets' own Shannon
  entropy over unquoted tokens of 20 or more base64 characters mixing upper case, lower case and
  digits and changing between them often, above a threshold that grows with the token's length (its
  quoted-string plugin would miss prose, and its unquoted mode swaps a regex on the plugin instance,
  which is not thread-safe).

The screen holds no state after construction and is safe to share between threads.
"""

from __future__ import annotations

import itertools
import math
import re
import string
from collections.abc import Iterator, Sequence

import attrs
from detect_secrets.filters.heuristic import is_sequential_string
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from memorybank_core import SecretFinding, SecretScreen
from memorybank_core.tokens import SECRET_PREFIX


@attrs.frozen
class Kind:
    """One kind of credential the screen reports: its stable name and how a person reads it."""

    name: str
    label: str


AWS_ACCESS_KEY = Kind("aws_access_key", "an AWS access key")
AWS_SECRET_KEY = Kind("aws_secret_key", "an AWS secret access key")
GITHUB_TOKEN = Kind("github_token", "a GitHub token")
OPENAI_KEY = Kind("openai_key", "an OpenAI API key")
STRIPE_KEY = Kind("stripe_key", "a Stripe secret key")
PRIVATE_KEY = Kind("private_key", "a private key")
URL_PASSWORD = Kind("url_password", "a password in a URL")
PASSWORD_ASSIGNMENT = Kind("password_assignment", "a password or secret assigned in code or config")
COMMAND_LINE_PASSWORD = Kind("command_line_password", "a password on a command line")
JWT = Kind("jwt", "a JSON Web Token")
NPM_TOKEN = Kind("npm_token", "an npm token")
HIGH_ENTROPY_STRING = Kind("high_entropy_string", "a random-looking key or token")

#: detect-secrets plugins, each with the kind it reports. Only their patterns are used (see the module docstring).
_PLUGINS: tuple[tuple[Kind, RegexBasedDetector], ...] = (
    (AWS_ACCESS_KEY, AWSKeyDetector()),
    (Kind("azure_storage_key", "an Azure storage account key"), AzureStorageKeyDetector()),
    (Kind("discord_bot_token", "a Discord bot token"), DiscordBotTokenDetector()),
    (GITHUB_TOKEN, GitHubTokenDetector()),
    (Kind("gitlab_token", "a GitLab token"), GitLabTokenDetector()),
    (JWT, JwtTokenDetector()),
    (Kind("mailchimp_key", "a Mailchimp API key"), MailchimpDetector()),
    (NPM_TOKEN, NpmDetector()),
    (OPENAI_KEY, OpenAIDetector()),
    (PRIVATE_KEY, PrivateKeyDetector()),
    (Kind("pypi_token", "a PyPI token"), PypiTokenDetector()),
    (Kind("sendgrid_key", "a SendGrid API key"), SendGridDetector()),
    (Kind("slack_token", "a Slack token or webhook"), SlackDetector()),
    (Kind("square_oauth_secret", "a Square OAuth secret"), SquareOAuthDetector()),
    (STRIPE_KEY, StripeDetector()),
    (Kind("telegram_bot_token", "a Telegram bot token"), TelegramBotTokenDetector()),
    (Kind("twilio_key", "a Twilio API key"), TwilioKeyDetector()),
)

#: Shapes detect-secrets 1.5 does not know yet, from each vendor's published token format.
_PREFIXED: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    (GITHUB_TOKEN, re.compile(r"github_pat_[A-Za-z0-9_]{22,255}")),
    (Kind("google_api_key", "a Google API key"), re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    (Kind("anthropic_key", "an Anthropic API key"), re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}")),
    (OPENAI_KEY, re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}")),
    (STRIPE_KEY, re.compile(r"(?:sk|rk)_test_[0-9a-zA-Z]{24,}|whsec_[0-9a-zA-Z]{24,}")),
    (Kind("huggingface_token", "a Hugging Face token"), re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    (
        Kind("memorybank_token", "a memory bank API token"),
        re.compile(re.escape(SECRET_PREFIX) + r"[A-Za-z0-9_\-]{20,}"),
    ),
)

#: `scheme://user:password@host`: any password up to the `@` (an empty user too, as in `redis://:pw@host`).
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:([^\s@/]+)@[^\s@/]")
#: Stand-ins the docs and people write where a password goes: `password`, `PW`, `***`, `…`, `<pw>`, `${DB_PASS}`,
#: `%s`; anything under four characters (`u:p@`) is an example, not a password.
_PLACEHOLDER = re.compile(
    r"(?i)(?:pass(?:word|wd)?|pwd?|secret|changeme|redacted|hidden|x+|\*+|\.+|…+|<[^>]*>|\[[^]]*]|\$\{?\w+}?|\{\{.*}}"
    r"|%s|:\w+|.{1,3})"
)
#: A quoted value after a secret-sounding name is a password only if it is not a word or a phrase.
_PASSWORD_LIKE = re.compile(r"^(?=.*[0-9!#$%&*+/=?@^_~-])\S{6,}$")

#: The unquoted kind (`DB_PASSWORD=s3cret!`): six characters or more, a digit or one of `!#$%&*+?@^~` among them,
#: so words, identifiers and paths (`token: useless`, `api_key=settings.api_key`) are not taken for passwords.
_UNQUOTED_PASSWORD_LIKE = re.compile(r"^(?=.*[0-9!#$%&*+?@^~]).{6,}$")
#: Stand-ins that only the unquoted forms meet: `changeme123`, `your_api_key`, masked values (`xxxx-xxxx-1234`,
#: `****1234`, `ab12...`), `${VAR}`, `$(op read ...)`, `%(pw)s`, `{{ secrets.X }}`, `<password>`, YAML tags (`!vault`,
#: `!Ref`), and code: a call or an index (`get_password()`, `os.environ[...]`).
_UNQUOTED_PLACEHOLDER = re.compile(
    r"(?i)(?:change[_-]?me|your[_-]|replace[_-]?me|example|dummy|placeholder|redacted)\S*"
    r"|.*(?:x{3}|\*{3}|•{3}|\.{3}|…).*|[$%{<\[(].*|![A-Za-z]+|[A-Za-z_][\w.]*[(\[].*"
)
#: Where an unquoted assignment can be: `=` (not `==`), or `:` and a space as YAML and prose write it. The screen
#: looks for these first and for a name before them second: one pass for a character class is far cheaper than
#: trying a list of names at every character (0.1 against 0.4 ms of CPU on 8,000 characters of LoCoMo).
_OPERATOR = re.compile(r"=(?!=)[ \t]*|:[ \t]+")
#: Names that say they hold a secret, as their last word (`POSTGRES_PASSWORD`, `dbPassword`, `SECRET_KEY`,
#: `GITHUB_TOKEN`, `--db-password`)...
_SECRET_NAME_ENDINGS = tuple(
    ending.replace("_", separator)
    for ending in (
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "secret_key",
        "api_key",
        "access_key",
        "private_key",
    )
    for separator in ("_", "-", "")
)
#: ... and short ones that count only as a whole word (`DB_PASS`, `MYSQL_PWD`; not `bypass`).
_SECRET_NAME_WORDS = ("pass", "pwd")
_NAME_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_-.")
#: The value: one unquoted word on the line.
_UNQUOTED_VALUE = re.compile(r"(?!['\"`])[^\s'\"`]+")
#: `mysql -u root -pWinter2024!`: the MySQL and MariaDB clients take a password glued to `-p` (a lone `-p` asks
#: for it; `-P` is the port), quoted or not, within a command's reach of the program's name.
_COMMAND_LINE_PASSWORD = re.compile(
    r"(?i:\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump)\b)[^\n]{0,200}?"
    r"\s-p(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"`]+))"
)
#: Prose punctuation after an unquoted value is not part of it (`DB_PASSWORD=hunter2!.` keeps its `!`).
_TRAILING = ".,;:)]}"

_KEYWORDS = KeywordDetector()
#: How far around a secret-sounding word an assignment is looked for: `name = "value"` with a value of up to
#: about 200 characters.
ASSIGNMENT_REACH = 256
#: Where that plugin's patterns can match: one of its deny-list words (each holds one of these stems, e.g.
#: `api_key`, `db_pass`, `passwd`, `pwd`, `secret`, `contraseña`), then an assignment (`:`, `=`, `!=`, `(`,
#: `.assign`), or a comparison before it (`"..." == password`). Prose ("a passion for keyboards") has none.
_KEYWORD = re.compile(
    r"(?i)(?:key|pass|pwd|secret|contrase)\w*['\"\]]{0,2}\s*(?:[:=!(]|\.assign)"
    r"|[!=]=\s*\w*(?:key|pass|pwd|secret|contrase)"
)
_LINE = re.compile(r"[^\n]+")
_QUOTE = re.compile(r"['\"`]")
_JWT_TAIL = re.compile(r"[A-Za-z0-9_\-+/=.]*")

#: A bare token in base64's alphabet (URL-safe too), not part of a longer one.
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{20,}(?![A-Za-z0-9+/=_\-])")
_ENTROPY = Base64HighEntropyString()
#: A random base64 token of n characters has entropy close to log2(n) bits (every character new), up to about
#: 5.5; words, identifiers and paths repeat letters. The threshold is 85 % of log2(n), at most 4.3 bits.
ENTROPY_SHARE = 0.85
ENTROPY_CEILING = 4.3
#: Random text changes between upper case, lower case and digits at about 6 of 10 characters; camelCase names and
#: file names change far less often (`MysqlFulltextSearch2`: 3 in 10).
MIN_CLASS_CHANGES = 0.35
#: Tokens shorter than this must hold two digits: short identifiers (`CoffeeShop_Guest_5GHz`) often hold one.
SHORT_TOKEN = 32


class DetectSecretsScreen(SecretScreen):
    """The save path's secret screen on detect-secrets (the core's `SecretScreen` port)."""

    def find(self, text: str) -> Sequence[SecretFinding]:
        """Every credential-looking span of `text`, ordered by start.

        Where finds overlap, a named kind wins over the entropy test (a GitHub token is reported as one,
        not as a random string), and the longer span over one inside it.
        """
        found = sorted(
            _candidates(text),
            key=lambda finding: (finding.kind == HIGH_ENTROPY_STRING.name, finding.start, -finding.end),
        )
        kept: list[SecretFinding] = []
        for finding in found:
            if not any(finding.start < other.end and other.start < finding.end for other in kept):
                kept.append(finding)
        return sorted((_named_aws_secret(text, finding) for finding in kept), key=lambda finding: finding.start)


#: An AWS secret access key's name shortly before its value on the same line (`aws_secret_access_key = "…"`).
_AWS_SECRET_NAME = re.compile(r"(?i)aws.{0,20}?secret|secret.{0,20}?aws")
_AWS_SECRET_LENGTH = 40
#: An access key id (detect-secrets' first AWS pattern); its second pattern finds secret keys, reported as such.
_AWS_KEY_ID = re.compile(r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}")


def _named_aws_secret(text: str, finding: SecretFinding) -> SecretFinding:
    """An AWS secret access key is reported as one, not as an access key id, a password or a random string."""
    if finding.kind == AWS_ACCESS_KEY.name:
        if _AWS_KEY_ID.fullmatch(text, finding.start, finding.end):
            return finding
        return _finding(AWS_SECRET_KEY, finding.start, finding.end)
    if finding.kind not in (PASSWORD_ASSIGNMENT.name, HIGH_ENTROPY_STRING.name):
        return finding
    if finding.end - finding.start != _AWS_SECRET_LENGTH:
        return finding
    line_start = text.rfind("\n", 0, finding.start) + 1
    if _AWS_SECRET_NAME.search(text, max(line_start, finding.start - 60), finding.start) is None:
        return finding
    return _finding(AWS_SECRET_KEY, finding.start, finding.end)


def _candidates(text: str) -> Iterator[SecretFinding]:
    for kind, plugin in _PLUGINS:
        # Each pattern's whole match: some of detect-secrets' patterns capture only a token's prefix
        # (`(ghp|gho|...)_...` yields `ghp`), so the match is the span that surely holds the credential.
        if kind is NPM_TOKEN and "_authToken" not in text:
            continue  # its `//.+/` backtracks quadratically over long texts without the word
        for pattern in plugin.denylist:
            for match in pattern.finditer(text):
                if kind is PRIVATE_KEY:
                    yield from _private_key_block(text, match.start(), match.group())
                elif kind is JWT:
                    if JwtTokenDetector.is_formally_valid(match.group()):
                        # The pattern stops before the signature, which is secret too.
                        yield _finding(kind, match.start(), _JWT_TAIL.match(text, match.end()).end())  # type: ignore[union-attr]
                else:
                    yield _finding(kind, match.start(), match.end())
    for kind, pattern in _PREFIXED:
        for match in pattern.finditer(text):
            yield _finding(kind, match.start(), match.end())
    for match in _URL_PASSWORD.finditer(text):
        if not _PLACEHOLDER.fullmatch(match.group(1)):
            yield _finding(URL_PASSWORD, match.start(1), match.end(1))
    yield from _assignments(text)
    yield from _unquoted_assignments(text)
    for match in _TOKEN.finditer(text):
        if looks_random(match.group()):
            yield _finding(HIGH_ENTROPY_STRING, match.start(), match.end())


def _assignments(text: str) -> Iterator[SecretFinding]:
    """Quoted values assigned to secret-sounding names (`DB_PASSWORD="..."`), with detect-secrets' keyword plugin.

    Its patterns run character by character through the whole text and cost milliseconds on a long
    one, so they only search a window around each secret-sounding word (within a line, as they do).
    """
    if not _QUOTE.search(text):
        return
    for start, end in _windows(text):
        window = text[start:end]
        for value in set(_KEYWORDS.analyze_string(window)):
            if _PASSWORD_LIKE.match(value) and not _PLACEHOLDER.fullmatch(value):
                for at in _occurrences(window, value):
                    yield _finding(PASSWORD_ASSIGNMENT, start + at, start + at + len(value))


def _unquoted_assignments(text: str) -> Iterator[SecretFinding]:
    """Unquoted values after a secret-named NAME (env files, YAML, `--password=`) and after `mysql ... -p`."""
    for operator in _OPERATOR.finditer(text):
        if not _secret_named(text, operator.start()):
            continue
        value = _UNQUOTED_VALUE.match(text, operator.end())
        if value is None:
            continue
        word = value.group().rstrip(_TRAILING)
        if _UNQUOTED_PASSWORD_LIKE.match(word) and not _is_placeholder(word):
            yield _finding(PASSWORD_ASSIGNMENT, value.start(), value.start() + len(word))
    lowered = text.lower()
    if "mysql" not in lowered and "mariadb" not in lowered:
        return  # the pattern tries each program name at every character: skip it where none is
    for match in _COMMAND_LINE_PASSWORD.finditer(text):
        group = next(n for n in (1, 2, 3) if match.group(n) is not None)
        # Unquoted, it is one shell word: prose punctuation after it is not part of it.
        password = match.group(group) if group != 3 else match.group(group).rstrip(_TRAILING)
        if password and not _is_placeholder(password):
            yield _finding(COMMAND_LINE_PASSWORD, match.start(group), match.start(group) + len(password))


def _secret_named(text: str, end: int) -> bool:
    """Whether the name right before `end` (an operator; spaces and a closing quote between) says it holds a secret.

    Read back character by character: a regex anchored at `end` would still try every start before it.
    """
    while end and text[end - 1] in " \t":
        end -= 1
    if end and text[end - 1] in "'\"":
        end -= 1
    start = end
    while start and text[start - 1] in _NAME_CHARACTERS:
        start -= 1
    name = text[start:end].lower()
    return name.endswith(_SECRET_NAME_ENDINGS) or any(
        name == word or (name.endswith(word) and name[-len(word) - 1] in "_-.") for word in _SECRET_NAME_WORDS
    )


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.fullmatch(value) or _UNQUOTED_PLACEHOLDER.fullmatch(value))


def _windows(text: str) -> Iterator[tuple[int, int]]:
    """Merged spans of `ASSIGNMENT_REACH` characters either side of each keyword, within its line."""
    for line in _LINE.finditer(text):
        current: tuple[int, int] | None = None
        for match in _KEYWORD.finditer(text, line.start(), line.end()):
            start = max(line.start(), match.start() - ASSIGNMENT_REACH)
            end = min(line.end(), match.end() + ASSIGNMENT_REACH)
            if current is not None and start <= current[1]:
                current = (current[0], end)
                continue
            if current is not None:
                yield current
            current = (start, end)
        if current is not None:
            yield current


def looks_random(token: str) -> bool:
    """Whether a bare base64-alphabet token reads as a key rather than a word, an identifier or a path.

    Tuned on LoCoMo's turns, the docs and tests/secrets/table.py (ADR 0024): it flags about 85 % of random
    20-character alphanumeric strings, 96 % at 32 and 99 % at 40, and none of those ordinary texts.
    """
    digits = sum(c.isdigit() for c in token)
    if digits < (2 if len(token) < SHORT_TOKEN else 1):
        return False
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)) or is_sequential_string(token):
        return False
    classes = [_character_class(c) for c in token]
    changes = sum(a != b for a, b in itertools.pairwise(classes)) / (len(token) - 1)
    if changes < MIN_CLASS_CHANGES:
        return False
    threshold = min(ENTROPY_SHARE * math.log2(len(token)), ENTROPY_CEILING)
    return _ENTROPY.calculate_shannon_entropy(token) >= threshold


def _character_class(character: str) -> int:
    return 0 if character.isupper() else 1 if character.islower() else 2 if character.isdigit() else 3


def _occurrences(text: str, value: str) -> Iterator[int]:
    if not value:
        return
    start = text.find(value)
    while start != -1:
        yield start
        start = text.find(value, start + len(value))


def _private_key_block(text: str, start: int, header: str) -> Iterator[SecretFinding]:
    """The whole PEM block from `-----BEGIN` through its END line (or the end of the text); a PuTTY header alone.

    A `BEGIN ... PRIVATE KEY` without its dashes is prose about keys, not a key.
    """
    if not header.startswith("BEGIN"):
        yield _finding(PRIVATE_KEY, start, start + len(header))
        return
    if text[max(start - 5, 0) : start] != "-----":
        return
    end = text.find("-----END", start + len(header))
    close = text.find("-----", end + len("-----END")) if end != -1 else -1
    yield _finding(PRIVATE_KEY, start - 5, close + 5 if close != -1 else len(text))


def _finding(kind: Kind, start: int, end: int) -> SecretFinding:
    return SecretFinding(kind=kind.name, label=kind.label, start=start, end=end)


#: Every kind the screen can report, by name: for docs, metrics and tests.
KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        *(kind for kind, _ in _PLUGINS),
        *(kind for kind, _ in _PREFIXED),
        URL_PASSWORD,
        PASSWORD_ASSIGNMENT,
        COMMAND_LINE_PASSWORD,
        HIGH_ENTROPY_STRING,
        AWS_SECRET_KEY,
    )
}
