"""adapters_secrets: the core's `SecretScreen` port on Yelp's detect-secrets (docs/adr/0024-save-path-secret-screen.md).

`DetectSecretsScreen` finds credentials in a memory's text in-process: detect-secrets' vetted
patterns for cloud keys, tokens, private keys, JWTs and passwords in URLs, plus a tuned entropy test
for bare random-looking strings. Imports the core and detect-secrets only.
"""

from adapters_secrets.screen import KINDS, DetectSecretsScreen

__all__ = ["KINDS", "DetectSecretsScreen"]
