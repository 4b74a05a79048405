"use strict";
// The Mini App's page: one PO, every line, and the decision on it. Every text comes from the
// server in the viewer's language (the page has no catalogue); every value is set with
// textContent, never as HTML. Each API call carries Telegram's initData
// (Authorization: tma …); there are no cookies.
// The helpers both pages share (el, viewer, headers, rupees, withTax) are common.js's,
// loaded first.
//
// The PO last shown is kept in localStorage, per Telegram user: the page draws it at once
// while the server's copy is on its way (over a slow link the API's answer is most of the
// wait), its buttons off until that copy replaces it, and shows it again, buttons on, when
// the API cannot be reached. A decision goes into its maker's queue in localStorage first,
// with an id made here (crypto.randomUUID), and is sent from there: at once when online,
// else on the "online" event or the retry timer. The server records one decision per id,
// however often it is sent, so a queued decision is never shown as approved until the server
// said so.
(() => {
  const { el, headers, rupees, viewer, withTax } = window.Manzoori;
  const tg = window.Telegram.WebApp;
  const po = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
  const who = viewer(); // the kept view and the queue are this person's alone
  const VIEW_KEY = `manzoori.view.${who}.${po}`;
  const QUEUE_KEY = `manzoori.queue.${who}`;
  const RETRY_MS = 5000; // the retry timer: a lost "online" event costs at most this
  const app = document.getElementById("app");
  let view = null; // the view JSON the server sent (or the one kept offline)
  let provisional = false; // the view shown is the kept one, and the server's is on its way
  const quantities = new Map(); // line number -> the quantity the approver set
  let flushing = false;

  function status(text, kind = "") {
    const node = document.getElementById("status");
    if (!node) return;
    node.textContent = text || "";
    node.className = kind;
  }

  function queue() {
    try {
      return JSON.parse(localStorage.getItem(QUEUE_KEY) || "[]");
    } catch (error) {
      return [];
    }
  }

  function saveQueue(items) {
    localStorage.setItem(QUEUE_KEY, JSON.stringify(items));
  }

  // Whether the view shown may be changed and decided: the server allows it, and it is the
  // server's copy, not the one kept on the device while that is on its way.
  function open() {
    return view.decision.allowed && !provisional;
  }

  function kept() {
    const text = localStorage.getItem(VIEW_KEY);
    return text ? JSON.parse(text) : null;
  }

  async function load() {
    let response;
    try {
      response = await fetch(`/api/po/${encodeURIComponent(po)}`, {
        headers: headers(), cache: "no-store",
      });
    } catch (error) {
      provisional = false;
      view = kept();
      if (view) {
        render();
        const notice = document.getElementById("offline");
        if (notice) notice.hidden = false;
      } else {
        failed("Offline");
      }
      return;
    }
    provisional = false;
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      failed(body.error || `HTTP ${response.status}`);
      return;
    }
    view = body;
    localStorage.setItem(VIEW_KEY, JSON.stringify(view));
    render();
  }

  function failed(text) {
    app.replaceChildren(el("p", { className: "notice", testid: "load-error", text }));
    app.setAttribute("aria-busy", "false");
  }

  function render() {
    const labels = view.labels;
    document.documentElement.lang = view.lang;
    document.documentElement.dir = view.dir;
    document.title = view.po;
    quantities.clear();
    const search = el("input", {
      type: "search", placeholder: labels.search, "aria-label": labels.search, testid: "search",
    });
    search.addEventListener("input", () => filter(search.value));
    const lines = el("ol", { className: "lines", testid: "po-lines" });
    for (const line of view.lines) lines.append(lineItem(line, labels));
    const parts = [
      el("h1", { text: view.heading }),
      el("div", { className: "facts" },
        el("bdi", { text: view.supplier }),
        el("span", { className: "muted", testid: "version", text: view.version_text }),
        el("span", { className: "countdown", id: "countdown", testid: "countdown" }),
        pdfButton(labels)),
      offlineNotice(labels),
      view.decision.allowed ? null : el("p", {
        className: "notice", testid: "refusal", text: view.decision.why,
      }),
      el("p", { className: "total", id: "total", testid: "total" }),
      view.delivery_text
        ? el("p", { className: "muted", testid: "delivery", text: view.delivery_text })
        : null,
      view.supplier_text
        ? el("p", { className: "muted", testid: "supplier-answer", text: view.supplier_text })
        : null,
      el("h2", { text: view.lines_heading }),
      view.lines.length > 10 ? search : null,
      el("p", { className: "muted", id: "no-match", hidden: "", text: labels.no_match }),
      lines,
      section(labels.flags, view.flags),
      section(labels.budgets, view.budgets),
      section(labels.evidence, view.evidence),
      chain(labels),
      actions(labels),
      el("div", { id: "status", testid: "decision-status", role: "status", "aria-live": "polite" }),
    ];
    app.replaceChildren(...parts.filter((part) => part !== null));
    app.setAttribute("aria-busy", provisional ? "true" : "false");
    totals();
    tick();
    showQueued();
  }

  function offlineNotice(labels) {
    return el("p", { className: "notice", id: "offline", hidden: "", text: labels.offline });
  }

  function lineItem(line, labels) {
    const qty = el("input", {
      type: "number", inputmode: "numeric", min: "0", max: String(line.quantity),
      value: String(line.quantity), "aria-label": `${labels.quantity} ${line.sku}`,
      testid: "line-qty",
    });
    const drop = el("button", {
      type: "button", className: "small danger", testid: "line-drop", text: labels.drop,
    });
    if (!open()) qty.disabled = drop.disabled = true; // nothing to change, or not yet
    const amounts = el("bdi", { dir: "ltr" });
    const item = el("li", { className: "line", testid: "po-line", "data-line": String(line.line) },
      el("div", { className: "what" },
        el("bdi", { className: "sku mono", dir: "ltr", text: line.sku }), " ",
        el("span", { text: line.description }),
        line.category ? el("span", { className: "muted", text: ` · ${line.category}` }) : null,
        line.note ? el("div", { className: "muted note", testid: "line-note", text: line.note })
          : null),
      el("div", { className: "edit" }, qty, drop),
      el("div", { className: "amounts" }, amounts),
      line.last ? el("div", { className: "last muted", text: line.last }) : null,
      line.drift ? el("div", { className: "drift", text: line.drift }) : null);
    item.dataset.search = `${line.sku} ${line.description}`.toLowerCase();
    const update = () => {
      const wanted = quantities.has(line.line) ? quantities.get(line.line) : line.quantity;
      item.classList.toggle("dropped", wanted === 0);
      item.classList.toggle("changed", wanted !== line.quantity);
      drop.textContent = wanted === 0 ? labels.keep : labels.drop;
      const shown = wanted === 0 ? line.quantity : wanted;
      amounts.textContent =
        `${shown.toLocaleString("en-US")} × ${line.unit_price} = ${rupees(shown * line.unit_price_paisa)}`;
      totals();
    };
    qty.addEventListener("input", () => {
      const wanted = Math.max(0, Math.min(line.quantity, Math.floor(Number(qty.value) || 0)));
      if (wanted === line.quantity) quantities.delete(line.line);
      else quantities.set(line.line, wanted);
      update();
    });
    drop.addEventListener("click", () => {
      if (quantities.get(line.line) === 0) {
        quantities.delete(line.line);
        qty.value = String(line.quantity);
      } else {
        quantities.set(line.line, 0);
        qty.value = "0";
      }
      update();
    });
    update();
    return item;
  }

  function filter(text) {
    const wanted = text.trim().toLowerCase();
    let shown = 0;
    for (const item of app.querySelectorAll("li.line")) {
      item.hidden = wanted !== "" && !item.dataset.search.includes(wanted);
      if (!item.hidden) shown += 1;
    }
    document.getElementById("no-match").hidden = shown > 0;
  }

  function totals() {
    const node = document.getElementById("total");
    if (!node || !view) return;
    const changed = quantities.size > 0;
    let paisa = 0;
    for (const line of view.lines) {
      const wanted = quantities.has(line.line) ? quantities.get(line.line) : line.quantity;
      paisa += withTax(wanted * line.unit_price_paisa, line.gst_basis_points || 0);
    }
    node.textContent = changed
      ? view.labels.new_total.replace("{amount}", rupees(paisa))
      : view.total_text;
    const button = document.querySelector('[data-testid="approve-with-changes"]');
    if (button) button.disabled = !open() || !changed;
    const approve = document.querySelector('[data-testid="approve"]');
    if (approve) approve.disabled = !open() || changed;
  }

  // The PO as the supplier gets it, sent by the bot to this chat: an in-app browser cannot
  // download a file that needs this page's credentials, and a chat keeps it to forward.
  function pdfButton(labels) {
    const button = el("button", {
      type: "button", className: "small", testid: "po-pdf", text: labels.pdf,
    });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const response = await fetch(`/api/po/${encodeURIComponent(po)}/pdf`, {
          method: "POST", headers: headers(), cache: "no-store",
        });
        const body = await response.json();
        status(body.status || body.error, response.ok ? "recorded" : "refused");
      } catch (error) {
        status(labels.offline, "refused");
      } finally {
        button.disabled = false;
      }
    });
    return button;
  }

  function section(title, items) {
    if (!items || items.length === 0) return null;
    return el("section", {}, el("h2", { text: title }),
      el("ul", { className: "plain" }, ...items.map((text) => el("li", { text }))));
  }

  function chain(labels) {
    const list = el("ul", { className: "plain chain", testid: "chain" });
    for (const stage of view.chain) {
      list.append(el("li", { className: stage.waiting ? "waiting" : "", text: stage.text }));
      for (const decided of stage.decided) {
        list.append(el("li", { className: "muted", text: `  ${decided}` }));
      }
    }
    return el("section", {}, el("h2", { text: labels.chain }), list);
  }

  function actions(labels) {
    const approve = el("button", {
      type: "button", className: "primary", testid: "approve", text: labels.approve,
    });
    const withChanges = el("button", {
      type: "button", className: "primary", testid: "approve-with-changes",
      text: labels.approve_with_changes,
    });
    const reason = el("textarea", {
      rows: "2", maxlength: "500", placeholder: labels.reason, "aria-label": labels.reason,
      testid: "reason",
    });
    const reject = el("button", {
      type: "button", className: "danger", testid: "reject", text: labels.reject,
    });
    for (const button of [approve, withChanges, reject]) if (!open()) button.disabled = true;
    // An approval that takes a category over its month needs a reason, as in the chat.
    const approval = (more) => {
      const why = reason.value.trim();
      if (view.decision.needs_reason && !why) {
        status(labels.reason_for_budget, "refused");
        reason.focus();
        return;
      }
      decide({ verdict: "approve", ...(why ? { reason: why } : {}), ...more });
    };
    approve.addEventListener("click", () => approval({}));
    withChanges.addEventListener("click", () => {
      const changes = [...quantities].map(([line, quantity]) => ({ line, quantity }));
      approval({ changes });
    });
    reject.addEventListener("click", () => {
      if (!reason.value.trim()) {
        status(labels.reason_needed, "refused");
        reason.focus();
        return;
      }
      decide({ verdict: "reject", reason: reason.value.trim() });
    });
    return el("section", { className: "actions" },
      el("div", { className: "row" }, approve, withChanges), reason, reject);
  }

  function decide(what) {
    const decision = {
      id: crypto.randomUUID(),
      draft_version: view.version,
      draft_hash: view.hash,
      device_time: new Date().toISOString(),
      ...what,
    };
    saveQueue([...queue(), { po, decision, labels: view.labels }]);
    status(view.labels.queued, "queued");
    flush();
  }

  function showQueued() {
    if (queue().some((item) => item.po === po)) status(view.labels.queued, "queued");
  }

  async function flush() {
    if (flushing) return;
    flushing = true;
    try {
      // Oldest first; one the server has not answered for good holds back those after it.
      let item = queue()[0];
      while (item && navigator.onLine && (await send(item))) item = queue()[0];
    } finally {
      flushing = false;
    }
  }

  // One queued decision sent: true once the server answered for good (recorded or refused),
  // false to keep it queued (no connection, the server busy, or initData to renew).
  async function send(item) {
    const labels = item.labels;
    let response;
    try {
      response = await fetch(`/api/po/${encodeURIComponent(item.po)}/decision`, {
        method: "POST",
        headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify(item.decision),
        cache: "no-store",
      });
    } catch (error) {
      if (item.po === po) status(labels.queued, "queued");
      return false;
    }
    if (response.status === 401) {
      if (item.po === po) status(labels.sign_in_again, "queued");
      return false;
    }
    if (response.status >= 500 || response.status === 429) return false;
    const answer = await response.json().catch(() => ({}));
    saveQueue(queue().filter((kept) => kept.decision.id !== item.decision.id));
    if (item.po === po) {
      status(answer.message || answer.error || `HTTP ${response.status}`,
        response.ok ? "recorded" : "refused");
      const shown = document.getElementById("status").textContent;
      await load();
      status(shown, response.ok ? "recorded" : "refused");
    }
    return true;
  }

  function tick() {
    const node = document.getElementById("countdown");
    if (!node || !view) return;
    if (!view.deadline) {
      node.textContent = "";
      return;
    }
    const left = Math.floor((Date.parse(view.deadline) - Date.now()) / 1000);
    if (left <= 0) {
      node.textContent = view.labels.expired;
      node.classList.add("late");
      return;
    }
    const h = Math.floor(left / 3600);
    const m = String(Math.floor((left % 3600) / 60)).padStart(2, "0");
    const s = String(left % 60).padStart(2, "0");
    node.textContent = view.labels.expires_in.replace("{time}", `${h}:${m}:${s}`);
    node.classList.toggle("late", left < 3600);
  }

  tg.ready();
  tg.expand();
  window.addEventListener("online", flush);
  setInterval(flush, RETRY_MS);
  setInterval(tick, 1000);
  view = kept();
  if (view) {
    provisional = true;
    render(); // drawn from the device at once; load() replaces it
  }
  load().then(flush);
})();
