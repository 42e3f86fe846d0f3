// memdir's web page: plain JavaScript, no build step, no dependency.
//
// Security rules (memory content is untrusted: a model wrote it, maybe from a hostile web page):
// - Every element is made by h() below: text enters as text nodes, attributes through setAttribute, links only
//   to this page's own routes. No HTML string is ever parsed; the Content-Security-Policy's Trusted Types make
//   innerHTML and its kin throw, so a slip would fail loudly instead of running someone's markup.
// - The token lives in sessionStorage (this tab only, gone when it closes) and travels only in the
//   Authorization header of requests to this origin: never in a URL, a cookie or a form post.
// - Routes live in the URL's fragment (#/file?p=...), which browsers never send to a server. Anyone can make a
//   link with any fragment, so a path taken from it is checked like every other path (memoryPath) before any
//   request: "/../../v1/review/4" would otherwise become a request to /v1/review/4 with this tab's token.
"use strict";

(() => {
  const TOKEN_KEY = "memdir.token";
  // `memdir serve --claude-code`: the directories and their tokens, kept like the token (this tab only).
  const CLAUDE_KEY = "memdir.claude-code";
  const HUB = "claude-code";
  const SOURCE = "web page";
  const state = {
    namespace: "",
    tree: null,
    expanded: new Set(["/memories"]),
    file: null, // the FileView shown, when a file is open
    dirty: false, // an edit with unsaved changes
    lastHash: "",
    blobUrl: null,
    renders: 0, // counts renders: a view that finishes loading after the address moved on is not shown
  };
  const $ = (id) => document.getElementById(id);

  // -- making elements -------------------------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) {
        if (typeof value !== "function") throw new TypeError("event handlers must be functions");
        el.addEventListener(key.slice(2), value);
      } else if (key === "class") {
        el.className = value;
      } else if (key === "href") {
        el.setAttribute("href", safeHref(value));
      } else {
        el.setAttribute(key, value === true ? "" : String(value));
      }
    }
    add(el, children);
    return el;
  }

  function add(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(visible(String(child))));
    }
    return el;
  }

  // Bidirectional controls reorder a line as shown ("Trojan Source"): a held write could read one way to the
  // reviewer and be stored another. Memory holds what a model wrote, so every text the page shows names them
  // instead (the editor keeps the text as it is).
  const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function visible(text) {
    return text.replace(BIDI, (c) => "\u27e8U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9");
  }

  // Links go to this page's routes only: never javascript:, never another site.
  function safeHref(value) {
    const text = String(value);
    if (!text.startsWith("#/")) throw new TypeError("links must be routes of this page");
    return text;
  }

  function route(view, params) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
    }
    const text = query.toString();
    return "#/" + view + (text ? "?" + text : "");
  }

  // -- formatting ------------------------------------------------------------------------------------------------

  function bytes(n) {
    if (n < 1024) return n + " B";
    const units = ["kB", "MB", "GB"];
    let value = n / 1024;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return value.toFixed(value < 10 ? 1 : 0) + " " + units[unit];
  }

  const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

  function ago(seconds) {
    const diff = seconds - Date.now() / 1000;
    const steps = [[60, "second"], [60, "minute"], [24, "hour"], [30, "day"], [12, "month"], [Infinity, "year"]];
    let value = diff;
    for (const [size, unit] of steps) {
      if (Math.abs(value) < size) return relative.format(Math.round(value), unit);
      value /= size;
    }
    return "";
  }

  function iso(seconds) {
    return new Date(seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  }

  // The API's times are ISO 8601 in UTC ("2026-11-29T14:38:01.5Z"); a server before memdir 0.2 sent seconds.
  function seconds(time) {
    return typeof time === "string" ? Date.parse(time) / 1000 : time;
  }

  function when(time) {
    if (time === null || time === undefined) return h("span", { class: "muted" }, "–");
    const at = seconds(time);
    return h("time", { datetime: iso(at), title: iso(at) }, ago(at));
  }

  function name(path) {
    return path.split("/").pop() || path;
  }

  function chip(text, kind) {
    return h("span", { class: "chip" + (kind ? " " + kind : "") }, text);
  }

  // -- talking to the API ----------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, detail) {
      super(message);
      this.status = status;
      this.code = code;
      this.detail = detail || {};
    }
  }

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  // The one place the page keeps anything: this tab's sessionStorage (the token; with --claude-code, the
  // directories' tokens too).
  function keep(key, value) {
    sessionStorage.setItem(key, value);
  }

  // A memory path as the memory tool's rules see it (memdir.paths), as far as a URL is concerned: /memories or
  // below it, no empty, "." or ".." segment, no hidden name, no control character. The server checks every path
  // again with all its rules (look-alikes, encodings, lengths); this check is what keeps a request on its endpoint.
  class PathRefused extends Error {}

  function memoryPath(raw) {
    const path = String(raw ?? "");
    const shown = path.length > 200 ? path.slice(0, 200) + "…" : path;
    const parts = path.split("/");
    if (parts[0] !== "" || parts[1] !== "memories") throw new PathRefused("Path must start with /memories, got: " + shown);
    const rest = path.endsWith("/") ? parts.slice(2, -1) : parts.slice(2);
    if (rest.some((part) => part === ".." || part === ".")) throw new PathRefused("Path " + shown + " would escape /memories directory");
    if (rest.some((part) => part === "")) throw new PathRefused("Path " + shown + " is not allowed: it has an empty segment");
    if (rest.some((part) => part.startsWith("."))) throw new PathRefused("Path " + shown + " is not allowed: names starting with '.' are hidden and reserved");
    if (/[\u0000-\u001f\u007f]/.test(path)) throw new PathRefused("Path " + shown + " is not allowed: it holds a control character");
    return path;
  }

  // "/memories/a b.md" -> "/memories/a%20b.md": each segment encoded on its own, as the API expects.
  function apiPath(path) {
    return memoryPath(path).split("/").map(encodeURIComponent).join("/");
  }

  async function api(method, url, options = {}) {
    const headers = { Authorization: "Bearer " + (options.token || token()), ...(options.headers || {}) };
    const init = { method, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (options.json !== undefined) {
      init.body = JSON.stringify(options.json);
      headers["Content-Type"] = "application/json";
    }
    const response = await fetch(url, init);
    if (!response.ok) throw await errorOf(response, options.token === undefined);
    return options.raw ? response : response.json();
  }

  async function errorOf(response, signedIn) {
    let error = {};
    try {
      error = (await response.json()).error || {};
    } catch {
      // not JSON: keep the status alone
    }
    const failure = new ApiError(response.status, error.code || "http_error", error.message || response.statusText, error);
    if (response.status === 401 && signedIn) signOut("This token is no longer accepted (revoked or unknown). Sign in again.");
    return failure;
  }

  const writeHeaders = { "X-Memdir-Source": encodeURIComponent(SOURCE) };

  // -- signing in ------------------------------------------------------------------------------------------------

  async function signIn(event) {
    event.preventDefault();
    const input = $("token");
    const given = input.value.trim();
    $("signin-error").textContent = "";
    if (!given) {
      $("signin-error").textContent = "Paste a token first.";
      input.focus();
      return;
    }
    try {
      let who = await api("GET", "/v1/whoami", { token: given });
      if (who.namespace === HUB) who = await claudeSignIn(given);
      else keep(TOKEN_KEY, given);
      input.value = "";
      start(who);
    } catch (error) {
      $("signin-error").textContent =
        error.status === 401 ? "That token was not accepted: it is unknown, revoked or mistyped." : message(error);
      input.select();
    }
  }

  function signOut(reason) {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(CLAUDE_KEY);
    state.tree = null;
    state.file = null;
    state.dirty = false;
    $("app").hidden = true;
    $("signin").hidden = false;
    $("tree").replaceChildren();
    $("main").replaceChildren();
    $("signin-error").textContent = reason || "";
    $("token").focus();
  }

  function start(who) {
    state.namespace = who.namespace;
    $("namespace").textContent = who.namespace;
    $("namespace").title = "Namespace " + who.namespace + " (token " + who.token_id + ")";
    showPicker();
    $("signin").hidden = true;
    $("app").hidden = false;
    render();
  }

  async function resume() {
    if (!token()) return signOut();
    try {
      start(await api("GET", "/v1/whoami"));
    } catch (error) {
      if (error.status !== 401) signOut(message(error));
    }
  }

  function message(error) {
    if (error instanceof PathRefused) return error.message + ". Nothing was requested.";
    if (error instanceof ApiError) {
      if (error.code === "rate_limited") return "Too many requests: wait a moment and try again.";
      return error.message;
    }
    return "The server could not be reached: " + error.message;
  }

  // -- status and dialogs ----------------------------------------------------------------------------------------

  let toastTimer = 0;

  function toast(text) {
    const el = $("status");
    el.textContent = text;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => (el.textContent = ""), 4000);
  }

  function confirmDialog(title, text, okLabel, extra) {
    const dialog = $("confirm");
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    $("confirm-ok").textContent = okLabel;
    $("confirm-extra").replaceChildren(...(extra ? [extra] : []));
    dialog.returnValue = "";
    dialog.showModal();
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    });
  }

  function failure(error, what) {
    return h("div", { class: "notice bad", role: "alert" }, h("strong", {}, what + ": "), message(error));
  }

  // -- the tree --------------------------------------------------------------------------------------------------

  async function refreshTree() {
    try {
      state.tree = await api("GET", "/v1/tree/memories");
    } catch (error) {
      $("tree").replaceChildren(h("li", { class: "empty" }, message(error)));
      return;
    }
    const total = state.tree.total;
    $("usage").textContent = total.files + (total.files === 1 ? " file" : " files") + " · " + bytes(total.bytes);
    drawTree();
  }

  // Nested nodes from the flat lists: {name, path, dir, children, file}.
  function treeNodes(listing) {
    const root = { path: "/memories", dir: true, children: new Map() };
    const nodes = new Map([["/memories", root]]);
    const ensure = (path) => {
      if (nodes.has(path)) return nodes.get(path);
      const parent = ensure(path.slice(0, path.lastIndexOf("/")));
      const node = { name: name(path), path, dir: true, children: new Map(), info: null };
      parent.children.set(node.name, node);
      nodes.set(path, node);
      return node;
    };
    for (const dir of listing.dirs) ensure(dir.path).info = dir;
    for (const file of listing.files) {
      const parent = ensure(file.path.slice(0, file.path.lastIndexOf("/")));
      parent.children.set(name(file.path), { name: name(file.path), path: file.path, dir: false, file });
    }
    return root;
  }

  function drawTree() {
    if (!state.tree) return;
    const focused = document.activeElement && document.activeElement.closest('#tree [role="treeitem"]');
    const root = treeNodes(state.tree);
    const items = ordered(root).map((node) => treeItem(node, 1));
    if (!items.length) items.push(h("li", { class: "empty", role: "none" }, "No memory yet. Create a file to start."));
    $("tree").replaceChildren(...items);
    const again = focused && $("tree").querySelector(`[data-path="${CSS.escape(focused.dataset.path)}"]`);
    const selected = $("tree").querySelector('[aria-selected="true"]');
    const first = again || selected || $("tree").querySelector('[role="treeitem"]');
    if (first) first.tabIndex = 0;
    if (again) again.focus();
  }

  // Folders first, then files, each by name.
  function ordered(node) {
    return [...node.children.values()].sort((a, b) => (a.dir === b.dir ? a.name.localeCompare(b.name) : a.dir ? -1 : 1));
  }

  function treeItem(node, level) {
    const open = state.current === node.path;
    if (!node.dir) {
      const meta = "v" + node.file.version + " · " + bytes(node.file.size);
      return h("li", {
        role: "treeitem", class: "file", tabindex: "-1", "aria-level": level, "aria-selected": String(open),
        "aria-label": node.name + ", version " + node.file.version + ", " + bytes(node.file.size), "data-path": node.path,
      }, h("a", { class: "row", href: route("file", { p: node.path }), tabindex: "-1" },
        h("span", { class: "chev", "aria-hidden": "true" }, "›"), h("span", { class: "name" }, node.name),
        h("span", { class: "meta" }, meta)));
    }
    const expanded = state.expanded.has(node.path);
    const children = ordered(node);
    const files = node.info ? node.info.files : 0;
    return h("li", {
      role: "treeitem", class: "dir", tabindex: "-1", "aria-level": level, "aria-expanded": String(expanded),
      "aria-label": node.name + ", folder, " + files + (files === 1 ? " file" : " files"), "data-path": node.path,
    }, h("div", { class: "row", onclick: () => toggle(node.path) },
      h("span", { class: "chev", "aria-hidden": "true" }, "›"), h("span", { class: "name" }, node.name),
      h("span", { class: "meta" }, node.info ? bytes(node.info.size) : "")),
    h("ul", { role: "group" }, children.map((child) => treeItem(child, level + 1))));
  }

  // Selection and open folders follow the route without rebuilding the tree (which would lose the focus).
  function syncTree() {
    for (const item of $("tree").querySelectorAll('[role="treeitem"]')) {
      if (item.classList.contains("file")) item.setAttribute("aria-selected", String(item.dataset.path === state.current));
      else item.setAttribute("aria-expanded", String(state.expanded.has(item.dataset.path)));
    }
  }

  function focusTree() {
    if ($("sidebar").offsetParent === null) {
      location.hash = route("files");
      return;
    }
    const item = $("tree").querySelector('[aria-selected="true"]') || $("tree").querySelector('[role="treeitem"]');
    if (item) focusTreeItem(item);
  }

  function toggle(path, open) {
    const expand = open === undefined ? !state.expanded.has(path) : open;
    if (expand) state.expanded.add(path);
    else state.expanded.delete(path);
    const item = $("tree").querySelector(`[data-path="${CSS.escape(path)}"]`);
    if (item) item.setAttribute("aria-expanded", String(expand));
  }

  function revealInTree(path) {
    let parent = path.slice(0, path.lastIndexOf("/"));
    while (parent.length > "/memories".length) {
      state.expanded.add(parent);
      parent = parent.slice(0, parent.lastIndexOf("/"));
    }
  }

  // The ARIA tree pattern: one tab stop; arrows move, open and close; Enter opens a file.
  function treeKeys(event) {
    const item = event.target.closest('[role="treeitem"]');
    if (!item) return;
    const visible = [...$("tree").querySelectorAll('[role="treeitem"]')].filter((el) => el.offsetParent !== null);
    const index = visible.indexOf(item);
    const isDir = item.classList.contains("dir");
    const expanded = item.getAttribute("aria-expanded") === "true";
    const moves = {
      ArrowDown: () => visible[index + 1],
      ArrowUp: () => visible[index - 1],
      Home: () => visible[0],
      End: () => visible[visible.length - 1],
      ArrowRight: () => (isDir && !expanded ? (toggle(item.dataset.path, true), item) : isDir ? item.querySelector('[role="treeitem"]') : null),
      ArrowLeft: () => (isDir && expanded ? (toggle(item.dataset.path, false), item) : item.parentElement.closest('[role="treeitem"]')),
      Enter: () => (isDir ? (toggle(item.dataset.path), item) : (location.hash = route("file", { p: item.dataset.path }), item)),
    };
    moves[" "] = moves.Enter;
    if (!moves[event.key]) return;
    event.preventDefault();
    const next = moves[event.key]();
    if (next) focusTreeItem(next);
  }

  function focusTreeItem(item) {
    for (const el of $("tree").querySelectorAll('[role="treeitem"][tabindex="0"]')) el.tabIndex = -1;
    item.tabIndex = 0;
    item.focus();
  }

  // -- routing ---------------------------------------------------------------------------------------------------

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "") || "files";
    const [view, query] = raw.split("?", 2);
    return { view, params: new URLSearchParams(query || "") };
  }

  const VIEWS = {
    files: showOverview,
    file: showFile,
    edit: showEditor,
    new: showNewFile,
    history: showHistory,
    search: showSearch,
    review: showReview,
    audit: showAudit,
    "claude-code": showClaudeCode,
  };

  async function render() {
    if ($("app").hidden) return;
    if (state.dirty && location.hash !== state.lastHash) {
      if (!window.confirm("Leave this edit? Your unsaved changes will be lost.")) {
        history.replaceState(null, "", state.lastHash);
        return;
      }
      state.dirty = false;
    }
    state.lastHash = location.hash;
    const ticket = ++state.renders;
    const { view, params } = parseHash();
    const show = VIEWS[view] || showOverview;
    document.body.dataset.view = VIEWS[view] ? view : "files";
    const section = { file: "files", edit: "files", new: "files", history: "files" }[view] || view;
    for (const link of document.querySelectorAll("[data-nav]")) {
      if (link.dataset.nav === section) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (params.get("ns") && params.get("ns") !== state.namespace && !(await switchTo(params.get("ns")))) return;
    if (ticket !== state.renders) return; // the address changed while switching namespace: that render shows it
    const refused = pathRefusal(params);
    state.current = refused ? null : params.get("p");
    if (state.current) revealInTree(state.current);
    dropBlob();
    syncTree();
    refreshTree(); // other writers (the model, another tab) change files and the queue too
    refreshPending();
    if (view !== "search") $("search").value = ""; // the box shows the query of the search on screen, or nothing
    const main = $("main");
    try {
      if (refused) throw refused;
      const shown = await show(params);
      if (ticket !== state.renders) return; // a later address is shown (or loading) already: this one is stale
      main.replaceChildren();
      add(main, [shown]);
    } catch (error) {
      if (ticket !== state.renders) return;
      main.replaceChildren(h("h1", { tabindex: "-1" }, "Something went wrong"), failure(error, "Could not load this"));
    }
    const heading = main.querySelector("h1");
    document.title = (heading ? heading.textContent + " · " : "") + "memdir";
    // The new page's heading takes the focus (where a screen reader starts reading), unless the person is
    // working in the tree or the search box: then the focus stays with them, even if they moved it meanwhile.
    const keep = document.activeElement && document.activeElement.closest("#sidebar, #search-form, dialog");
    if (!keep && heading) heading.focus({ preventScroll: false });
  }

  // The paths a route names (p, and dir for a new file), checked before the view asks the server anything.
  function pathRefusal(params) {
    for (const key of ["p", "dir"]) {
      if (!params.has(key)) continue;
      try {
        memoryPath(params.get(key));
      } catch (error) {
        if (error instanceof PathRefused) return error;
        throw error;
      }
    }
    return null;
  }

  function heading(text, crumbs, actions) {
    return h("div", { class: "pagehead" },
      h("div", {}, crumbs ? h("div", { class: "crumbs" }, crumbs) : null, h("h1", { tabindex: "-1" }, text)),
      actions ? h("div", { class: "actions" }, actions) : null);
  }

  function dropBlob() {
    if (state.blobUrl) URL.revokeObjectURL(state.blobUrl);
    state.blobUrl = null;
  }

  // -- overview --------------------------------------------------------------------------------------------------

  async function showOverview() {
    const [usage, review] = await Promise.all([api("GET", "/v1/usage"), api("GET", "/v1/review?limit=1")]);
    const stat = (label, value, href) =>
      h(href ? "a" : "div", { class: "card stat", href }, h("div", { class: "value" }, value), h("div", { class: "muted" }, label));
    return h("div", { class: "overview" },
      heading("Memory of " + state.namespace),
      h("p", { class: "muted" }, "Pick a file in the tree to read it, edit it, or see its history."),
      h("div", { class: "stats" },
        stat("files", usage.files), stat("stored", bytes(usage.bytes)),
        stat("writes waiting for review", review.pending, route("review"))),
      h("p", { class: "muted small" }, "Press ", h("kbd", {}, "?"), " for keyboard shortcuts."));
  }

  // -- a file ----------------------------------------------------------------------------------------------------

  async function showFile(params) {
    const path = params.get("p");
    const version = params.get("v");
    const url = "/v1/view" + apiPath(path) + (version ? "?version=" + encodeURIComponent(version) : "");
    let file;
    try {
      file = await api("GET", url, { headers: writeHeaders });
    } catch (error) {
      if (error.code !== "not_found") throw error;
      return [heading(name(path), path), h("p", {}, message(error) + " "),
        h("p", {}, h("a", { href: route("history", { p: path }) }, "See its history"), " (a deleted file keeps it).")];
    }
    state.file = file;
    const old = !file.current;
    const actions = [
      old ? h("button", { class: "primary", type: "button", onclick: () => restoreVersion(path, file.version) }, "Restore this version") : null,
      !old && file.text !== null ? h("a", { class: "button primary", href: route("edit", { p: path }), "aria-keyshortcuts": "e" }, "Edit") : null,
      h("a", { class: "button", href: route("history", { p: path }), "aria-keyshortcuts": "h" }, "History"),
    ];
    return [
      heading(name(path), path, actions),
      h("div", { class: "chips" },
        chip("version " + file.version, "accent"), old ? chip("an old version", "warn") : null,
        chip(bytes(file.size)), h("span", { class: "chip" }, "changed ", when(file.modified)),
        h("span", { class: "chip mono", title: "SHA-256 " + file.sha256 }, file.sha256.slice(0, 12))),
      old ? h("div", { class: "notice info" }, "You are looking at version " + file.version + ". ",
        h("a", { href: route("file", { p: path }) }, "See the current version"), " or ",
        h("a", { href: route("history", { p: path, from: file.version }) }, "compare it with the current one"), ".") : null,
      await fileBody(path, file),
    ];
  }

  async function fileBody(path, file) {
    if (RASTER.has(file.media_type)) return imageOf(path, file);
    if (file.text === null) return h("div", { class: "code" }, h("div", { class: "blank" }, "Binary content (" + bytes(file.size) + "): not shown."));
    if (file.text === "") return h("div", { class: "code" }, h("div", { class: "blank" }, "This file is empty."));
    const [first, last] = lineRange(parseHash().params.get("line"));
    const lines = file.text.replace(/\n$/, "").split("\n");
    const list = h("ol", { "aria-label": "Text of " + path },
      lines.map((line, i) => h("li", { class: i + 1 >= first && i + 1 <= last ? "hit" : null }, line)));
    if (first) requestAnimationFrame(() => list.children[first - 1]?.scrollIntoView({ block: "center" }));
    return h("div", { class: "code" }, list);
  }

  // The server names only raster images (never SVG, a document that could run script if opened on its own).
  const RASTER = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

  function lineRange(text) {
    const match = /^(\d+)(?:-(\d+))?$/.exec(text || "");
    return match ? [Number(match[1]), Number(match[2] || match[1])] : [0, -1];
  }

  async function imageOf(path, file) {
    const query = file.current ? "" : "?version=" + file.version;
    const response = await api("GET", "/v1/files" + apiPath(path) + query, { raw: true });
    const blob = new Blob([await response.arrayBuffer()], { type: file.media_type });
    state.blobUrl = URL.createObjectURL(blob);
    return h("img", { class: "image-view", src: state.blobUrl, alt: "Image " + path });
  }

  // -- editing ---------------------------------------------------------------------------------------------------

  async function showEditor(params) {
    const path = params.get("p");
    const file = await api("GET", "/v1/view" + apiPath(path), { headers: writeHeaders });
    if (file.text === null) return [heading(name(path), path), h("p", {}, "Only text files can be edited here.")];
    return editorView(path, file.text, file.version, "Editing version " + file.version);
  }

  function showNewFile(params) {
    const dir = params.get("dir") || "/memories";
    const pathInput = h("input", { id: "new-path", type: "text", value: dir.replace(/\/?$/, "/"), spellcheck: "false", autocomplete: "off" });
    const view = editorView(null, "", null, "A new file", pathInput);
    requestAnimationFrame(() => pathInput.focus());
    return view;
  }

  function editorView(path, text, version, subtitle, pathInput) {
    const area = h("textarea", { id: "editor", class: "editor", spellcheck: "false", "aria-describedby": "edit-help" });
    area.value = text;
    const alertBox = h("div", { id: "edit-alert" });
    const editing = { path, version, area, alertBox, pathInput };
    area.addEventListener("input", () => (state.dirty = area.value !== text));
    area.addEventListener("keydown", (event) => editorKeys(event, editing));
    const save = () => saveEdit(editing);
    const cancel = () => cancelEdit(editing);
    const actions = [
      h("button", { type: "button", class: "primary", id: "save", onclick: save, "aria-keyshortcuts": "Control+S" }, "Save"),
      h("button", { type: "button", onclick: cancel }, "Cancel"),
    ];
    if (!pathInput) requestAnimationFrame(() => area.focus());
    return [
      heading(path ? name(path) : "New file", path ? subtitle : null, actions),
      pathInput ? h("div", { class: "field" }, h("label", { for: "new-path" }, "Path"), pathInput) : null,
      alertBox,
      h("div", { class: "field" },
        h("label", { for: "editor" }, path ? "Content of " + path : "Content"),
        area,
        h("span", { id: "edit-help", class: "muted small" }, "Ctrl+S (⌘S) saves, Esc cancels. ",
          path ? "Saving makes a new version; the old one stays in the history." : "")),
    ];
  }

  function editorKeys(event, editing) {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
      event.preventDefault();
      saveEdit(editing);
    } else if (event.key === "Escape") {
      event.preventDefault();
      cancelEdit(editing);
    }
  }

  function cancelEdit(editing) {
    if (state.dirty && !window.confirm("Discard your changes?")) return;
    state.dirty = false;
    location.hash = editing.path ? route("file", { p: editing.path }) : route("files");
  }

  async function saveEdit(editing, overwrite) {
    const path = editing.path || editing.pathInput.value.trim();
    const expected = overwrite !== undefined ? overwrite : editing.version;
    const button = $("save");
    button.disabled = true;
    editing.alertBox.replaceChildren();
    try {
      const written = await api("PUT", "/v1/edit" + apiPath(path), {
        json: { content: editing.area.value, expected_version: expected },
        headers: writeHeaders,
      });
      state.dirty = false;
      toast("Saved " + name(path) + " as version " + written.version + ".");
      location.hash = route("file", { p: written.path });
    } catch (error) {
      if (error.code === "conflict") refreshTree(); // the tree shows the version that is there now, not the one edited
      editing.alertBox.replaceChildren(editRefusal(error, editing, path));
      editing.alertBox.querySelector("button, a")?.focus();
    } finally {
      button.disabled = false;
    }
  }

  // A stale edit is refused by the server (412 conflict): nothing was saved; the text stays in the editor.
  function editRefusal(error, editing, path) {
    if (error.code === "already_exists") {
      return h("div", { class: "notice bad", role: "alert" }, "Something already exists at " + path + ": pick another path.");
    }
    if (error.code !== "conflict") return failure(error, "Not saved");
    const current = error.detail.current;
    const shown = h("div", {});
    const showChange = async () => shown.replaceChildren(await diffBlock(path, editing.version, null));
    return h("div", { class: "notice bad", role: "alert" },
      h("p", {}, h("strong", {}, "Not saved: this file changed while you were editing. "),
        current ? "It is now at version " + current + "; you started from version " + editing.version + ". " : "It was deleted meanwhile. ",
        "Your text is still in the editor."),
      h("div", { class: "actions" },
        current ? h("button", { type: "button", onclick: showChange }, "Show what changed") : null,
        h("button", { type: "button", class: "danger", onclick: () => overwriteAfterConflict(editing, current) }, "Save mine over it"),
        h("a", { class: "button", href: route("file", { p: path }) }, "Discard mine")),
      shown);
  }

  async function overwriteAfterConflict(editing, current) {
    const ok = await confirmDialog("Save over the other change?", "Your text replaces the file as it is now. " +
      "The other change stays in the history and can be restored.", "Save mine");
    if (ok) saveEdit(editing, current === undefined ? null : current);
  }

  // -- history, diffs, restore -----------------------------------------------------------------------------------

  async function showHistory(params) {
    const path = params.get("p");
    const { versions } = await api("GET", "/v1/history" + apiPath(path));
    const newest = [...versions].reverse();
    const latest = newest[0];
    const live = latest && !latestIsDeletion(latest) ? latest.version : null;
    const to = params.get("to") ? Number(params.get("to")) : null;
    const from = params.get("from") ? Number(params.get("from")) : null;
    return [
      heading("History of " + name(path), path, [
        live ? h("a", { class: "button", href: route("file", { p: path }) }, "Current version") : null,
      ]),
      h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Versions" }, versionTable(path, newest, live)),
      compareForm(path, newest, from, to),
      await diffBlock(path, from, to),
    ];
  }

  function latestIsDeletion(version) {
    return version.sha256 === null;
  }

  function versionTable(path, newest, live) {
    const rows = newest.map((v) => h("tr", { class: v.version === live ? "current" : null },
      h("td", { class: "num" }, v.version),
      h("td", { class: "nowrap" }, when(v.timestamp)),
      h("td", {}, v.op, v.old_path ? h("div", { class: "muted small" }, "from " + v.old_path) : null),
      h("td", {}, v.actor),
      h("td", { class: "mono hide-narrow" }, v.session || "–"),
      h("td", { class: "num" }, v.sha256 === null ? "–" : bytes(v.size)),
      h("td", { class: "hide-narrow" }, v.source || "–"),
      h("td", { class: "nowrap actions-cell" }, versionActions(path, v, live))));
    return h("table", { class: "versions" },
      h("caption", { class: "visually-hidden" }, "Versions of " + path + ", newest first"),
      h("thead", {}, h("tr", {}, ["Version", "When", "Change", "By", "Session", "Size", "Source", "Actions"].map(
        (label, i) => h("th", { scope: "col", class: [4, 6].includes(i) ? "hide-narrow" : null }, label)))),
      h("tbody", {}, rows));
  }

  function versionActions(path, v, live) {
    if (v.sha256 === null) return h("span", { class: "muted" }, "deleted");
    const label = (text) => text + " version " + v.version;
    return [
      h("a", { class: "button small", href: route("file", { p: path, v: v.version }), "aria-label": label("View") }, "View"),
      " ",
      h("a", { class: "button small", href: route("history", diffRoute(path, v.version, live)), "aria-label": label("Compare") }, "Diff"),
      " ",
      v.version !== live ? h("button", { type: "button", class: "small", onclick: () => restoreVersion(path, v.version), "aria-label": label("Restore") }, "Restore") : chip("current", "accent"),
    ];
  }

  // A version's diff: from it to the current version, or (the current one, or when the file is gone) from the one
  // before it.
  function diffRoute(path, version, live) {
    return live && version !== live ? { p: path, from: version, to: live } : { p: path, to: version };
  }

  function compareForm(path, newest, from, to) {
    const options = (selected, withCurrent) => [
      withCurrent ? h("option", { value: "", selected: selected === null }, "current") : h("option", { value: "", selected: selected === null }, "the one before"),
      ...newest.filter((v) => v.sha256 !== null).map((v) => h("option", { value: v.version, selected: selected === v.version }, "version " + v.version)),
    ];
    const fromSelect = h("select", { id: "diff-from" }, options(from, false));
    const toSelect = h("select", { id: "diff-to" }, options(to, true));
    const go = () => (location.hash = route("history", { p: path, from: fromSelect.value, to: toSelect.value }));
    fromSelect.addEventListener("change", go);
    toSelect.addEventListener("change", go);
    return h("div", { class: "compare" },
      h("h2", { class: "visually-hidden" }, "Compare two versions"),
      h("div", { class: "field" }, h("label", { for: "diff-from" }, "Compare"), fromSelect),
      h("div", { class: "field" }, h("label", { for: "diff-to" }, "with"), toSelect));
  }

  async function diffBlock(path, from, to) {
    const query = new URLSearchParams();
    if (from) query.set("from", from);
    if (to) query.set("to", to);
    try {
      const found = await api("GET", "/v1/diff" + apiPath(path) + (query.size ? "?" + query : ""), { headers: writeHeaders });
      return diffView(found);
    } catch (error) {
      return failure(error, "No diff");
    }
  }

  function diffView(found) {
    const summary = h("div", { class: "diff-summary" },
      h("h2", {}, "Changes"),
      found.identical ? h("span", { class: "muted" }, "No difference.") : [
        h("span", { class: "plus" }, "+" + found.added), h("span", { class: "minus" }, "−" + found.removed)],
      found.binary ? h("span", { class: "muted" }, "Binary content differs.") : null,
      found.too_large ? h("span", { class: "muted" }, "Too large to compare line by line.") : null);
    if (!found.rows.length) return h("section", { "aria-label": "Changes" }, summary);
    return h("section", { "aria-label": "Changes" }, summary, sideBySide(found));
  }

  function sideBySide(found) {
    const cell = (side, cls) => side
      ? [h("span", { class: "ln " + cls, "aria-hidden": "true" }, side[0]), h("span", { class: "tx " + cls }, side[1])]
      : [h("span", { class: "ln none" }), h("span", { class: "tx none" })];
    const rows = found.rows.map((row) => row.op === "skip"
      ? h("div", { class: "diff-skip" }, "⋯ " + row.count + " unchanged " + (row.count === 1 ? "line" : "lines"))
      : h("div", { class: "diff-row " + row.op, "data-op": row.op }, cell(row.old, "old"), cell(row.new, "new")));
    return h("div", { class: "diff", role: "group", "aria-label": "From " + found.from.label + " to " + found.to.label },
      h("div", { class: "diff-head" }, h("div", {}, "− " + found.from.label), h("div", {}, "+ " + found.to.label)),
      rows);
  }

  async function restoreVersion(path, version) {
    const file = state.file && state.file.path === path && state.file.current ? state.file : await currentOf(path);
    const expected = file ? file.version : undefined;
    const ok = await confirmDialog("Restore version " + version + "?",
      "Its content becomes the current content of " + path + " as a new version" +
      (expected ? "; version " + expected + " stays in the history." : "."), "Restore");
    if (!ok) return;
    try {
      const json = expected ? { version, expected_version: expected } : { version };
      const restored = await api("POST", "/v1/restore" + apiPath(path), { json, headers: writeHeaders });
      toast("Restored version " + version + " as version " + restored.version + ".");
      location.hash = route("history", { p: path });
      if (location.hash === state.lastHash) render();
    } catch (error) {
      const why = error.code === "conflict" ? "The file changed meanwhile (now version " + error.detail.current + "). Look again, then restore." : message(error);
      toast("Not restored. " + why);
    }
  }

  async function currentOf(path) {
    try {
      return await api("GET", "/v1/stat" + apiPath(path));
    } catch {
      return null;
    }
  }

  // -- search ----------------------------------------------------------------------------------------------------

  async function showSearch(params) {
    const query = params.get("q") || "";
    $("search").value = query;
    if (!query.trim()) return [heading("Search"), h("p", { class: "muted" }, "Type in the search box (press / to go there).")];
    if (claude()) return searchEverywhere(query);
    const found = await api("GET", "/v1/search?" + new URLSearchParams({ q: query, limit: "20" }));
    const results = found.hits.map((hit) => searchHit(hit, query));
    // Say how many hold a word of the query and how many were found by meaning alone: "9 passages match email"
    // when one holds the word read as if nine did.
    const words = found.hits.filter((hit) => hit.retrievers.includes("fts")).length;
    const meaning = found.hits.length - words;
    const count = (n, what) => n + " " + what + (n === 1 ? "" : "s");
    const summary = !found.hits.length ? ["Nothing matches ", h("strong", {}, query), ". "]
      : [count(found.hits.length, "result") + " for ", h("strong", {}, query), ": ",
        [words ? count(words, "passage") + " with its words" : "", meaning ? count(meaning, "passage") + " close in meaning" : ""]
          .filter(Boolean).join(", "), ". "];
    return [
      heading("Search"),
      h("p", { class: "muted", role: "status" }, ...summary, found.note),
      h("div", { class: "results" }, results),
    ];
  }

  // One hit: its rank, path and relevance, and its lines between the lines just before and after (dimmed).
  function searchHit(hit, query) {
    const lines = hit.first_line === hit.last_line ? "line " + hit.first_line : "lines " + hit.first_line + "–" + hit.last_line;
    const bare = (text) => text.split("\n").map((line) => line.replace(/^\s*\d+\t/, "")).join("\n");
    const found = hit.retrievers.map((r) => chip(r === "fts" ? "words" : "meaning"));
    return h("article", { class: "card result" },
      h("h2", {}, "#" + hit.rank + " ", h("a", { href: route("file", { p: hit.path, line: hit.first_line + "-" + hit.last_line }) }, hit.path)),
      h("div", { class: "chips" }, chip(lines), chip("relevance " + hit.relevance.toFixed(2)), found),
      h("pre", {},
        hit.before ? h("span", { class: "context" }, bare(hit.before) + "\n") : "",
        highlight(bare(hit.passage), query),
        hit.after ? h("span", { class: "context" }, "\n" + bare(hit.after)) : ""));
  }

  // The query's words marked in the passage: text split around matches, each match a <mark> made as an element.
  function highlight(text, query) {
    const words = query.split(/\s+/).filter((w) => w.length > 1).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    if (!words.length) return text;
    const pattern = new RegExp("(" + words.join("|") + ")", "giu");
    return text.split(pattern).map((part, i) => (i % 2 ? h("mark", {}, part) : part));
  }

  // -- Claude Code: one namespace per memory directory ----------------------------------------------------------
  //
  // The sign-in token of `memdir serve --claude-code` opens no memory: exchanged once (POST /v1/claude-code/sign-in),
  // it gives each directory's own token. The picker switches which one the page uses; every request still carries
  // exactly one namespace's token. Search asks every directory, each with its token, and merges the hits.

  function claude() {
    try {
      return JSON.parse(sessionStorage.getItem(CLAUDE_KEY) || "null");
    } catch {
      return null;
    }
  }

  async function claudeSignIn(hub) {
    const found = await api("POST", "/v1/claude-code/sign-in", { token: hub });
    if (!found.namespaces.length) throw new ApiError(404, "not_found", "This server has no Claude Code memory directory to show.");
    keep(CLAUDE_KEY, JSON.stringify({ hub, namespaces: found.namespaces }));
    keep(TOKEN_KEY, found.namespaces[0].token);
    return api("GET", "/v1/whoami");
  }

  function directoryOf(namespace) {
    const known = claude();
    return known ? known.namespaces.find((d) => d.namespace === namespace) : undefined;
  }

  function showPicker() {
    const known = claude();
    const old = $("namespace-picker");
    if (old) old.parentElement.remove();
    if (!known) {
      $("namespace").hidden = false;
      return;
    }
    const select = h("select", { id: "namespace-picker", onchange: (event) => switchTo(event.target.value).then((ok) => ok && (location.hash = route("files"))) },
      known.namespaces.map((d) => h("option", { value: d.namespace, selected: d.namespace === state.namespace, title: d.label }, d.name)));
    $("namespace").hidden = true;
    $("namespace").before(h("label", { class: "picker" }, h("span", { class: "visually-hidden" }, "Memory directory"), select));
    if (!document.querySelector('[data-nav="claude-code"]')) {
      $("search-form").previousElementSibling.prepend(h("a", { href: route("claude-code"), "data-nav": "claude-code" }, "Claude Code"));
    }
  }

  // Use the token of ``namespace`` from now on; false (and a notice) when this tab does not have it.
  async function switchTo(namespace) {
    const directory = directoryOf(namespace);
    if (!directory) {
      toast("This tab has no token for " + namespace + ".");
      return false;
    }
    if (state.dirty && !window.confirm("Leave this edit? Your unsaved changes will be lost.")) return false;
    state.dirty = false;
    keep(TOKEN_KEY, directory.token);
    state.namespace = namespace;
    state.tree = null;
    state.file = null;
    state.expanded = new Set(["/memories"]);
    $("namespace").textContent = namespace;
    $("namespace-picker").value = namespace;
    await refreshTree();
    return true;
  }

  async function showClaudeCode() {
    const known = claude();
    if (!known) return [heading("Claude Code"), h("p", { class: "muted" }, "Sign in with the token `memdir serve --claude-code` prints.")];
    const report = await api("GET", "/v1/claude-code/status", { token: known.hub });
    return [
      heading("Claude Code memory"),
      h("p", { class: "muted" }, report.directories.length + " directories in " + report.config +
        ". Claude Code loads the first 200 lines or 25 KB of each MEMORY.md; the rest waits in topic files."),
      report.notes.length ? h("div", { class: "notice" }, h("strong", {}, "Settings: "), h("ul", {}, report.notes.map((n) => h("li", {}, n)))) : null,
      h("div", { class: "results" }, report.directories.map(directoryCard)),
    ];
  }

  function directoryCard(d) {
    const index = d.index;
    const load = !index ? chip("no MEMORY.md")
      : index.whole ? chip("MEMORY.md loads whole", "ok")
      : chip("MEMORY.md: lines " + (index.loaded_lines + 1) + "–" + index.lines + " not loaded", "warn");
    return h("article", { class: "card result", "data-namespace": d.namespace },
      h("h2", {}, h("a", { href: route("files", { ns: d.namespace }), title: d.label }, d.name)),
      h("div", { class: "muted small" }, d.label),
      h("div", { class: "muted small mono" }, d.directory),
      h("div", { class: "chips" }, chip(d.files + (d.files === 1 ? " file" : " files")), chip(bytes(d.bytes)),
        d.last_change ? chip("changed " + ago(d.last_change)) : null, load,
        d.secrets.length ? chip(d.secrets.length + (d.secrets.length === 1 ? " secret" : " secrets"), "bad") : null,
        d.frontmatter.length ? chip(d.frontmatter.length + " frontmatter " + (d.frontmatter.length === 1 ? "problem" : "problems"), "warn") : null),
      index && !index.whole ? h("p", { class: "small" }, "Lines " + (index.loaded_lines + 1) + "–" + index.lines +
        " of MEMORY.md never reach a session. Move the detail into topic files and keep one short line per note.") : null,
      d.secrets.length || d.frontmatter.length ? h("ul", { class: "findings" },
        d.secrets.map((p) => h("li", {}, h("strong", {}, "secret: "), h("a", { href: route("file", { ns: d.namespace, p: "/memories/" + p.path, line: p.line + "-" + p.line }) }, p.path), " line " + p.line + ": " + p.what)),
        d.frontmatter.map((p) => h("li", {}, h("strong", {}, "note: "), h("a", { href: route("file", { ns: d.namespace, p: "/memories/" + p.path }) }, p.path), ": " + p.what))) : null);
  }

  async function searchEverywhere(query) {
    const known = claude();
    const asked = known.namespaces.map((d) =>
      api("GET", "/v1/search?" + new URLSearchParams({ q: query, limit: "20" }), { token: d.token })
        .then((found) => found.hits.map((hit) => ({ ...hit, directory: d })), () => []));
    const hits = (await Promise.all(asked)).flat().sort((a, b) => b.score - a.score).slice(0, 30);
    return [
      heading("Search"),
      h("p", { class: "muted", role: "status" }, hits.length ? hits.length + (hits.length === 1 ? " passage matches " : " passages match ") : "Nothing matches ",
        h("strong", {}, query), " in " + known.namespaces.length + " memory directories."),
      h("div", { class: "results" }, hits.map((hit) => {
        const card = searchHit(hit, query);
        card.querySelector("a").setAttribute("href", route("file", { ns: hit.directory.namespace, p: hit.path, line: hit.first_line + "-" + hit.last_line }));
        card.querySelector("h2").append(" ", chip(hit.directory.name, "accent"));
        return card;
      })),
    ];
  }

  // -- review ----------------------------------------------------------------------------------------------------

  async function refreshPending() {
    try {
      const { pending } = await api("GET", "/v1/review?limit=1");
      const badge = $("pending");
      badge.hidden = pending === 0;
      badge.textContent = String(pending);
      badge.setAttribute("aria-label", pending + " waiting");
    } catch {
      // the badge is a hint; the review page reports errors itself
    }
  }

  async function showReview(params) {
    const status = params.get("status") === "all" ? "all" : "pending";
    const found = await api("GET", "/v1/review?status=" + status);
    const tab = (value, label) => h("a", { href: route("review", { status: value === "pending" ? null : value }), "aria-current": status === value ? "page" : null }, label);
    const items = found.items.slice().reverse().map(reviewItem);
    return [
      heading("Review queue"),
      h("p", { class: "muted" }, "Writes the memory policy held back because they looked unsafe. Approving applies " +
        "the write to the file as it is now; rejecting discards it."),
      h("nav", { class: "tabs", "aria-label": "Which writes" }, tab("pending", "Waiting (" + found.pending + ")"), tab("all", "All")),
      items.length ? h("div", { class: "results" }, items) : h("p", { class: "empty" }, status === "pending" ? "Nothing is waiting for review." : "No write was ever held."),
    ];
  }

  function reviewItem(item) {
    const pending = item.status === "pending";
    return h("article", { class: "card item", "aria-labelledby": "item-" + item.id },
      h("div", { class: "item-head" },
        h("h2", { id: "item-" + item.id }, "#" + item.id + " " + item.command + " " + item.path),
        chip(item.status, pending ? "warn" : item.status === "approved" ? "ok" : "bad")),
      h("div", { class: "muted small" }, "by " + item.actor, item.session ? " · session " + item.session : "",
        item.source ? " · source " + item.source : "", " · ", when(item.time)),
      h("ul", { class: "findings" }, item.findings.map((f) => h("li", {},
        h("strong", {}, f.kind + ": " + f.rule), " — line " + f.line + ": " + f.detail))),
      pending && item.base_changed ? h("div", { class: "notice" }, "The file changed since this write was held: the diff shows what approving would do now.") : null,
      decided(item),
      diffView({ ...item.diff, from: { label: heldBase(item) }, to: { label: "after this write" } }),
      pending ? h("div", { class: "actions" },
        h("button", { type: "button", class: "primary", onclick: () => decide(item, "approve") }, "Approve #" + item.id),
        h("button", { type: "button", class: "danger", onclick: () => decide(item, "reject") }, "Reject #" + item.id)) : null);
  }

  // What the held write is compared with: the file as it is now, or nothing when there is no file there (yet).
  function heldBase(item) {
    if (item.current_version === null) return item.path + ": no such file now";
    return item.path + " now" + (item.current_version ? " (version " + item.current_version + ")" : "");
  }

  function decided(item) {
    if (item.status === "pending") return null;
    return h("p", { class: "small" }, item.status[0].toUpperCase() + item.status.slice(1) + " by " + (item.decided_by || "?") + " ",
      when(item.decided_time),
      item.version ? [" as ", h("a", { href: route("history", { p: item.path }) }, "version " + item.version)] : null,
      item.reason ? " — " + item.reason : null);
  }

  async function decide(item, action) {
    const reason = h("textarea", { id: "reject-reason", rows: "3", maxlength: "1000" });
    const extra = action === "reject" ? h("div", { class: "field" }, h("label", { for: "reject-reason" }, "Why (optional)"), reason) : null;
    const text = action === "approve"
      ? "The held " + item.command + " is applied to " + item.path + " as it is now, as a new version."
      : "The held write is discarded; nothing is written.";
    if (!(await confirmDialog((action === "approve" ? "Approve" : "Reject") + " #" + item.id + "?", text, action === "approve" ? "Approve" : "Reject", extra))) return;
    try {
      const json = action === "reject" && reason.value.trim() ? { reason: reason.value.trim() } : undefined;
      const done = await api("POST", "/v1/review/" + item.id + "/" + action, { json });
      toast(action === "approve" ? "Approved #" + item.id + ": " + item.path + " is now version " + done.version + "." : "Rejected #" + item.id + ".");
    } catch (error) {
      toast("Not done: " + message(error));
    }
    render();
  }

  // -- the audit log ---------------------------------------------------------------------------------------------

  async function showAudit(params) {
    const path = params.get("path") || "";
    const limit = params.get("limit") || "200";
    const query = new URLSearchParams({ limit });
    if (path) query.set("path", path);
    const { entries } = await api("GET", "/v1/audit?" + query);
    return [
      heading("Audit log", null, [h("button", { type: "button", onclick: checkIntegrity }, "Check integrity")]),
      h("p", { class: "muted" }, "Every read and write, newest first: who, how, and the SHA-256 of the content (never the content itself)."),
      h("div", { id: "integrity" }),
      auditFilters(path, limit),
      entries.length ? h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Audit entries" }, auditTable(entries.reverse()))
        : h("p", { class: "empty" }, "No entries" + (path ? " for " + path : "") + "."),
    ];
  }

  function auditFilters(path, limit) {
    const pathInput = h("input", { id: "audit-path", type: "text", value: path, placeholder: "/memories/…", spellcheck: "false" });
    const limitSelect = h("select", { id: "audit-limit" }, ["50", "200", "1000", "5000"].map((n) => h("option", { value: n, selected: n === limit }, "last " + n)));
    const apply = (event) => {
      event.preventDefault();
      location.hash = route("audit", { path: pathInput.value.trim(), limit: limitSelect.value });
    };
    return h("form", { class: "filters", onsubmit: apply },
      h("div", { class: "field" }, h("label", { for: "audit-path" }, "File or folder"), pathInput),
      h("div", { class: "field" }, h("label", { for: "audit-limit" }, "Show"), limitSelect),
      h("button", { type: "submit" }, "Filter"));
  }

  function auditTable(entries) {
    const head = ["When", "Who", "Command", "Path", "Outcome", "Version", "SHA-256", "Findings"];
    return h("table", {},
      h("caption", { class: "visually-hidden" }, "Audit log, newest first"),
      h("thead", {}, h("tr", {}, head.map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, entries.map((e) => h("tr", {},
        h("td", { class: "nowrap" }, when(e.ts)),
        h("td", { class: "actor-cell" }, e.actor, e.session ? h("div", { class: "muted small mono" }, e.session) : null,
          e.source ? h("div", { class: "muted small" }, e.source) : null),
        h("td", {}, e.command, h("div", { class: "muted small", title: "Channel" }, "via " + e.channel)),
        h("td", { class: "mono path" }, e.path ? h("a", { href: route("file", { p: e.path }) }, e.path) : "–", e.new_path ? " → " + e.new_path : ""),
        h("td", {}, h("span", { class: "outcome-" + e.outcome }, e.outcome)),
        h("td", { class: "num" }, e.version ?? "–"),
        h("td", { class: "mono", title: e.sha256 || "" }, e.sha256 ? e.sha256.slice(0, 12) : "–"),
        h("td", { class: "findings" }, e.detail || "–")))));
  }

  function chainName(chain) {
    return chain.log === "history" ? "History" : "Audit log";
  }

  // One line per hash chain, as `memdir verify` prints it: what was checked, whether it is intact, its head.
  function chainSummary(chain) {
    const noun = chain.log === "history" ? "version" : "entry";
    const state = chain.ok ? "intact" : chain.breaks.length + " breaks, the first at " + noun + " " + chain.breaks[0].first;
    const notes = (chain.checked < chain.entries ? "; " + (chain.entries - chain.checked) + " from before the chain, not checked" : "")
      + (chain.pruned ? "; " + chain.pruned + " pruned" : "");
    const counted = chain.entries + " " + (chain.entries === 1 ? noun : noun === "entry" ? "entries" : "versions");
    return chainName(chain) + ": " + counted + notes
      + " — " + state + (chain.head ? " (head " + chain.head.slice(0, 16) + "…)" : "") + ".";
  }

  async function checkIntegrity(event) {
    const button = event.currentTarget;
    button.disabled = true;
    const box = $("integrity");
    try {
      const found = await api("GET", "/v1/verify");
      const chains = [found.history, found.audit].filter(Boolean);
      const problems = found.discrepancies.map((d) => d.problem + " " + d.path + ": " + d.detail)
        .concat(chains.flatMap((c) => c.breaks.map((b) => b.kind + " " + chainName(c).toLowerCase() + ": " + b.detail)));
      const summary = [found.discrepancies.length ? found.files + " files checked." : "All " + found.files + " files match their history."]
        .concat(chains.map(chainSummary));
      box.replaceChildren(found.ok
        ? h("div", { class: "notice info", role: "status" }, summary.map((line) => h("div", {}, line)))
        : h("div", { class: "notice bad", role: "alert" }, h("strong", {}, problems.length + " problems found:"),
          h("ul", {}, problems.map((line) => h("li", {}, line))), summary.map((line) => h("div", {}, line))));
    } catch (error) {
      box.replaceChildren(failure(error, "Integrity check failed"));
    } finally {
      button.disabled = false;
    }
  }

  // -- keyboard --------------------------------------------------------------------------------------------------

  function typing(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  function shortcuts(event) {
    if ($("app").hidden || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (document.querySelector("dialog[open]")) return;
    const { view, params } = parseHash();
    const path = params.get("p");
    const actions = {
      "/": () => $("search").focus(),
      "?": () => $("help").showModal(),
      f: focusTree,
      r: () => (location.hash = route("review")),
      a: () => (location.hash = route("audit")),
      e: () => view === "file" && path && !params.get("v") && (location.hash = route("edit", { p: path })),
      h: () => path && (location.hash = route("history", { p: path })),
    };
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  }

  function searchSubmit(event) {
    event.preventDefault();
    const query = $("search").value.trim();
    if (query) location.hash = route("search", { q: query });
  }

  // -- start -----------------------------------------------------------------------------------------------------

  function init() {
    $("signin-form").addEventListener("submit", signIn);
    $("show-token").addEventListener("change", (event) => ($("token").type = event.target.checked ? "text" : "password"));
    $("signout").addEventListener("click", () => signOut());
    $("help-button").addEventListener("click", () => $("help").showModal());
    $("search-form").addEventListener("submit", searchSubmit);
    $("tree").addEventListener("keydown", treeKeys);
    $("new-file").addEventListener("click", (event) => {
      event.preventDefault();
      const dir = state.current ? state.current.slice(0, state.current.lastIndexOf("/")) : "/memories";
      location.hash = route("new", { dir });
    });
    $("skip").addEventListener("click", (event) => {
      event.preventDefault();
      $("main").focus();
    });
    document.addEventListener("keydown", shortcuts);
    window.addEventListener("hashchange", render);
    window.addEventListener("beforeunload", (event) => {
      if (state.dirty) event.preventDefault();
    });
    resume();
  }

  init();
})();
