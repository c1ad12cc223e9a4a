/* Image fields from the media library (the story form's image fields, the brand kit's logo).
   Picking a library image puts its id in the field at once (the live preview follows); a file
   picked in an upload input is sent alone to the library, then listed and picked. Without this
   script the form posts the file and the picked image, and the server does the same. */
(function () {
  "use strict";
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function fire(el, type) { el.dispatchEvent(new Event(type, { bubbles: true })); }

  function currentFor(id) { return document.querySelector('[data-current-for="' + id + '"]'); }

  /* a picked image: its id in the field, its thumbnail beside it */
  function choose(radio) {
    var field = document.getElementById(radio.getAttribute("data-pick-for") || "");
    if (!field || !radio.value) { return; }
    field.value = radio.value;
    field.removeAttribute("aria-invalid");
    var shown = currentFor(field.id), img = radio.parentNode.querySelector("img");
    if (shown && img) {
      var now = shown.querySelector("img");
      now.src = img.src;
      now.alt = "The library image chosen";
      shown.hidden = false;
    }
  }
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target && target.type === "radio" && target.hasAttribute("data-pick-for")) { choose(target); }
  });

  /* typing in the field leaves the library's images aside */
  $$("input.image-address").forEach(function (input) {
    input.addEventListener("input", function () {
      var keep = document.getElementById(input.id + "-pick-keep");
      if (keep) { keep.checked = true; }
      var shown = currentFor(input.id);
      if (shown) { shown.hidden = true; }
    });
  });

  /* a new asset in a pick list, checked (or the one already listed: the library keeps one copy) */
  function listAndPick(list, asset) {  /* asset: /app/media/upload.json's answer */
    var group = list.getAttribute("data-pick-list");
    var radios = $$('input[type="radio"]', list);
    var forId = radios.length ? radios[0].getAttribute("data-pick-for") : null;
    var radio = radios.filter(function (r) { return r.value === asset.id; })[0];
    if (!radio) {
      var li = document.createElement("li"), label = document.createElement("label");
      var img = document.createElement("img"), size = document.createElement("span");
      var name = document.createElement("span");
      radio = document.createElement("input");
      radio.type = "radio";
      radio.name = group;
      radio.value = asset.id;
      radio.id = group.replace(/\W/g, "-") + "-" + asset.id;
      if (forId) { radio.setAttribute("data-pick-for", forId); }
      label.htmlFor = radio.id;
      img.src = asset.thumbnail_url || "";
      img.alt = "";
      size.className = "small";
      size.textContent = asset.width + "×" + asset.height + " · new";
      name.className = "pick-name";
      name.textContent = asset.name || "Image uploaded now";  /* as the server names the file */
      label.appendChild(img);
      label.appendChild(name);
      label.appendChild(size);
      li.appendChild(radio);
      li.appendChild(label);
      var keep = list.querySelector(".pick-keep");
      list.insertBefore(li, keep ? keep.nextSibling : list.firstChild);
    }
    var count = document.querySelector('[data-pick-count="' + group + '"]');
    if (count) {
      var n = $$('input[type="radio"]', list).filter(function (r) { return r.value; }).length;
      count.textContent = "(" + n + (count.hasAttribute("data-more") ? "+" : "") + (n === 1 ? " image)" : " images)");
    }
    var details = list.closest("details");
    if (details) { details.open = true; }
    $$("[data-pick-empty]", list.parentNode).forEach(function (p) { p.hidden = true; });
    radio.checked = true;
    fire(radio, "input");
    fire(radio, "change");
  }

  $$("input[type=file][data-library-upload]").forEach(function (input) {
    var form = input.form, url = form && form.getAttribute("data-upload-url");
    var list = document.querySelector('[data-pick-list="' + input.getAttribute("data-library-upload") + '"]');
    var state = document.getElementById(input.id + "-state");
    var upload = window.reelfarmUpload;  /* console.js */
    if (!url || !list || !upload) { return; }
    function say(text, bad) {
      if (!state) { return; }
      state.textContent = text;
      state.classList.toggle("error", !!bad);
    }
    input.addEventListener("change", function () {
      var file = input.files && input.files[0], max = parseInt(input.getAttribute("data-max-bytes") || "0", 10);
      if (!file || (max && file.size > max)) { return; }  /* console.js names a file over its field's limit */
      say("Uploading " + file.name + "…");
      upload(url, file, {
        progress: function (percent) { say("Uploading " + file.name + "… " + percent + "%"); },
        done: function (status, body) {
          input.value = "";  /* sent: the form posts the picked asset, not the file again */
          if (status === 201 && body.kind === "image") {
            say(file.name + " is in the library and chosen.");
            listAndPick(list, body);
          } else if (status === 201) {
            say(file.name + " is a sound, not an image: it is in the library, but not chosen here.", true);
          } else {
            say(file.name + ": " + upload.refusal(status, body) + "; not stored.", true);
          }
        },
        failed: function () { say("The upload failed; check the connection and try again.", true); }
      });
    });
  });
}());
