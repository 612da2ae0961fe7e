// sessionstore console: progressive enhancement only. Every page works
// without this file; it adds copy buttons and live refresh.
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

  // Live refresh: while the box is ticked and the tab is visible, the
  // page's main element is fetched again every data-refresh seconds and
  // swapped in (open details elements stay open). Hidden tabs pause.
  function live() {
    var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    var box = document.getElementById("live");
    if (!secs || !box) return;
    box.parentElement.hidden = false;
    var timer = null, busy = false;
    function schedule() {
      clearTimeout(timer);
      var on = box.checked && !document.hidden;
      document.body.dataset.live = on ? "on" : (document.hidden ? "hidden" : "paused");
      if (on) timer = setTimeout(refresh, secs * 1000);
    }
    function refresh() {
      if (busy) return;
      busy = true;
      fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var next = doc.getElementById("main"), cur = document.getElementById("main");
          if (!next || !cur) return;
          var open = {};
          cur.querySelectorAll("details[open]").forEach(function (d, i) { open[d.closest("[id]") ? d.closest("[id]").id + ":" + i : i] = true; });
          var checked = box.checked;
          cur.replaceWith(document.adoptNode(next));
          next.querySelectorAll("details").forEach(function (d, i) {
            var key = d.closest("[id]") ? d.closest("[id]").id + ":" + i : i;
            if (open[key]) d.open = true;
          });
          box = document.getElementById("live");
          if (box) { box.checked = checked; box.parentElement.hidden = false; box.addEventListener("change", schedule); }
          enhanceCopy(next);
        })
        .catch(function () { /* keep the page as it is; try again later */ })
        .then(function () { busy = false; schedule(); });
    }
    box.addEventListener("change", schedule);
    document.addEventListener("visibilitychange", schedule);
    schedule();
  }

  document.addEventListener("DOMContentLoaded", function () {
    enhanceCopy(document);
    live();
  });
})();
