// Progressive enhancement: an element with data-poll="<url>" is replaced by a fresh copy of
// itself from that URL every second, until the server sends one without data-poll (the run
// ended). Without JavaScript the page refreshes itself through a <noscript> meta tag.
(function () {
  "use strict";
  var INTERVAL_MS = 1000;

  function poll(el) {
    var url = el.getAttribute("data-poll");
    if (!url) return;
    window.setTimeout(function () {
      fetch(url, { headers: { "X-Requested-With": "fetch" }, cache: "no-store" })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
        .then(function (html) {
          var holder = document.createElement("div");
          holder.innerHTML = html.trim();
          var fresh = holder.firstElementChild;
          if (!fresh) { poll(el); return; }
          // Keep open <details> open across refreshes.
          var open = {};
          el.querySelectorAll("tr[data-key] details[open]").forEach(function (d) {
            open[d.closest("tr").getAttribute("data-key")] = true;
          });
          fresh.querySelectorAll("tr[data-key] details").forEach(function (d) {
            if (open[d.closest("tr").getAttribute("data-key")]) d.setAttribute("open", "");
          });
          el.replaceWith(fresh);
          document.dispatchEvent(new CustomEvent("run:update"));
          if (fresh.getAttribute("data-poll")) poll(fresh);
          else document.dispatchEvent(new CustomEvent("run:finished"));
        })
        .catch(function () { poll(el); });
    }, INTERVAL_MS);
  }

  // A "queued" notice goes once the run has started (or ended).
  function dropQueued() {
    var progress = document.getElementById("run-progress");
    if (!progress || progress.getAttribute("data-state") === "queued") return;
    document.querySelectorAll(".messages li.run-queued").forEach(function (li) { li.remove(); });
  }
  document.addEventListener("run:update", dropQueued);
  dropQueued();

  document.querySelectorAll("[data-poll]").forEach(poll);
})();
