"""`DetectSecretsScreen`: credentials in a memory's text, found with Yelp's detect-secrets (ADR 0024, ADR 0031).

Four kinds of test, each chosen so that ordinary memories pass (LoCoMo's 5,882 turns: no finding):

- **detect-secrets' patterns** for credentials with a recognisable shape (AWS key ids, GitHub, GitLab,
  Slack, Stripe, OpenAI, npm, PyPI, SendGrid, Twilio, ... tokens, PEM private keys, JWTs, quoted
  `password = "..."` assignments). Only each plugin's compiled patterns (`denylist`) and pure helpers
  (`is_formally_valid`, `calculate_shannon_entropy`) are used: `analyze_line` reads
  detect-secrets' process-wide settings and may call vendors' APIs to verify a key, which a save must
  not. Plugins tuned for source code that would refuse prose are left out (public IP addresses,
  Artifactory's `AP...` words, bare hex strings such as commit ids).
- **Passwords in URLs** (`postgres://app:S3cr3t!@db/prod`, and `app:S3cr3t!@db:5432/prod` without a scheme):
  detect-secrets' basic-auth pattern stops at `!$&'()*+,;=`, which real passwords hold, and refuses documentation
  placeholders (`user:password@`); ours takes any password and leaves obvious placeholders alone.
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

**Cost** (ADR 0031). The screen reads a folded copy of the text (`adapters_secrets.folding`) and its work is linear
in the text's length: every regex that runs over the whole text either has a literal anchor it is skipped without
(`AKIA`, `eyJ`, `://`, ...) or cannot backtrack over more than its own bounded match; a pattern that could (a JWT's
open-ended parts, the keyword plugin's quoted value) runs only where its anchor occurs, from there, on a window
that ends where its match must end, and never twice over the same run. Each place judged in Python (a
secret-named assignment, a candidate token, an anchor occurrence, a finding) costs one unit of the caller's
`ScreenBudget`; when it runs out the screen raises `ScreenBudgetExceededError` and the save is refused.

The screen holds no state after construction and is safe to share between threads.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

import attrs
from detect_secrets.filters.heuristic import is_sequential_string
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import DENYLIST, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
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

from adapters_secrets.folding import Folded, fold, look_alike_copy, mixes_scripts
from memorybank_core import SecretFinding, SecretScreen
from memorybank_core.ports import ScreenBudget
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

#: The most findings one text reports: one is enough to refuse it, and a text of thousands of keys is not judged
#: key by key (each costs a unit of the budget).
MAX_FINDINGS = 64


@attrs.frozen
class _Shape:
    """One fixed-shape pattern, and how to run it in linear time.

    `anchors`: literals one of which every match holds (case-sensitively, or in the ASCII-lower-cased text when
    `lower`); the pattern is skipped when none occurs. With `skip`, the pattern is tried only where `start` (the
    literal it begins with) occurs, a Python loop costing a budget unit each, and after a failed try the search goes
    on past the run `skip` matches there: no match can start inside that run (the pattern's open-ended part would
    reach the same end and fail the same way). Without `skip` it runs over the whole text, which is linear for it
    (a literal start or a bounded match, and nothing open-ended before a required character).
    """

    kind: Kind
    pattern: re.Pattern[str]
    anchors: tuple[str, ...]
    lower: bool = False
    start: str = ""
    skip: re.Pattern[str] | None = None


_DASH_RUN = re.compile(r"[A-Za-z0-9\-_=]*")
_KEY_RUN = re.compile(r"[A-Za-z0-9\-_]*")
_LINE_REST = re.compile(r"[^\n]*")
_AZURE = Kind("azure_storage_key", "an Azure storage account key")
_SLACK = Kind("slack_token", "a Slack token or webhook")
_GITLAB = Kind("gitlab_token", "a GitLab token")

#: detect-secrets' plugins, each with the kind it reports and the anchor its patterns need.
_PLUGINS: tuple[tuple[Kind, RegexBasedDetector], ...] = (
    (AWS_ACCESS_KEY, AWSKeyDetector()),
    (_AZURE, AzureStorageKeyDetector()),
    (Kind("discord_bot_token", "a Discord bot token"), DiscordBotTokenDetector()),
    (GITHUB_TOKEN, GitHubTokenDetector()),
    (_GITLAB, GitLabTokenDetector()),
    (JWT, JwtTokenDetector()),
    (Kind("mailchimp_key", "a Mailchimp API key"), MailchimpDetector()),
    (NPM_TOKEN, NpmDetector()),
    (OPENAI_KEY, OpenAIDetector()),
    (PRIVATE_KEY, PrivateKeyDetector()),
    (Kind("pypi_token", "a PyPI token"), PypiTokenDetector()),
    (Kind("sendgrid_key", "a SendGrid API key"), SendGridDetector()),
    (_SLACK, SlackDetector()),
    (Kind("square_oauth_secret", "a Square OAuth secret"), SquareOAuthDetector()),
    (STRIPE_KEY, StripeDetector()),
    (Kind("telegram_bot_token", "a Telegram bot token"), TelegramBotTokenDetector()),
    (Kind("twilio_key", "a Twilio API key"), TwilioKeyDetector()),
)

#: Per plugin pattern (by its source): the anchors it needs, whether they are read lower-cased, and for the open-ended
#: ones the literal a match starts with and the run to skip after a failed try.
_PLUGIN_PLAN: dict[str, tuple[tuple[str, ...], bool, str, re.Pattern[str] | None]] = {
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}": (("A3T", "ABIA", "ACCA", "AKIA", "ASIA"), False, "", None),
    # Its `aws.{0,20}?` tries 20 x 20 ways at each `aws`: run only around a quoted 40-character value (below).
    r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\'\"]([0-9a-zA-Z/+]{40})[\'\"]": (("aws",), True, "", None),
    r"AccountKey=[a-zA-Z0-9+\/=]{88}": (("AccountKey=",), False, "", None),
    r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}": ((".",), False, "", None),
    r"(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), False, "", None),
    r"(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\-]{20,50}(?!\w)": (
        ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-"),
        False,
        "",
        None,
    ),
    r"GR1348941[A-Za-z0-9_\-]{20,50}(?!\w)": (("GR1348941",), False, "", None),
    r"glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\-]{20,50}(?!\w)": (("glcbt-",), False, "", None),
    r"glimt-[A-Za-z0-9_\-]{25}(?!\w)": (("glimt-",), False, "", None),
    r"glptt-[A-Za-z0-9_\-]{40}(?!\w)": (("glptt-",), False, "", None),
    r"glagent-[A-Za-z0-9_\-]{50,1024}(?!\w)": (("glagent-",), False, "", None),
    r"gloas-[A-Za-z0-9_\-]{64}(?!\w)": (("gloas-",), False, "", None),
    r"eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*?": (("eyJ",), False, "eyJ", _DASH_RUN),
    r"[0-9a-z]{32}-us[0-9]{1,2}": (("-us",), False, "", None),
    r"\/\/.+\/:_authToken=\s*((npm_.+)|([A-Fa-f0-9-]{36})).*": (("_authToken",), False, "//", _LINE_REST),
    r"sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}": (("T3BlbkFJ",), False, "sk-", _KEY_RUN),
    r"PuTTY-User-Key-File-2": (("PuTTY-User-Key-File-2",), False, "", None),
    r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}": (("pypi-AgEIcHlwaS5vcmc",), False, "", None),
    r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}": (("pypi-AgENdGVzdC5weXBpLm9yZw",), False, "", None),
    r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}": (("SG.",), False, "", None),
    r"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+": (("xox",), True, "", None),
    r"https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+": (
        ("hooks.slack.com",),
        True,
        "",
        None,
    ),
    r"sq0csp-[0-9A-Za-z\\\-_]{43}": (("sq0csp-",), False, "", None),
    r"(?:r|s)k_live_[0-9a-zA-Z]{24}": (("k_live_",), False, "", None),
    r"\d{8,10}:[0-9A-Za-z_-]{35}": ((":",), False, "", None),
    r"AC[a-z0-9]{32}": (("AC",), False, "", None),
    r"SK[a-z0-9]{32}": (("SK",), False, "", None),
}

#: A quoted 40-character value, the part of the AWS secret pattern that is rare: the pattern runs only before it.
_AWS_SECRET_VALUE = re.compile(r"['\"][0-9a-zA-Z/+]{40}['\"]")
#: How far before that value the AWS secret pattern can start (`aws`, 20, a keyword, 20).
_AWS_SECRET_REACH = 52


def _plugin_shapes() -> tuple[_Shape, ...]:
    shapes = []
    for kind, plugin in _PLUGINS:
        for pattern in plugin.denylist:
            if kind is PRIVATE_KEY and pattern.pattern.startswith("BEGIN"):
                continue  # PEM headers: `_PEM_HEADER` below takes every case and the encrypted kinds too
            anchors, lower, start, skip = _PLUGIN_PLAN[pattern.pattern]
            shapes.append(_Shape(kind, pattern, anchors, lower, start, skip))
    return tuple(shapes)


#: Shapes detect-secrets 1.5 does not know yet, from each vendor's published token format.
_PREFIXED: tuple[_Shape, ...] = (
    _Shape(GITHUB_TOKEN, re.compile(r"github_pat_[A-Za-z0-9_]{22,255}"), ("github_pat_",)),
    _Shape(Kind("google_api_key", "a Google API key"), re.compile(r"AIza[0-9A-Za-z_\-]{35}"), ("AIza",)),
    _Shape(Kind("anthropic_key", "an Anthropic API key"), re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}"), ("sk-ant-",)),
    _Shape(
        OPENAI_KEY,
        re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"),
        ("sk-proj-", "sk-svcacct-", "sk-admin-"),
    ),
    _Shape(STRIPE_KEY, re.compile(r"(?:sk|rk)_test_[0-9a-zA-Z]{24,}|whsec_[0-9a-zA-Z]{24,}"), ("k_test_", "whsec_")),
    _Shape(Kind("huggingface_token", "a Hugging Face token"), re.compile(r"\bhf_[A-Za-z0-9]{30,}"), ("hf_",)),
    _Shape(
        Kind("memorybank_token", "a memory bank API token"),
        re.compile(re.escape(SECRET_PREFIX) + r"[A-Za-z0-9_\-]{20,}"),
        (SECRET_PREFIX,),
    ),
)

#: A PEM private key's header in any case, the encrypted kinds too (`-----BEGIN ENCRYPTED PRIVATE KEY-----`,
#: `-----begin rsa private key-----`, PGP's `PRIVATE KEY BLOCK`); read in the lower-cased text.
_PEM_HEADER = re.compile(r"-{4,5}[ \t]?begin[ a-z0-9]{0,40}?private key(?: block)?[ \t]?-{4,5}")
_PEM_END = re.compile(r"-{4,5}[ \t]?end\b[^\n]*?-{4,5}")

#: `scheme://user:password@host`: any password up to the `@` (an empty user too, as in `redis://:pw@host`). Found
#: from its `://`; the scheme before it is checked apart (a regex starting at every letter of a word would try
#: each one again to the `://`).
_URL_PASSWORD = re.compile(r"://[^\s:/@]*:([^\s@/]++)@[^\s@/]")
_SCHEME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
#: The same credentials without a scheme, as a connection string's tail is often pasted: `app:Winter2024!@db:5432/`.
#: Stricter, since no scheme says it is a URL: a password-like value, and a host followed by a port or a path.
_BARE_URL_PASSWORD = re.compile(
    r"(?<![\w.\-:/@%])[A-Za-z0-9_.\-]{1,64}:([^\s@/:]{6,128})@[A-Za-z0-9][A-Za-z0-9.\-]{0,253}(?::[0-9]{1,5}(?![0-9])|(?=/))"
)
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
#: Names that say they hold a secret, as their last word (`POSTGRES_PASSWORD`, `dbPassword`, `SECRET_KEY`,
#: `GITHUB_TOKEN`, `--db-password`), or short ones as a whole word (`DB_PASS`, `MYSQL_PWD`; not `bypass`); then `=`
#: (not `==`) or `:` and a space, as env files, YAML and prose write them. Read in the lower-cased text, from the
#: name's last word, so nothing before it is read twice.
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
_UNQUOTED_SITE = re.compile(
    "(?:"
    + "|".join(re.escape(ending) for ending in sorted(set(_SECRET_NAME_ENDINGS), key=len, reverse=True))
    + r"|pass|pwd)['\"]?[ \t]*(?:=(?!=)|:[ \t])[ \t]*"
)
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_SECRET_NAME_WORDS = ("pass", "pwd")
#: The value: one unquoted word on the line; a longer one is judged by its first 256 characters, so that a line of
#: assignments nested in one another (`pwd=pwd=pwd=...`) is not read to its end once per assignment.
_UNQUOTED_VALUE = re.compile(r"(?!['\"`])[^\s'\"`]{1,256}")
#: `mysql -u root -pWinter2024!`: the MySQL and MariaDB clients take a password glued to `-p` (a lone `-p` asks
#: for it; `-P` is the port), quoted or not, within a command's reach of the program's name.
#: Found from its `-p` (rare), then the program looked for on the same line before it: a pattern starting at each
#: program name would read up to 200 characters after every `mysql` of a text.
_COMMAND_LINE_PASSWORD = re.compile(r"\s-p(?:'([^'\n]+)'|\"([^\"\n]+)\"|([^\s'\"`]+))")
_PROGRAM = re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump)\b")
#: How far before its `-p` the program's name may end.
_PROGRAM_REACH = 200
#: Prose punctuation after an unquoted value is not part of it (`DB_PASSWORD=hunter2!.` keeps its `!`).
_TRAILING = ".,;:)]}"


def _reversed_words(words: Sequence[str]) -> str:
    """detect-secrets' deny-list words (`api_?key`, ...) as an alternation that reads them backwards."""
    backwards = []
    for word in words:
        units = re.findall(r".\??", word)  # a character, with its `?` when it has one
        backwards.append("".join(reversed(units)))
    return "|".join(backwards)


