/* The Media page: each picked or dropped file is sent alone, with its progress shown (and, for a
   file over a megabyte such as a clip, the megabytes sent); the list is reloaded when all are
   done, or stays with one link to it when one was refused. Files picked while others are still
   being sent wait for them. Without this script the form posts every file at once.
   Deleting a file nothing uses asks in a dialog first; without the script (or for a file in use)
   the Delete link opens a page that asks, or says what uses it. */
(function () {
  "use strict";
  var dialog = document.querySelector("[data-delete-dialog]");
  if (dialog && typeof dialog.showModal === "function") {
    var dialogForm = dialog.querySelector("form");
    var dialogText = dialog.querySelector("[data-delete-text]");
    Array.prototype.forEach.call(document.querySelectorAll("a[data-delete]"), function (link) {
      link.addEventListener("click", function (event) {
        event.preventDefault();
        dialogForm.action = link.getAttribute("data-delete");
        dialogText.textContent = "“" + link.getAttribute("data-label") + "” will be deleted from the media library.";
        dialog.showModal();
        dialog.querySelector("[data-delete-cancel]").focus();
      });
    });
    dialog.querySelector("[data-delete-cancel]").addEventListener("click", function () { dialog.close(); });
  }

  var form = document.querySelector("form.media-upload");
  var sendFile = window.reelfarmUpload;  /* console.js */
  if (!form || !sendFile) { return; }
  var input = form.querySelector('input[type="file"]');
  var list = form.querySelector("[data-progress]");
  var drop = form.querySelector("[data-drop]");
  var url = form.getAttribute("data-upload-url");
  var maxBytes = parseInt(form.getAttribute("data-max-bytes"), 10) || 0;
  var old = form.querySelector(".error");
  var sending = false;
  var waiting = [];

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

  function mb(bytes) { return (bytes / 1048576).toFixed(1); }

  function send(file, shown) {
    return new Promise(function (resolve) {
      if (maxBytes && file.size > maxBytes) {
        shown.li.classList.add("error");
        shown.note.textContent = "too large: at most " + Math.round(maxBytes / 1048576) + " MB a file; not stored";
        resolve(false);
        return;
      }
      sendFile(url, file, {
        progress: function (percent) {
          shown.bar.value = percent;
          if (file.size >= 1048576 && percent < 100) {
            shown.note.textContent = mb(file.size * percent / 100) + " of " + mb(file.size) + " MB sent";
          } else if (percent >= 100) {
            shown.note.textContent = "checking…";
          }
        },
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

  function showLibraryLink() {
    var li = list.querySelector("li[data-reload]") || document.createElement("li");
    li.setAttribute("data-reload", "");
    li.textContent = "";
    var reload = document.createElement("a");
    reload.href = location.pathname + location.search;
    reload.textContent = "Show the library with what was uploaded";
    li.appendChild(reload);
    list.appendChild(li);  /* one link, after the last file */
  }

  function upload(files) {
    if (!files.length) { return; }
    if (sending) { waiting = waiting.concat(files); return; }
    sending = true;
    if (old) { old.remove(); old = null; }
    list.textContent = "";
    var shown = files.map(row);
    var i = 0;
    var all = true;
    function next() {
      if (i >= files.length && waiting.length) {
        var more = waiting;
        waiting = [];
        files = files.concat(more);
        shown = shown.concat(more.map(row));
      }
      if (i >= files.length) {
        input.value = "";
        sending = false;
        if (all) { location.reload(); return; }
        showLibraryLink();
        return;
      }
      var k = i++;
      send(files[k], shown[k]).then(function (ok) { all = all && ok; next(); });
    }
    next();
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!sending) { upload(Array.prototype.slice.call(input.files || [])); }  /* picked files are already on their way */
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
