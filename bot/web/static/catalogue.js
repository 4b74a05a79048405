"use strict";
// The catalogue page: what the terms in force offer, searched on the phone, a cart, and the
// cart sent as a request (the same intake as a restock sheet). Every text comes from the
// server in the viewer's language; every value is set with textContent, never as HTML. Each
// API call carries Telegram's initData (Authorization: tma …); there are no cookies.
// The helpers both pages share (el, headers, rupees, withTax) are common.js's, loaded first.
//
// The catalogue is loaded once (GET /api/catalogue) and kept in localStorage, so the page is
// drawn at once next time and still shows it offline; search runs over it here, on a
// lowercase haystack made once per item. The cart is kept in localStorage after every
// change, so it survives closing the page or losing the connection. Sending it puts it in
// localStorage first, with an id made here (crypto.randomUUID), then sends it: at once when
// online, else on the "online" event or the retry timer, with backoff, and always the same
// id and lines, which the server makes into one submission however often they arrive.
(() => {
  const { el, headers, rupees, viewer, withTax } = window.Manzoori;
  const tg = window.Telegram.WebApp;
  const who = viewer();
  const DATA_KEY = `manzoori.catalogue.${who}`;
  const CART_KEY = `manzoori.cart.${who}`;
  const SEND_KEY = `manzoori.request.${who}`;
  const SHOWN = 50; // search results drawn at most: a phone draws 50 rows at once with ease
  const RETRY_MIN_MS = 1000; // backoff of a queued cart: 1 s, doubling, up to RETRY_MAX_MS
  const RETRY_MAX_MS = 30000;
  const app = document.getElementById("app");
  let data = null; // the catalogue JSON
  let labels = {};
  let items = []; // [{sku, description, category, supplier, price, min, max, lead, gst, hay}]
  let byKey = new Map(); // "sku|supplier" (lower case) -> item
  let cart = { lines: [], branch: null, needed_by: null }; // lines: {sku, supplier_id, qty, note}
  let problems = new Map(); // cart line key -> the server's sentence
  let rowsOf = new Map(); // item -> its row, drawn once and reused by every later search
  let last = { words: [], found: items }; // the last search: a longer one narrows its matches
  let sending = false;
  let retryMs = RETRY_MIN_MS;
  let retryTimer = null;

  function fill(text, values) {
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? values[name] : whole));
  }

  function keyOf(sku, supplier) {
    return `${String(sku).toLowerCase()}|${String(supplier).toLowerCase()}`;
  }

  function read(key, fallback) {
    try {
      const text = localStorage.getItem(key);
      return text ? JSON.parse(text) : fallback;
    } catch (error) {
      return fallback;
    }
  }

  function saveCart() {
    localStorage.setItem(CART_KEY, JSON.stringify(cart));
  }

  function status(text, kind = "") {
    const node = document.getElementById("cart-status");
    if (!node) return;
    node.textContent = text || "";
    node.className = kind;
  }

  // The catalogue as the page searches it: each offer with its haystack, made once.
  function index(body) {
    data = body;
    labels = body.labels;
    items = body.items.map(([sku, description, category, s, price, min, max, lead, gst]) => {
      const supplier = body.suppliers[s];
      return {
        sku, description, category, supplier_id: supplier[0], supplier: supplier[1], price,
        min, max, lead, gst,
        hay: `${sku} ${description} ${category}`.toLowerCase(),
      };
    });
    byKey = new Map(items.map((item) => [keyOf(item.sku, item.supplier_id), item]));
    rowsOf = new Map();
    last = { words: [], found: items };
  }

  async function load() {
    const kept = read(DATA_KEY, null);
    if (kept) {
      index(kept);
      render(true);
    }
    let response;
    try {
      response = await fetch("/api/catalogue", { headers: headers(), cache: "no-store" });
    } catch (error) {
      if (kept) document.getElementById("offline").hidden = false;
      else failed("Offline");
      return;
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      failed(body.error || `HTTP ${response.status}`);
      return;
    }
    try {
      localStorage.setItem(DATA_KEY, JSON.stringify(body));
    } catch (error) {
      // A device out of room keeps no copy: the page works from the server's.
    }
    index(body);
    render(false);
  }

  function failed(text) {
    app.replaceChildren(el("p", { className: "notice", testid: "load-error", text }));
    app.setAttribute("aria-busy", "false");
  }

  function render(provisional) {
    document.documentElement.lang = data.lang;
    document.documentElement.dir = data.dir;
    document.title = labels.title;
    const search = el("input", {
      type: "search", placeholder: labels.search, "aria-label": labels.search,
      testid: "catalog-search", autocomplete: "off",
    });
    search.addEventListener("input", () => results(search.value));
    if (!cart.branch || !data.branches.some(([id]) => id === cart.branch)) {
      cart.branch = data.home;
    }
    app.replaceChildren(...[
      el("h1", { text: labels.title }),
      el("p", { className: "notice", id: "offline", hidden: "", text: labels.offline }),
      data.items.length ? null : el("p", { className: "notice", text: labels.no_terms }),
      budgets(),
      search,
      el("p", { className: "muted", id: "more", testid: "catalog-more" }),
      el("ol", { className: "lines", id: "results", testid: "catalog-results" }),
      el("h2", { text: labels.cart }),
      el("ol", { className: "lines", id: "cart", testid: "cart" }),
      el("p", { className: "muted", id: "cart-empty", text: labels.cart_empty }),
      delivery(),
      el("ul", { className: "plain totals", id: "totals", testid: "cart-totals" }),
      submitButton(),
      recent(),
      el("div", { id: "cart-status", testid: "cart-status", role: "status", "aria-live": "polite" }),
    ].filter((part) => part !== null));
    app.setAttribute("aria-busy", provisional ? "true" : "false");
    results("");
    drawCart();
    if (read(SEND_KEY, null)) status(labels.queued, "queued");
  }

  function budgets() {
    if (!data.budgets.length) return null;
    return el("section", { testid: "budgets" }, el("h2", { text: labels.budgets }),
      el("ul", { className: "plain" }, ...data.budgets.map(([category, left, budget]) =>
        el("li", { text: fill(labels.budget_line,
          { category, left: rupees(left), budget: rupees(budget) }) }))));
  }

  // Whether a search for `words` can only match what a search for `before` matched: each
  // earlier word is inside one of the new ones (typing on, not deleting).
  function narrows(words, before) {
    return before.every((old) => words.some((word) => word.includes(old)));
  }

  // Search as you type: every word must be in the item's haystack; SHOWN drawn at most, from
  // rows made once. Typing on searches only the last search's matches.
  function results(text) {
    const words = text.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const pool = narrows(words, last.words) ? last.found : items;
    const matches = words.length
      ? pool.filter((item) => words.every((word) => item.hay.includes(word)))
      : items;
    last = { words, found: matches };
    const count = matches.length;
    const found = matches.slice(0, SHOWN);
    const list = document.getElementById("results");
    const rows = document.createDocumentFragment();
    for (const item of found) {
      if (!rowsOf.has(item)) rowsOf.set(item, itemRow(item));
      rows.append(rowsOf.get(item));
    }
    list.replaceChildren(rows);
    const more = document.getElementById("more");
    if (count === 0) more.textContent = data.items.length ? labels.no_match : "";
    else if (count > found.length) {
      more.textContent = fill(labels.more, {
        shown: found.length.toLocaleString("en-US"), count: count.toLocaleString("en-US"),
      });
    } else more.textContent = "";
  }

  function limits(item) {
    const parts = [];
    if (item.max !== null) parts.push(fill(labels.min_max, { min: item.min, max: item.max }));
    else if (item.min > 1) parts.push(fill(labels.min_only, { min: item.min }));
    if (item.lead !== null) parts.push(fill(labels.lead, { days: item.lead }));
    return parts.join(" · ");
  }

  function itemRow(item) {
    const add = el("button", {
      type: "button", className: "small primary", testid: "item-add", text: labels.add,
    });
    add.addEventListener("click", () => addToCart(item, item.min, ""));
    return el("li", { className: "line", testid: "catalog-item", "data-sku": item.sku },
      el("div", { className: "what" },
        el("bdi", { className: "sku mono", dir: "ltr", text: item.sku }), " ",
        el("bdi", { text: item.description }),
        item.category ? el("span", { className: "muted", text: " · " }) : null,
        item.category ? el("bdi", { className: "muted", text: item.category }) : null,
        el("div", { className: "muted small-text" },
          el("bdi", { text: item.supplier }), " · ",
          el("bdi", { dir: "ltr", testid: "item-price", text: rupees(item.price) }),
          limits(item) ? ` · ${limits(item)}` : "")),
      el("div", { className: "edit" }, add));
  }

  function addToCart(item, quantity, note) {
    const key = keyOf(item.sku, item.supplier_id);
    const line = cart.lines.find((l) => keyOf(l.sku, l.supplier_id) === key);
    if (line) line.qty += quantity;
    else cart.lines.push({ sku: item.sku, supplier_id: item.supplier_id, qty: quantity, note });
    problems.delete(key);
    saveCart();
    drawCart();
  }

  function delivery() {
    const branch = el("select", { testid: "cart-branch", "aria-label": labels.branch });
    for (const [id, name] of data.branches) {
      const option = el("option", { value: id, text: name });
      if (id === cart.branch) option.selected = true;
      branch.append(option);
    }
    branch.addEventListener("change", () => {
      cart.branch = branch.value;
      saveCart();
    });
    const needed = el("input", {
      type: "date", min: data.today, testid: "cart-needed-by", "aria-label": labels.needed_by,
    });
    if (cart.needed_by) needed.value = cart.needed_by;
    needed.addEventListener("change", () => {
      cart.needed_by = needed.value || null;
      saveCart();
    });
    return el("div", { className: "delivery" },
      data.branches.length ? el("label", {}, el("span", { text: labels.branch }), branch) : null,
      el("label", {}, el("span", { text: labels.needed_by }), needed));
  }

  function drawCart() {
    const list = document.getElementById("cart");
    if (!list) return;
    const rows = document.createDocumentFragment();
    for (const line of cart.lines) rows.append(cartRow(line));
    list.replaceChildren(rows);
    document.getElementById("cart-empty").hidden = cart.lines.length > 0;
    totals();
  }

  function cartRow(line) {
    const key = keyOf(line.sku, line.supplier_id);
    const item = byKey.get(key);
    const qty = el("input", {
      type: "number", inputmode: "numeric", min: "1", value: String(line.qty),
      "aria-label": `${labels.quantity} ${line.sku}`, testid: "cart-qty",
    });
    const note = el("input", {
      type: "text", maxlength: "300", placeholder: labels.note, "aria-label": labels.note,
      testid: "cart-note", value: line.note || "",
    });
    const remove = el("button", {
      type: "button", className: "small danger", testid: "cart-remove", text: labels.remove,
    });
    const amount = el("bdi", { dir: "ltr", testid: "cart-amount" });
    const show = () => {
      amount.textContent = item
        ? `${line.qty.toLocaleString("en-US")} × ${rupees(item.price)} = ${rupees(line.qty * item.price)}`
        : "";
    };
    qty.addEventListener("input", () => {
      line.qty = Math.max(0, Math.floor(Number(qty.value) || 0));
      problems.delete(key);
      saveCart();
      show();
      totals();
    });
    note.addEventListener("change", () => {
      line.note = note.value;
      saveCart();
    });
    remove.addEventListener("click", () => {
      cart.lines = cart.lines.filter((l) => l !== line);
      problems.delete(key);
      saveCart();
      drawCart();
    });
    show();
    const problem = problems.get(key);
    return el("li", { className: "line cart-line", testid: "cart-line", "data-sku": line.sku },
      el("div", { className: "what" },
        el("bdi", { className: "sku mono", dir: "ltr", text: line.sku }), " ",
        el("bdi", { text: item ? item.description : "" }),
        el("div", { className: "muted" },
          el("bdi", { text: item ? item.supplier : line.supplier_id }))),
      el("div", { className: "edit" }, qty, remove),
      el("div", { className: "amounts" }, amount),
      el("div", { className: "note-field" }, note),
      problem ? el("div", { className: "drift", testid: "cart-problem", text: problem }) : null);
  }

  // The total per supplier, as the POs will be drafted (one PO per supplier and branch).
  function totals() {
    const node = document.getElementById("totals");
    if (!node) return;
    const sums = new Map();
    for (const line of cart.lines) {
      const item = byKey.get(keyOf(line.sku, line.supplier_id));
      if (!item) continue;
      const amount = withTax(line.qty * item.price, item.gst);
      sums.set(item.supplier, (sums.get(item.supplier) || 0) + amount);
    }
    node.replaceChildren(...[...sums].map(([supplier, paisa]) =>
      el("li", { testid: "supplier-total" }, el("bdi", { text: supplier }), " · ",
        el("span", { text: fill(labels.total, { amount: rupees(paisa) }) }))));
    const button = document.querySelector('[data-testid="cart-submit"]');
    if (button) button.disabled = cart.lines.length === 0 || Boolean(read(SEND_KEY, null));
  }

  function submitButton() {
    const button = el("button", {
      type: "button", className: "primary wide", testid: "cart-submit", text: labels.submit,
    });
    button.addEventListener("click", () => {
      if (read(SEND_KEY, null) || !cart.lines.length) return; // one cart in flight at a time
      const body = {
        id: crypto.randomUUID(),
        branch: data.branches.length ? cart.branch : null,
        needed_by: cart.needed_by || null,
        lines: cart.lines.map((l) => ({
          sku: l.sku, supplier_id: l.supplier_id, quantity: l.qty, note: l.note || "",
        })),
      };
      localStorage.setItem(SEND_KEY, JSON.stringify({ body, labels }));
      retryMs = RETRY_MIN_MS;
      status(labels.sending, "queued");
      totals();
      flush();
    });
    return button;
  }

  function recent() {
    if (!data.recent.length) return null;
    const list = el("ul", { className: "plain recent", testid: "recent" });
    for (const po of data.recent) {
      const again = el("button", {
        type: "button", className: "small", testid: "order-again", text: labels.order_again,
      });
      again.addEventListener("click", () => orderAgain(po));
      list.append(el("li", { testid: "recent-po", "data-po": po.po },
        el("bdi", { dir: "ltr", className: "mono", text: po.po }), " ",
        el("bdi", { text: po.supplier }), " · ",
        el("bdi", { dir: "ltr", text: `${po.total} · ${po.when}` }), " ", again));
    }
    return el("section", {}, el("h2", { text: labels.recent }), list);
  }

  // A past PO into the cart, at today's prices; what the terms no longer offer is named.
  function orderAgain(po) {
    const skipped = [];
    for (const [sku, supplier, quantity, note] of po.lines) {
      const item = byKey.get(keyOf(sku, supplier));
      if (item) addToCart(item, quantity, note || "");
      else skipped.push(sku);
    }
    let text = fill(labels.loaded, { po: po.po });
    if (skipped.length) text += `\n${fill(labels.skipped, { skus: skipped.join(", ") })}`;
    status(text, skipped.length ? "refused" : "recorded");
  }

  function retryLater() {
    clearTimeout(retryTimer);
    retryTimer = setTimeout(flush, retryMs);
    retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
  }

  // The queued cart sent; kept until the server answers for good (made, or refused).
  async function flush() {
    const queued = read(SEND_KEY, null);
    if (sending || !queued) return;
    sending = true;
    let response;
    try {
      response = await fetch("/api/requests", {
        method: "POST",
        headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify(queued.body),
        cache: "no-store",
      });
    } catch (error) {
      sending = false;
      status(queued.labels.queued, "queued");
      retryLater();
      return;
    }
    sending = false;
    if (response.status === 401) {
      status(queued.labels.sign_in_again, "queued");
      return;
    }
    if (response.status >= 500 || response.status === 429) {
      status(queued.labels.queued, "queued");
      retryLater();
      return;
    }
    const answer = await response.json().catch(() => ({}));
    localStorage.removeItem(SEND_KEY);
    retryMs = RETRY_MIN_MS;
    if (response.ok) {
      cart.lines = [];
      problems.clear();
      saveCart();
      drawCart();
      await load(); // the new POs under "Order again", and the budgets as they are now
      status(answer.message, "recorded");
      return;
    }
    problems.clear();
    const whole = [];
    for (const problem of answer.problems || []) {
      const line = problem.line ? queued.body.lines[problem.line - 1] : null;
      if (line) {
        const key = keyOf(line.sku, line.supplier_id);
        problems.set(key, [problems.get(key), problem.text].filter(Boolean).join("; "));
      } else whole.push(problem.text);
    }
    const told = [answer.message || answer.error || `HTTP ${response.status}`, ...whole];
    for (const problem of answer.problems || []) {
      if (problem.sku) told.push(`${problem.sku}: ${problem.text}`);
    }
    drawCart();
    status(told.join("\n"), "refused");
  }

  tg.ready();
  tg.expand();
  cart = read(CART_KEY, cart);
  window.addEventListener("online", () => {
    retryMs = RETRY_MIN_MS;
    flush();
  });
  load().then(flush);
})();