#: detect-secrets' keyword plugin (`password = "..."`, `secret: '...'`, `api_key => "..."`, `"..." == password`).
#: Its patterns start at every deny-list word and run `\w*` and the quoted value to the end of the line, which is
#: quadratic on a line of keywords; so the places where they can match are found first, in linear time, and each of
#: its patterns then runs once there, anchored, on a window that ends with the value's closing quote.
#:
#: The places are found in the reversed, lower-cased text, from the quoted value back to the name: the value (one
#: line, starting with a word character, ending with none of `,'"` + backtick, its closing quote its first quote of
#: that kind), the operator, and the deny-list word within the name. Reading backwards, each name is read only for
#: the value right after it.
_VALUE_BACKWARDS = (
    r"(?:'(?=[^\v\n,'\"`])[^\v\n'\"]*+(?<=\w)'"
    r"|\"(?=[^\v\n,'\"`])[^\v\n'\"]*+(?<=\w)\""
    r"|`(?=[^\v\n,'\"`])[^\v\n'\"`]*+(?<=\w)`)"
)
_DENYLIST_BACKWARDS = _reversed_words(DENYLIST)
_ASSIGNMENT_BACKWARDS = re.compile(
    "(?P<semicolon>;)?"
    + _VALUE_BACKWARDS
    + r"(?:[ \t]*(?:[:=]{1,3}|=?=!|>?=)[ \t]*[\]'\"]{0,2}\w*?|\((?:ngissa.)?\w*?|(?(semicolon)[ \t]*\S{0,64}?|(?!)))"
    + f"(?:{_DENYLIST_BACKWARDS})"
)
#: `"value" == password`: the value first, then a comparison and a name holding a deny-list word.
_COMPARISON = re.compile(
    r"(?:'(?=\w)[^\v\n'\"]*+(?<=[^\v\n,'\"`])'|\"(?=\w)[^\v\n'\"]*+(?<=[^\v\n,'\"`])\"|`(?=\w)[^\v\n'\"`]*+(?<=[^\v\n,'\"`])`)"
    r"[ \t]*[!=]{2,3}[ \t]*\w*?(?:" + "|".join(DENYLIST) + ")"
)
_KEYWORD_PATTERNS = tuple(QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items())
_QUOTE = re.compile(r"['\"`]")
_JWT_TAIL = re.compile(r"[A-Za-z0-9_\-+/=.]*")

