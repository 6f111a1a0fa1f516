// Building elements. Text always goes in through textContent: nothing from the server is ever parsed as HTML.

/** The page's element with this id. */
export const $ = (id) => document.getElementById(id);

/**
 * h("p", {className: "x", "aria-label": "y"}, "text", child) -> <p class="x" aria-label="y">text<child/></p>
 * Attribute values are set with setAttribute (never an event handler: no "on..." attributes).
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) throw new Error(`no inline handlers: ${name}`);
    if (name === "className") element.className = value;
    else if (name === "text") element.textContent = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

/** An inline SVG icon from a list of path data (the markup is ours; no server data goes in). */
export function icon(paths, className = "icon") {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", className);
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  for (const d of paths) {
    const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
  return svg;
}

export const ICONS = {
  trash: ["M4 7h16", "M9.5 7V5.5A1.5 1.5 0 0 1 11 4h2a1.5 1.5 0 0 1 1.5 1.5V7", "M6.5 7l.8 11.2A2 2 0 0 0 9.3 20h5.4a2 2 0 0 0 2-1.8L17.5 7", "M10.5 11v5.5M13.5 11v5.5"],
  check: ["M5 12.5l4.5 4.5L19 7.5"],
  alert: ["M12 8v5", "M12 16.5v.01", "M10.3 4.3L2.8 17.5A2 2 0 0 0 4.5 20.5h15a2 2 0 0 0 1.7-3L13.7 4.3a2 2 0 0 0-3.4 0z"],
  undo: ["M9 14L4 9l5-5", "M4 9h10.5a5.5 5.5 0 0 1 0 11H11"],
};
