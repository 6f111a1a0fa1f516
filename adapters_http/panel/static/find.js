// Finding memories: what is being looked for (kept in the URL, so back, forward and reload keep it), and
// the matched words, marked in a memory's text.

/** What the address bar asks for: `?q=words&tag=name` (either may be absent). */
export function readFind(location = window.location) {
  const query = new URLSearchParams(location.search);
  return { q: (query.get("q") ?? "").trim(), tag: (query.get("tag") ?? "").trim() };
}

/** Put `find` in the address bar as a new history entry (back returns to the previous one). */
export function writeFind(find, { replace = false } = {}) {
  const query = new URLSearchParams();
  if (find.q) query.set("q", find.q);
  if (find.tag) query.set("tag", find.tag);
  const url = `${location.pathname}${query.size ? `?${query}` : ""}`;
  if (url === location.pathname + location.search) return;
  history[replace ? "replaceState" : "pushState"](null, "", url);
}

export const isFinding = (find) => Boolean(find.q || find.tag);

const WORD = /[\p{L}\p{N}]+/gu;

/**
 * `text` as nodes with each word that starts with a query word in a <mark>: the words that matched.
 * Text goes in as text nodes only (never parsed as HTML).
 */
export function markMatches(text, q) {
  const words = [...new Set((q.match(WORD) ?? []).map((w) => w.toLowerCase()))];
  if (!words.length) return [document.createTextNode(text)];
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${escaped.join("|")})[\\p{L}\\p{N}]*`, "giu");
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    const mark = document.createElement("mark");
    mark.textContent = match[0];
    nodes.push(mark);
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}
