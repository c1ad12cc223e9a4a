/* reelfarm console: a story form's sample values (console/forms.py, Control.unchanged). A field
   still holding its story's sample is marked "sample — change it", and the fields that do are
   listed above the Create button; both follow what is typed. Without this script the marks are the
   ones the page was drawn with. */
(function () {
  "use strict";
  var summary = document.querySelector("[data-sample-summary]");
  var form = summary && summary.closest("form");
  if (!form) { return; }
  var list = summary.querySelector("[data-sample-list]");

  function filled(box) {
    var texts = [];
    box.querySelectorAll("input[type=text], input:not([type]), textarea").forEach(function (el) {
      if (el.value.trim() !== "") { texts.push(el.value); }
    });
    return texts;
  }

  function holdsSample(box) {
    if (box.hasAttribute("data-sample-items")) {
      return JSON.stringify(filled(box)) === JSON.stringify(JSON.parse(box.getAttribute("data-sample-items")));
    }
    var field = box.querySelector("input, textarea");
    return !!field && field.value === box.getAttribute("data-sample");
  }

  /* a field's description names the mark while it shows, and not once it is hidden */
  function describe(box, id, on) {
    var field = box.querySelector("input, textarea");
    if (!field || box.hasAttribute("data-sample-items")) { return; }
    var ids = (field.getAttribute("aria-describedby") || "").split(" ").filter(function (x) { return x && x !== id; });
    if (on) { ids.unshift(id); }
    field.setAttribute("aria-describedby", ids.join(" "));
  }

  function update() {
    var held = [];
    form.querySelectorAll("[data-sample], [data-sample-items]").forEach(function (box) {
      var same = holdsSample(box), flag = box.querySelector("[data-sample-flag]");
      if (flag) { flag.hidden = !same; describe(box, flag.id, same); }
      if (same) {
        var label = box.querySelector("label, legend"), link = document.createElement("a");
        link.href = "#" + (box.id || (box.querySelector("input, textarea") || {}).id || "");
        link.textContent = label ? label.firstChild.textContent.trim() : box.getAttribute("data-field");
        held.push(link);
      }
    });
    list.textContent = "";
    held.forEach(function (link, i) {
      if (i) { list.appendChild(document.createTextNode(", ")); }
      list.appendChild(link);
    });
    summary.hidden = held.length === 0;
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
})();
