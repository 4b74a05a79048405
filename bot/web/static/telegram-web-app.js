"use strict";
// A local stand-in for https://telegram.org/js/telegram-web-app.js, served in tests and in
// `make demo` only (MANZOORI_WEBAPP_SCRIPT=local): window.Telegram.WebApp with the initData
// Telegram's client puts in the URL fragment (#tgWebAppData=…), kept for reloads in
// sessionStorage as Telegram's script keeps it; everything that drives the client is a no-op.
(() => {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const KEY = "tgWebAppData";
  let initData = fragment.get(KEY);
  if (initData) {
    sessionStorage.setItem(KEY, initData);
  } else {
    initData = sessionStorage.getItem(KEY) || "";
  }
  const initDataUnsafe = {};
  for (const [key, value] of new URLSearchParams(initData)) {
    try {
      initDataUnsafe[key] = key === "user" ? JSON.parse(value) : value;
    } catch (error) {
      initDataUnsafe[key] = value;
    }
  }
  const noop = () => {};
  function button() {
    const self = {
      text: "", isVisible: false, isActive: true,
      setText(text) { self.text = text; return self; },
      show() { self.isVisible = true; return self; },
      hide() { self.isVisible = false; return self; },
      enable() { self.isActive = true; return self; },
      disable() { self.isActive = false; return self; },
      onClick() { return self; },
      offClick() { return self; },
      setParams() { return self; },
    };
    return self;
  }
  window.Telegram = {
    WebApp: {
      initData,
      initDataUnsafe,
      version: fragment.get("tgWebAppVersion") || "8.0",
      platform: fragment.get("tgWebAppPlatform") || "unknown",
      colorScheme: "light",
      themeParams: {},
      isExpanded: true,
      ready: noop,
      expand: noop,
      close: noop,
      onEvent: noop,
      offEvent: noop,
      MainButton: button(),
      BackButton: button(),
    },
  };
})();
