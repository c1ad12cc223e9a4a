/* The Media page: each picked or dropped file is sent alone, with its progress shown; the list
   is reloaded when all are done. Without this script the form posts every file at once. */
(function () {
  "use strict";
  var form = document.querySelector("form.media-upload");
  var sendFile = window.reelfarmUpload;  /* console.js */
  if (!form || !sendFile) { return; }
  var input = form.querySelector('input[type="file"]');
  var list = form.querySelector("[data-progress]");
  var drop = form.querySelector("[data-drop]");
  var url = form.getAttribute("data-upload-url");
  var maxBytes = parseInt(form.getAttribute("data-max-bytes"), 10) || 0;
  var old = form.querySelector(".error");

  function row(file) {
    var li = document.createElement("li");
    var name = document.createElement("span");
    name.className = "mono";
    name.textContent = file.name;
    var bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", "Upload of " + file.name);
    var note = document.createElement("span");
    note.className = "small";
    li.appendChild(name);
    li.appendChild(bar);
    li.appendChild(note);
    list.appendChild(li);
    return { li: li, bar: bar, note: note };
  }

  function send(file, shown) {
    return new Promise(function (resolve) {
      if (maxBytes && file.size > maxBytes) {
        shown.li.classList.add("error");
        shown.note.textContent = "too large: at most " + Math.round(maxBytes / 1048576) + " MB a file; not stored";
        resolve(false);
        return;
      }
      sendFile(url, file, {
        progress: function (percent) { shown.bar.value = percent; },
        done: function (status, body) {
          if (status === 201) {
            shown.bar.value = 100;
            shown.note.textContent = "uploaded";
            resolve(true);
          } else {
            shown.li.classList.add("error");
            shown.note.textContent = sendFile.refusal(status, body) + "; not stored";
            resolve(false);
          }
        },
        failed: function () {
          shown.li.classList.add("error");
          shown.note.textContent = "the upload failed; check the connection and try again";
          resolve(false);
        }
      });
    });
  }

  function upload(files) {
    if (!files.length) { return; }
    if (old) { old.remove(); old = null; }
    list.textContent = "";
    var shown = files.map(row);
    var i = 0;
    var all = true;
    function next() {
      if (i >= files.length) {
        input.value = "";
        if (all) { location.reload(); return; }
        var reload = document.createElement("a");
        reload.href = location.pathname + location.search;
        reload.textContent = "Show the library with what was uploaded";
        var li = document.createElement("li");
        li.appendChild(reload);
        list.appendChild(li);
        return;
      }
      var k = i++;
      send(files[k], shown[k]).then(function (ok) { all = all && ok; next(); });
    }
    next();
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    upload(Array.prototype.slice.call(input.files || []));
  });
  input.addEventListener("change", function () { upload(Array.prototype.slice.call(input.files || [])); });
  ["dragenter", "dragover"].forEach(function (type) {
    drop.addEventListener(type, function (event) { event.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    drop.addEventListener(type, function () { drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (event) {
    event.preventDefault();
    upload(Array.prototype.slice.call((event.dataTransfer && event.dataTransfer.files) || []));
  });
}());
