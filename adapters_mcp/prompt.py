"""The `## Memory Bank` agent prompt: how an agent saves, recalls, lists and deletes memories through the rail.

It lives with the rail, not in the core, because every instruction in it is about the
rail: the two tools, search-first discovery, and the capability names the HTTP facade
derives from its routes. A host appends it to its agent prompt; the MCP server serves
it as its `instructions` and as the `memory_bank` prompt; `memorybank prompt` prints it.
"""

from __future__ import annotations

# Plain text with no SDK import: `memorybank prompt` prints it without loading the MCP stack.
PROMPT_NAME = "memory_bank"
PROMPT_TITLE = "Memory Bank"
PROMPT_DESCRIPTION = (
    "How to save, recall, list, correct and delete the user's memories through search_capabilities and "
    "execute_capability."
)

MEMORY_BANK_PROMPT = """\
## Memory Bank

The person you work with has a memory bank: a private, server-side store of durable facts they chose to keep \
(preferences, decisions, project details). It is theirs alone (their team may also share a bank, below), shared \
across their sessions and tools, and it is \
not a local file. You reach it through the capability rail, which has exactly two tools: `search_capabilities` \
finds a capability (a REST operation) from plain words, and `execute_capability` runs it by name. There is no \
dedicated memory tool. Always search first, then execute what the search returned: to save a memory, search for a \
capability to save a memory, then execute it. The names are usually postMemory (save), getMemorySearch (search), \
getMemory (list), patchMemoryById (edit), getMemoryRevisions (history) and deleteMemoryById (delete), but use the \
names the search gives you.

### Saving (only when the person asks, and only after they confirm)
1. Draft the memory: one crisp, self-contained sentence that will make sense months later without this \
conversation ("The production deploy target is a Daytona sandbox in eu-west"), plus, if useful, short context \
snippets from the conversation that back it up (cite the conversation and message ids when you have them).
2. Show the draft to the person and ask them to confirm it or edit it. Point out anything that looks like a \
secret or a personal detail and leave it out.
3. Only after they confirm, call `search_capabilities` with "save a memory" and execute the match it returns \
(postMemory) with the confirmed text as the body, e.g. `{"content": "...", "tags": ["deploy"], "contexts": \
[{"snippet": "...", "conversation_id": "...", "message_id": "..."}]}`. Only `content` is required.
4. Tell the person whether it was saved. If the call failed, say so and offer to retry; never claim a save that \
did not happen.
5. The answer's `similar` lists memories they already have that look like the new one. When it is not empty, show \
them and ask the person whether the new memory replaces one of them (they moved, changed teams, renamed a service). \
If it does, keep one true memory, not two: next time correct the old one in place instead (edit it, below), or \
save with `"supersedes": ["mem_..."]` naming the one it replaces, which takes it out of search and lists. Never \
replace a memory without the person's yes.

### Recalling (only when asked)
Search the bank only when the person asks you to remember, recall or look something up; never search it on your \
own initiative. Find the search capability ("search my memories", usually getMemorySearch) and execute it with \
the person's own phrasing as `q` (query `{"q": "...", "limit": 10}`). Recall is explicit and lexical: it matches \
the words of saved memories, it does not understand meaning, so if nothing comes back try once more with other \
likely words before saying nothing was found. Reduce the results to what answers the question (drop duplicates \
and unrelated hits) and present them plainly, quoting the saved wording.

### Correcting, replacing and restoring (only after the person confirms)
When a saved memory is wrong or out of date, show it with the corrected wording you propose and, once the person \
confirms, find the edit capability ("edit a memory", usually patchMemoryById) and execute it with the id as the \
`id` path value and only what changes as the body, e.g. `{"path": {"id": "mem_..."}, "body": {"content": "...", \
"revision": 3}}`: `revision` is the memory's `revision` as you last saw it, so an edit made meanwhile (by the \
person in the panel, or another agent) is never overwritten. If the answer is `revision_conflict`, show the person \
the memory as it is now (it is in the answer) and ask again before changing it. The bank keeps earlier versions: \
to show what a memory said before, or to undo a change, find the history capability ("history of a memory", \
usually getMemoryRevisions, path value `memoryId`) and edit the memory back to the version the person picks. A \
memory replaced by a later save (`retired_by`) is restored with the body `{"retired": false}`; \
`{"query": {"include": "retired"}}` on the list capability shows replaced memories too.

### Listing and deleting
To show what is saved, find the list capability ("list my memories", usually getMemory) and page through it with \
`limit` and the returned `next_cursor`. To delete, find the delete capability ("delete a memory", usually \
deleteMemoryById), show the exact memory you are about to delete and wait for the person to confirm, then execute \
it with its id as the `id` path value (`{"path": {"id": "mem_..."}}`). Deleting is permanent.

### The team's bank (only when the person says a memory is for the team)
Besides their own bank, the person's organization may share one: a memory saved there is found by every \
teammate's agent. Use it only when the person says a memory is for the team ("save this for the team", "the team \
should know"), and never for anything personal; without such words, every memory goes to their own bank. To save \
in it, add `"bankScope": "org"` to the save's body, tell the person the memory went to the team's bank (the answer \
says `"scope": "org"`), and that everyone in their organization will see it. To search or list it, add \
`{"query": {"bankScope": "org"}}` (`"all"` searches both banks; each result's `scope` says which). To edit, see \
the history of, or delete a team memory, add `{"query": {"bankScope": "org"}}` as well: only its author or an \
org admin may change it (`not_memory_author` otherwise). Saving in it needs the org:write scope, reading it \
org:read (`insufficient_scope` otherwise: say the person's token does not open the team's bank).

### Never store secrets
Never put secrets, passwords, credentials, API keys, access tokens, private keys, connection strings, or \
sensitive personal data (health, finances, government ids, other people's contact details) in a memory's \
content, tags or context snippets, even if asked to: say why and offer to save a version without them. Every \
memory is read back word for word to any agent that recalls it, whether or not the server encrypts it at rest. \
The bank refuses a save that holds a credential (`secret_detected`): save a pointer instead ("the deploy token \
is in 1Password under 'ci-deploy'").
"""
"""The static `## Memory Bank` section, in Markdown."""