#: A bare token in base64's alphabet (URL-safe too), not part of a longer one: greedy from a run's first character,
#: a match is always a whole run (a shorter run fails at each of its characters within 20 steps).
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")
#: A random base64 token of n characters has entropy close to log2(n) bits (every character new), up to about
#: 5.5; words, identifiers and paths repeat letters. The threshold is 85 % of log2(n), at most 4.3 bits.
ENTROPY_SHARE = 0.85
ENTROPY_CEILING = 4.3
#: Random text changes between upper case, lower case and digits at about 6 of 10 characters; camelCase names and
#: file names change far less often (`MysqlFulltextSearch2`: 3 in 10).
MIN_CLASS_CHANGES = 0.35
#: Tokens shorter than this must hold two digits: short identifiers (`CoffeeShop_Guest_5GHz`) often hold one.
SHORT_TOKEN = 32
_CLASS_RUNS = re.compile(r"[A-Z]+|[a-z]+|[0-9]+|[^A-Za-z0-9]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class DetectSecretsScreen(SecretScreen):
    """The save path's secret screen on detect-secrets (the core's `SecretScreen` port)."""

    def find(self, text: str, budget: ScreenBudget | None = None) -> Sequence[SecretFinding]:
        """Every credential-looking span of `text`, ordered by start (at most `MAX_FINDINGS`).

        Where finds overlap, a named kind wins over the entropy test (a GitHub token is reported as one,
        not as a random string), and the longer span over one inside it.

        Raises:
            ScreenBudgetExceededError: `budget` ran out first.
        """
        budget = budget if budget is not None else ScreenBudget()
        folded = fold(text)
        found = [
            _named_aws_secret(folded.text, finding)
            for finding in itertools.islice(_Reading(folded.text, budget).candidates(), MAX_FINDINGS)
        ]
        copy = look_alike_copy(folded.text)
        if copy is not None:
            imitated, letters = copy
            found.extend(
                _named_aws_secret(imitated, finding)
                for finding in itertools.islice(_Reading(imitated, budget).shaped(), MAX_FINDINGS)
                if mixes_scripts(folded.text, letters, finding.start, finding.end)
            )
        return _in_original(folded, _kept(found))


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


def _kept(found: list[SecretFinding]) -> list[SecretFinding]:
    ranked = sorted(found, key=lambda finding: (finding.kind == HIGH_ENTROPY_STRING.name, finding.start, -finding.end))
    kept: list[SecretFinding] = []
    for finding in ranked:
        if not any(finding.start < other.end and other.start < finding.end for other in kept):
            kept.append(finding)
    return sorted(kept, key=lambda finding: finding.start)[:MAX_FINDINGS]


def _in_original(folded: Folded, found: list[SecretFinding]) -> list[SecretFinding]:
    if folded.is_identity():
        return found
    return [
        attrs.evolve(finding, start=start, end=end)
        for finding in found
        for start, end in (folded.original(finding.start, finding.end),)
    ]


class _Reading:
    """One text being screened: the text, its ASCII-lower-cased copy (same positions) and the budget it spends."""

    def __init__(self, text: str, budget: ScreenBudget) -> None:
        self.text = text
        lower = text.lower()  # fast; a text where lower-casing changes lengths (`İ`) keeps its own positions
        self.lower = lower if len(lower) == len(text) else text.translate(_ASCII_LOWER)
        self.budget = budget

    def candidates(self) -> Iterator[SecretFinding]:
        """Everything any test finds, in no particular order; each costs a budget unit."""
        for finding in itertools.chain(
            self.shaped(),
            self._url_passwords(),
            self._assignments(),
            self._comparisons(),
            self._unquoted_assignments(),
            self._command_line_passwords(),
            self._random_tokens(),
        ):
            self.budget.spend()
            yield finding

    def shaped(self) -> Iterator[SecretFinding]:
        """The fixed-shape credentials (vendor tokens and keys, PEM blocks, JWTs)."""
        for shape in _SHAPES:
            haystack = self.lower if shape.lower else self.text
            if not any(anchor in haystack for anchor in shape.anchors):
                continue
            if shape.kind is AWS_ACCESS_KEY and shape.lower:
                yield from self._aws_secret_keys(shape)
            elif shape.skip is not None:
                yield from self._anchored(shape)
            else:
                for match in shape.pattern.finditer(self.text):
                    yield from self._judged(shape.kind, match)
        yield from self._private_keys()

    def _judged(self, kind: Kind, match: re.Match[str]) -> Iterator[SecretFinding]:
        # Each pattern's whole match: some of detect-secrets' patterns capture only a token's prefix
        # (`(ghp|gho|...)_...` yields `ghp`), so the match is the span that surely holds the credential.
        if kind is JWT:
            self.budget.spend()  # decoding its parts is Python work
            if JwtTokenDetector.is_formally_valid(match.group()):
                # The pattern stops before the signature, which is secret too.
                yield _finding(kind, match.start(), _JWT_TAIL.match(self.text, match.end()).end())  # type: ignore[union-attr]
        else:
            yield _finding(kind, match.start(), match.end())

    def _anchored(self, shape: _Shape) -> Iterator[SecretFinding]:
        """`shape` tried where its `start` occurs; past a failed try, the run it could not match."""
        assert shape.skip is not None  # noqa: S101 - only called for shapes with a skip
        text, position = self.text, 0
        while (position := text.find(shape.start, position)) != -1:
            self.budget.spend()
            match = shape.pattern.match(text, position)
            if match is not None:
                yield from self._judged(shape.kind, match)
                position = match.end()
            else:
                position = max(shape.skip.match(text, position).end(), position + 1)  # type: ignore[union-attr]

    def _aws_secret_keys(self, shape: _Shape) -> Iterator[SecretFinding]:
        """detect-secrets' `aws ... key ... "<40 characters>"`, run only on the stretch before each such value."""
        after = 0
        for value in _AWS_SECRET_VALUE.finditer(self.text):
            self.budget.spend()
            start = max(after, value.start() - _AWS_SECRET_REACH)
            match = shape.pattern.search(self.text, start, value.end())
            if match is not None and match.end() == value.end():
                yield _finding(shape.kind, match.start(), match.end())
                after = match.end()

    def _private_keys(self) -> Iterator[SecretFinding]:
        """Each whole PEM block from its header through its END line (or to the end of the text).

        A `BEGIN ... PRIVATE KEY` without its dashes is prose about keys, not a key.
        """
        if "-----" not in self.text:
            return
        covered, end = 0, None
        for header in _PEM_HEADER.finditer(self.lower):
            if header.start() < covered:
                continue  # inside the block found before
            self.budget.spend()
            if end is None or end.start() < header.end():
                # Searched again only past the END line found before, so the text is read once.
                end = _PEM_END.search(self.lower, header.end())
            covered = end.end() if end is not None else len(self.text)
            yield _finding(PRIVATE_KEY, header.start(), covered)
            if end is None:
                return

    def _url_passwords(self) -> Iterator[SecretFinding]:
        text = self.text
        if "@" not in text:
            return
        if "://" in text:
            for match in _URL_PASSWORD.finditer(text):
                self.budget.spend()
                if _has_scheme(text, match.start()) and not _PLACEHOLDER.fullmatch(match.group(1)):
                    yield _finding(URL_PASSWORD, match.start(1), match.end(1))
        if ":" in text:
            for match in _BARE_URL_PASSWORD.finditer(text):
                self.budget.spend()
                password = match.group(1)
                if _UNQUOTED_PASSWORD_LIKE.match(password) and not _is_placeholder(password):
                    yield _finding(URL_PASSWORD, match.start(1), match.end(1))

    def _assignments(self) -> Iterator[SecretFinding]:
        """Quoted values assigned to secret-sounding names (`DB_PASSWORD="..."`), by detect-secrets' keyword plugin."""
        if not _QUOTE.search(self.text):
            return
        size = len(self.text)
        backwards = self.lower[::-1]
        for site in _ASSIGNMENT_BACKWARDS.finditer(backwards):
            self.budget.spend()
            # Forward: the name's deny-list word starts at `size - site.end()`; the value's closing quote (and a
            # `;` after it) ends at `size - site.start()`.
            yield from self._keyword_values(size - site.end(), size - site.start())

    def _comparisons(self) -> Iterator[SecretFinding]:
        """`"value" == password`: detect-secrets' comparison pattern, from each quoted value compared with a name."""
        if "=" not in self.text or not _QUOTE.search(self.text):
            return
        for site in _COMPARISON.finditer(self.lower):
            self.budget.spend()
            yield from self._keyword_values(site.start(), site.end())

    def _keyword_values(self, start: int, end: int) -> Iterator[SecretFinding]:
        """What detect-secrets' quoted-assignment patterns take from the text at `start` (anchored, up to `end`)."""
        text = self.text
        for pattern, group in _KEYWORD_PATTERNS:
            match = pattern.match(text, start, end)
            if match is None:
                continue
            value = match.group(group)
            if _PASSWORD_LIKE.match(value) and not _PLACEHOLDER.fullmatch(value):
                yield _finding(PASSWORD_ASSIGNMENT, match.start(group), match.end(group))
            return

    def _unquoted_assignments(self) -> Iterator[SecretFinding]:
        """Unquoted values after a secret-named NAME (env files, YAML, `--password=`)."""
        text, lower = self.text, self.lower
        judged = 0  # a value is judged once, after the first name it follows (`pwd=pwd=pwd=...` is one value)
        for site in _UNQUOTED_SITE.finditer(lower):
            if site.start() < judged:
                continue
            self.budget.spend()
            if (
                site.start()
                and lower[site.start() - 1] in _NAME_CHARACTERS
                and site.group().rstrip("'\" \t=:") in _SECRET_NAME_WORDS
            ):
                continue  # `pass` and `pwd` count as a whole word only (`DB_PASS`, not `bypass`)
            value = _UNQUOTED_VALUE.match(text, site.end())
            if value is None:
                continue
            judged = value.end()
            word = value.group().rstrip(_TRAILING)
            if _UNQUOTED_PASSWORD_LIKE.match(word) and not _is_placeholder(word):
                yield _finding(PASSWORD_ASSIGNMENT, value.start(), value.start() + len(word))

    def _command_line_passwords(self) -> Iterator[SecretFinding]:
        """A password glued to `-p` after `mysql` and its kin."""
        if "mysql" not in self.lower and "mariadb" not in self.lower:
            return  # the pattern tries each program name at every character: skip it where none is
        lower = self.lower
        # Where each program's name ends, once: each `-p` then asks for the last one before it.
        ends = [program.end() for program in _PROGRAM.finditer(lower)]
        for match in _COMMAND_LINE_PASSWORD.finditer(self.text):
            self.budget.spend()
            before = bisect.bisect_right(ends, match.start()) - 1
            if (
                before < 0
                or ends[before] < match.start() - _PROGRAM_REACH
                or "\n" in lower[ends[before] : match.start()]
            ):
                continue
            group = next(n for n in (1, 2, 3) if match.group(n) is not None)
            # Unquoted, it is one shell word: prose punctuation after it is not part of it.
            password = match.group(group) if group != 3 else match.group(group).rstrip(_TRAILING)
            if password and not _is_placeholder(password):
                yield _finding(COMMAND_LINE_PASSWORD, match.start(group), match.start(group) + len(password))

    def _random_tokens(self) -> Iterator[SecretFinding]:
        for match in _TOKEN.finditer(self.text):
            self.budget.spend()
            if looks_random(match.group()):
                yield _finding(HIGH_ENTROPY_STRING, match.start(), match.end())


_SHAPES: tuple[_Shape, ...] = (*_plugin_shapes(), *_PREFIXED)


def _has_scheme(text: str, colon: int) -> bool:
    """Whether a URL scheme (`postgres`, `git+ssh`) ends at `colon`: a letter, then letters, digits and `+.-`."""
    start = colon
    while start > max(colon - 32, 0) and text[start - 1] in _SCHEME_CHARACTERS:
        start -= 1
    return any(c.isalpha() for c in text[start:colon])


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.fullmatch(value) or _UNQUOTED_PLACEHOLDER.fullmatch(value))


