// sessionstore console: progressive enhancement only. Every page works
// without this file; it adds copy buttons and live updates.
(function () {
  "use strict";

  function enhanceCopy(root) {
    root.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
      if (!navigator.clipboard) return;
      b.hidden = false;
      b.addEventListener("click", function () {
        var el = document.getElementById(b.getAttribute("data-copy"));
        if (!el) return;
        navigator.clipboard.writeText(el.textContent).then(function () {
          b.textContent = "copied";
          setTimeout(function () { b.textContent = "copy"; }, 1500);
        }, function () { b.textContent = "copy failed"; });
      });
    });
  }

  // localTimes shows every time of root in the reader's local time zone;
  // the page writes it in UTC, which stays on hover (the title).
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      if (t.dataset.local) return;
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d.getTime())) return;
      t.textContent = d.toLocaleString();
      t.dataset.local = "1";
    });
  }

  // fetchMain fetches the page again and swaps its main element in (open
  // details elements stay open).
  function fetchMain(done) {
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("main"), cur = document.getElementById("main");
        if (!next || !cur) return;
        var open = {};
        cur.querySelectorAll("details[open]").forEach(function (d, i) { open[d.closest("[id]") ? d.closest("[id]").id + ":" + i : i] = true; });
        cur.replaceWith(document.adoptNode(next));
        next.querySelectorAll("details").forEach(function (d, i) {
          var key = d.closest("[id]") ? d.closest("[id]").id + ":" + i : i;
          if (open[key]) d.open = true;
        });
        enhanceCopy(next);
        localTimes(next);
      })
      .catch(function () { /* keep the page as it is; try again later */ })
      .then(function () { done(); });
  }

  // Live mode. A page that follows the store's change feed
  // (data-live-url) listens to its server-sent events and appends the rows
  // they carry; the last event id is kept, so that a reconnect (the
  // browser's own, or ours after a pause or a hidden tab) continues
  // exactly after it. Other live pages (data-refresh only) fetch their
  // main element again every data-refresh seconds. The pause button stops
  // either; a hidden tab closes the stream and it resumes when visible.
  // document.body.dataset.live says "on", "paused", "hidden" or "ended".
  function live() {
    var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    var url = document.body.getAttribute("data-live-url");
    if (!secs || !document.getElementById("live")) return;
    var paused = false, ended = "", es = null, last = "", timer = null, busy = false;

    function paint() {
      var on = !paused && !ended && !document.hidden;
      var st = ended ? "ended" : paused ? "paused" : document.hidden ? "hidden" : "on";
      document.body.dataset.live = st;
      var b = document.getElementById("live"), label = document.getElementById("live-state");
      if (b) {
        b.parentElement.hidden = false;
        b.textContent = paused ? "resume" : "pause";
        b.setAttribute("aria-pressed", paused ? "true" : "false");
        b.disabled = !!ended;
      }
      if (label) label.textContent = ended ? ended : on ? "live" : st;
    }

    function append(list, html) {
      if (!list) return;
      var empty = list.querySelector(":scope > li.empty");
      if (empty) empty.remove();
      list.insertAdjacentHTML("beforeend", html);
      enhanceCopy(list);
      localTimes(list);
    }

    function finish(why) {
      close();
      ended = why;
      paint();
    }

    function open() {
      if (es || paused || ended || document.hidden) return;
      var u = url;
      if (last) u += (u.indexOf("?") < 0 ? "?" : "&") + "from=" + encodeURIComponent(last);
      es = new EventSource(u);
      function keep(e) { if (e.lastEventId) last = e.lastEventId; }
      es.addEventListener("messages", function (e) { keep(e); append(document.getElementById("message-list"), e.data); });
      es.addEventListener("events", function (e) { keep(e); append(document.getElementById("events"), e.data); });
      es.addEventListener("governed", function (e) {
        keep(e);
        if (busy) return;
        busy = true;
        fetchMain(function () { busy = false; paint(); });
      });
      es.addEventListener("gone", function () { finish("deleted"); });
      es.addEventListener("end", function () { finish("ended"); });
      es.addEventListener("error", function (e) {
        if (e.data !== undefined) { finish("failed"); return; } // the server's error event
        if (es && es.readyState === EventSource.CLOSED) finish("disconnected");
      });
      es.addEventListener("reset", function () {
        // The stream was rewritten: what the page shows is stale.
        close();
        location.reload();
      });
    }

    function close() {
      if (es) { es.close(); es = null; }
    }

    function schedule() {
      clearTimeout(timer);
      if (!paused && !document.hidden) timer = setTimeout(poll, secs * 1000);
    }
    function poll() {
      if (busy) return;
      busy = true;
      fetchMain(function () { busy = false; paint(); schedule(); });
    }

    function update() {
      if (url) {
        if (paused || document.hidden) close(); else open();
      } else {
        schedule();
      }
      paint();
    }

    document.addEventListener("click", function (e) {
      if (!e.target || e.target.id !== "live") return;
      paused = !paused;
      update();
    });
    document.addEventListener("visibilitychange", update);
    update();
  }

  document.addEventListener("DOMContentLoaded", function () {
    enhanceCopy(document);
    localTimes(document);
    live();
  });
})();
