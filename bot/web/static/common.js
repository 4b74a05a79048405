"use strict";
// What both Mini App pages (miniapp.js, catalogue.js) draw and count with, loaded before
// either: one element maker, the viewer, the API's headers, rupees, and the sales-tax
// rounding, so the rule the server rounds by lives in one place in the browser.
// window.Manzoori holds them.
window.Manzoori = Object.freeze({
  // An element with its attributes (text, testid and className by their properties; the
  // rest as attributes) and its children; a value is never parsed as HTML.
  el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (name === "text") node.textContent = value;
      else if (name === "testid") node.dataset.testid = value;
      else if (name === "className") node.className = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  },

  // The Telegram user the page was opened by, or 0. What a page keeps on the device is kept
  // per user: two Telegram accounts on one phone share the Mini App's storage, and a decision
  // queued by one must never be sent with the other's initData.
  viewer() {
    const data = window.Telegram.WebApp.initDataUnsafe;
    return (data && data.user && data.user.id) || 0;
  },

  // An API call's headers: Telegram's initData (Authorization: tma …), and `more`.
  headers(more = {}) {
    return { Authorization: `tma ${window.Telegram.WebApp.initData}`, ...more };
  },

  rupees(paisa) {
    const amount = (paisa / 100).toLocaleString("en-US", {
      minimumFractionDigits: 2, maximumFractionDigits: 2,
    });
    return `Rs ${amount}`;
  },

  // A line's amount with its sales tax, rounded half up to the paisa as the server does
  // (core.drafting.drafts.sales_tax); BigInt, since amount x rate can pass 2**53.
  withTax(amount, basisPoints) {
    if (!basisPoints) return amount;
    const tax = (BigInt(amount) * BigInt(basisPoints) + 5000n) / 10000n;
    return amount + Number(tax);
  },
});