def looks_random(token: str) -> bool:
    """Whether a bare base64-alphabet token reads as a key rather than a word, an identifier or a path.

    Tuned on LoCoMo's turns, the docs and harness/secret_cases.py (ADR 0024): it flags about 85 % of random
    20-character alphanumeric strings, 96 % at 32 and 99 % at 40, and none of those ordinary texts.
    """
    # Character tests in C (`map`): a folded text can be one token of thousands of letters (letters between
    # zero-width spaces), and a generator step per character cost such a save 20 ms.
    digits = sum(map(str.isdigit, token))
    if digits < (2 if len(token) < SHORT_TOKEN else 1):
        return False
    if not (any(map(str.isupper, token)) and any(map(str.islower, token))) or is_sequential_string(token):
        return False
    changes = (len(_CLASS_RUNS.findall(token)) - 1) / (len(token) - 1)
    if changes < MIN_CLASS_CHANGES:
        return False
    threshold = min(ENTROPY_SHARE * math.log2(len(token)), ENTROPY_CEILING)
    return shannon_entropy(token) >= threshold


def shannon_entropy(token: str) -> float:
    """detect-secrets' Shannon entropy of a base64-alphabet token (`Base64HighEntropyString`), in bits per character.

    The same sum, over the characters the token holds rather than over all 65 of the alphabet: a fifth of the cost,
    which the budget's unit per token assumes (a test pins the equality).
    """
    size = len(token)
    return -sum(count / size * math.log2(count / size) for count in Counter(token).values())


def _finding(kind: Kind, start: int, end: int) -> SecretFinding:
    return SecretFinding(kind=kind.name, label=kind.label, start=start, end=end)


#: Every kind the screen can report, by name: for docs, metrics and tests.
KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        *(kind for kind, _ in _PLUGINS),
        *(shape.kind for shape in _PREFIXED),
        URL_PASSWORD,
        PASSWORD_ASSIGNMENT,
        COMMAND_LINE_PASSWORD,
        HIGH_ENTROPY_STRING,
        AWS_SECRET_KEY,
    )
}

#: For the benchmark and the tests: each whole-text step of the screen by name, to time one at a time.
STEPS: dict[str, Callable[[_Reading], Iterator[SecretFinding]]] = {
    "shapes": _Reading.shaped,
    "url passwords": _Reading._url_passwords,
    "quoted assignments": _Reading._assignments,
    "comparisons": _Reading._comparisons,
    "unquoted assignments": _Reading._unquoted_assignments,
    "command lines": _Reading._command_line_passwords,
    "random tokens": _Reading._random_tokens,
}
