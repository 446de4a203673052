// Copy buttons (the KEP report's Markdown, a refused upload's commands): shown only where they
// can work (JavaScript on; the CSP allows no inline script, so this file is loaded with defer).
// Each copies the text of the element its data-copy names (a textarea's value, a <pre>'s text)
// through the Clipboard API or, failing that, a selection, and says so in its data-copy-status
// element (#copy-status by default).
(function () {
  "use strict";
  function select(source) {
    if (typeof source.select === "function") { source.select(); return; }
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-copy-status") || "copy-status");
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = typeof source.value === "string" ? source.value : source.textContent;
      var done = function () { if (status) status.textContent = "Copied " + text.length + " characters."; };
      var fallback = function () {
        source.closest("details") && (source.closest("details").open = true);
        select(source);
        try { document.execCommand("copy"); done(); }
        catch (e) { if (status) status.textContent = "Select the text and copy it."; }
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, fallback);
      } else {
        fallback();
      }
    });
  });
})();
