// The memory page's shell: asks for the token once (kept in this tab's sessionStorage),
// turns "#/..." addresses into requests for server-rendered views carrying the token as a
// bearer header, and sends corrections the same way. No cookie, no third-party code.
"use strict";

const KEY = "vivy-token";
const view = document.getElementById("view");
const tokenForm = document.getElementById("token-form");
const tokenError = document.getElementById("token-error");
const notice = document.getElementById("notice");
const nav = document.getElementById("guild-nav");
const signOut = document.getElementById("sign-out");
// A correction's notice, carried over the change of address it asks for.
let carried = "";

function token() {
  return sessionStorage.getItem(KEY);
}

function askForToken(message) {
  sessionStorage.removeItem(KEY);
  view.replaceChildren();
  nav.hidden = true;
  signOut.hidden = true;
  tokenError.textContent = message || "";
  tokenForm.hidden = false;
  document.getElementById("token").focus();
}

function say(message) {
  notice.textContent = message;
  notice.hidden = !message;
}

async function request(path, options) {
  const response = await fetch(path, {
    ...options,
    headers: { ...(options && options.headers), Authorization: "Bearer " + token() },
    cache: "no-store",
    credentials: "omit",
    referrerPolicy: "no-referrer",
  });
  if (response.status === 401) {
    askForToken("That token was refused.");
    return null;
  }
  if (!response.ok) {
    let message = response.statusText;
    try {
      message = (await response.json()).error || message;
    } catch (ignored) {
      // not JSON: keep the status text
    }
    say(message);
    return null;
  }
  return response.text();
}

function currentRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  return hash === "/" ? "/guilds" : hash;
}

async function show() {
  if (!token()) {
    askForToken("");
    return;
  }
  tokenForm.hidden = true;
  signOut.hidden = false;
  const route = currentRoute();
  const guild = route.match(/^\/g\/(\d+)\//);
  nav.hidden = !guild;
  if (guild) {
    for (const link of nav.querySelectorAll("a")) {
      link.href = "#/g/" + guild[1] + "/" + link.dataset.view;
      link.classList.toggle("current", route.startsWith("/g/" + guild[1] + "/" + link.dataset.view));
    }
  }
  const html = await request("/page" + route);
  if (html === null) {
    view.replaceChildren(); // the notice says what failed; the previous view is not this one
    return;
  }
  view.innerHTML = html;
  const focus = view.querySelector("[autofocus]");
  if (focus) focus.focus();
}

tokenForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const field = document.getElementById("token");
  sessionStorage.setItem(KEY, field.value.trim());
  field.value = "";
  say("");
  show();
});

signOut.addEventListener("click", () => {
  say("");
  askForToken("");
});

view.addEventListener("submit", async (event) => {
  const form = event.target;
  event.preventDefault();
  if (form.dataset.search !== undefined) {
    const q = new FormData(form).get("q").trim();
    location.hash = form.dataset.search + (q ? "?q=" + encodeURIComponent(q) : "");
    return;
  }
  if (form.dataset.action !== undefined) {
    if (!confirm(form.dataset.confirm)) return;
    const body = new URLSearchParams(new FormData(form));
    const html = await request(form.dataset.action, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: body,
    });
    if (html !== null) {
      const holder = document.createElement("div");
      holder.innerHTML = html;
      const message = holder.textContent.trim();
      const after = form.dataset.after;
      if (after && location.hash !== after) {
        carried = message;
        location.hash = after; // the hashchange listener shows the view and the notice
      } else {
        say(message);
        await show();
      }
    }
  }
});

window.addEventListener("hashchange", () => {
  say(carried);
  carried = "";
  show();
});
show();
