// Forms that refuse readably (issue 39): a file over its field's limit (data-max-bytes) is
// refused inside the form before anything is sent, so every value typed stays; and the first
// field a refusal names gets the focus (the server marks it aria-invalid and autofocus too).
(function () {
  "use strict";
  function human(bytes) {
    return bytes >= 1048576 ? Math.round(bytes / 1048576) + " MB" : Math.round(bytes / 1024) + " KB";
  }
  document.querySelectorAll("form[data-refusals]").forEach(function (form) {
    var box = form.querySelector("[data-form-error]");
    form.addEventListener("submit", function (event) {
      var inputs = form.querySelectorAll("input[type=file][data-max-bytes]");
      for (var i = 0; i < inputs.length; i++) {
        var input = inputs[i];
        var limit = parseInt(input.getAttribute("data-max-bytes"), 10);
        var file = input.files && input.files[0];
        if (file && limit && file.size > limit) {
          event.preventDefault();
          if (box) {
            box.hidden = false;
            box.textContent = (input.getAttribute("data-label") || input.name) + ": the file is " +
              human(file.size) + ", larger than the " + human(limit) + " allowed. Nothing was sent; " +
              "your other values are kept. Choose a smaller file.";
          }
          input.setAttribute("aria-invalid", "true");
          var described = (input.getAttribute("aria-describedby") || "").split(" ");
          if (box && described.indexOf(box.id) < 0) {
            input.setAttribute("aria-describedby", (box.id + " " + described.join(" ")).trim());
          }
          input.focus();
          return;
        }
      }
    });
  });
  var first = document.querySelector("[aria-invalid=true]");
  if (first && document.activeElement !== first) first.focus();
})();
