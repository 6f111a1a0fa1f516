"""The `memorybank` commands, one module per command or family, each declaring its options (`register`)
beside what it runs:

- `serve` (its flags, OAuth's too, declared in `memorybank.settings`), `mcp` (and `prompt`), `migrate`
- `import_export`: `import`, `export`; `secrets`: `secrets scan` and the secret screen's options
- `reindex`; `keys`: `encrypt`, `keys create|add|remove|rotate`
- `panel_link`: `panel-link`; `controls`: `gate`, `quota`; `tokens`: `token`; `purge`; `completion`

`base` holds what they share (`CommandError`, the parser, `--db`/`--key-file`); `memorybank.cli` assembles
them and runs one. A module imports the server stack only inside what it runs, so `--help` stays light.
"""
