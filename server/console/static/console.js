// ship console: the live part of the Chat page and the glue around htmx.
// Everything a chat user wrote is inserted with textContent, never as HTML.
(function () {
  "use strict";

  // flash shows a line at the top of the page: why something failed, or
  // (ok) what an action did, such as the answer to a question's button.
  function flash(msg, ok) {
    var el = document.getElementById("flash");
    if (!el) return;
    el.textContent = msg;
    el.hidden = !msg;
    el.classList.toggle("ok", !!ok);
  }

  function refresh() {
    var log = document.getElementById("log");
    if (log) {
      htmx.trigger(log, "refresh");
      return;
    }
    var main = document.getElementById("main");
    if (main) htmx.ajax("GET", location.pathname + location.search, { target: "#main", swap: "outerHTML" });
  }

  // A refused or failed action says why instead of doing nothing.
  document.addEventListener("htmx:responseError", function (ev) {
    var xhr = ev.detail.xhr;
    flash((xhr && xhr.responseText ? xhr.responseText.trim() : "") || "The request failed (" + (xhr ? xhr.status : "?") + ").");
    // A refused answer (already answered, expired) changed the question:
    // show it as it is now.
    var elt = ev.detail.elt;
    if (elt && elt.dataset && elt.dataset.after === "answered") refresh();
  });
  document.addEventListener("htmx:sendError", function () {
    flash("ship did not answer: is it still running?");
  });
  document.addEventListener("htmx:afterRequest", function (ev) {
    var elt = ev.detail.elt;
    if (!ev.detail.successful || !elt || !elt.dataset) return;
    var after = elt.dataset.after;
    if (!after) return;
    flash("");
    if (after === "answered") {
      var xhr = ev.detail.xhr;
      flash(xhr && xhr.responseText ? xhr.responseText.trim() : "Answered.", true);
    }
    if (after === "sent") {
      elt.reset();
      var box = elt.querySelector("textarea");
      if (box) box.focus();
    }
    refresh();
  });

  // Enter sends, Shift+Enter starts a new line.
  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing && t.tagName === "TEXTAREA" && t.form && t.form.id === "send") {
      ev.preventDefault();
      if (t.value.trim() !== "") htmx.trigger(t.form, "submit");
    }
  });

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  }
  function stick(was) {
    if (was) window.scrollTo(0, document.body.scrollHeight);
  }

  function follow(main) {
    var key = main.dataset.chat;
    var live = document.getElementById("live");
    var bubbles = {};
    var tools = {};

    function bubble(id) {
      var b = bubbles[id];
      if (b) return b;
      var li = document.createElement("div");
      li.className = "entry assistant live";
      var meta = document.createElement("div");
      meta.className = "meta";
      var who = document.createElement("span");
      who.className = "who";
      who.textContent = "ship";
      meta.appendChild(who);
      var text = document.createElement("div");
      text.className = "text";
      li.appendChild(meta);
      li.appendChild(text);
      live.appendChild(li);
      b = bubbles[id] = { el: li, text: text };
      return b;
    }
    function toolLine(e) {
      var d = tools[e.callId];
      if (!d) {
        d = tools[e.callId] = document.createElement("div");
        d.className = "live-tool";
        live.appendChild(d);
      }
      return d;
    }
    function clearLive() {
      live.textContent = "";
      bubbles = {};
      tools = {};
    }

    document.body.addEventListener("htmx:afterSwap", function (ev) {
      if (ev.detail.target && ev.detail.target.id === "log" && main.dataset.done === "1") {
        main.dataset.done = "";
        clearLive();
      }
    });

    var es = new EventSource("/console/events?chat=" + encodeURIComponent(key));
    es.onmessage = function (m) {
      var e;
      try { e = JSON.parse(m.data); } catch (err) { return; }
      var was = nearBottom();
      switch (e.type) {
        case "user_message_routed":
          refresh();
          break;
        case "content":
          if (e.index >= 0) bubble(e.messageId).text.textContent += e.content;
          else if (bubbles[e.messageId]) bubbles[e.messageId].el.classList.remove("live");
          break;
        case "tool_call":
          if (e.tool !== "chat_send") toolLine(e).textContent = "⚙ " + e.tool + " " + (e.input || "").slice(0, 200) + " …";
          break;
        case "tool_result":
        case "tool_error":
          if (tools[e.callId]) tools[e.callId].textContent = "⚙ " + e.tool + " " + (e.input || "").slice(0, 200) + " → " + (e.type === "tool_result" ? "ok" : "error");
          break;
        case "policy_rejected":
          toolLine(e).textContent = "⚙ " + e.tool + " refused: " + (e.reason || "");
          break;
        case "approval_required":
          toolLine(e).textContent = "⚙ " + e.tool + " waits for approval (code " + (e.approvalCode || "?") + ")";
          refresh();
          break;
        case "task_completed":
          main.dataset.done = "1";
          refresh();
          break;
        case "error":
          main.dataset.done = "1";
          flash("The run ended with an error: " + (e.errorMessage || e.errorCode || "unknown"));
          refresh();
          break;
      }
      stick(was);
    };
    window.addEventListener("pagehide", function () { es.close(); });
  }

  function start() {
    var main = document.getElementById("main");
    if (main && main.dataset.chat) {
      follow(main);
      window.scrollTo(0, document.body.scrollHeight);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
