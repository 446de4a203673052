// The report page's copy button: shown only where it can work (JavaScript on); it copies the
// Markdown from the page's textarea, through the Clipboard API or, failing that, a selection.
(function () {
  "use strict";
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById("copy-status");
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = source.value;
      var done = function () { if (status) status.textContent = "Copied " + text.length + " characters."; };
      var fallback = function () {
        source.closest("details") && (source.closest("details").open = true);
        source.select();
        try { document.execCommand("copy"); done(); }
        catch (e) { if (status) status.textContent = "Select the Markdown below and copy it."; }
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, fallback);
      } else {
        fallback();
      }
    });
  });
})();
