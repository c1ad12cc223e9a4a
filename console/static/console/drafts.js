/* reelfarm console: Play preview (console/pages/drafts.py). The button posts its form asking for
   JSON and gets a draft of the unsaved values; the draft is followed until its first segment is
   stored, then its HLS stream plays through hls.js where Media Source Extensions are, else by the
   browser itself, with its sound. Without this script the button posts the form and the page shows
   the draft. */
(function () {
  "use strict";
  var box = document.getElementById("draft-box");
  var button = document.querySelector("[data-draft-play]");
  if (!box || !button) { return; }
  var video = document.getElementById("draft-video"), state = document.getElementById("draft-state");
  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";
  var FOLLOW_MS = 500, FOLLOW_MAX = 360, asked = 0, hls = null;  /* gives up waiting after 3 minutes */

  function say(text) { state.textContent = text; }

  function play(url) {
    if (hls) { hls.destroy(); hls = null; }
    video.removeAttribute("src");
    if (window.Hls && window.Hls.isSupported()) {
      hls = new window.Hls();
      hls.loadSource(url);
      hls.attachMedia(video);
    } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
      video.src = url;
    } else {
      say("This browser does not play the preview here.");
      return;
    }
    /* with its sound: the click on Play preview lets the page play it; where the browser still
       refuses, it plays muted and says so, and the player's own control turns the sound on */
    video.muted = false;
    video.play().then(function () {
      say("Playing the preview at 360p, with its sound, as it is drawn; nothing is saved.");
    }).catch(function () {
      video.muted = true;
      video.play().catch(function () {});
      say("Playing the preview at 360p as it is drawn, muted by the browser: turn the sound on in the player. Nothing is saved.");
    });
  }

  function follow(statusUrl, mine, tries) {
    tries = tries || 0;
    if (tries > FOLLOW_MAX) { say("The preview is taking long (the farm may be busy); play it again later."); return; }
    fetch(statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" }).then(function (r) {
      if (mine !== asked) { return null; }
      if (!r.ok) { say("The preview is gone; play it again."); return null; }
      return r.json().then(function (draft) {
        if (mine !== asked) { return; }
        if (draft.status === "failed") { say("The preview could not be drawn: " + (draft.error || "it failed")); return; }
        if (draft.playable) { play(draft.stream_url); return; }
        setTimeout(function () { follow(statusUrl, mine, tries + 1); }, FOLLOW_MS);
      });
    }).catch(function () { if (mine === asked) { setTimeout(function () { follow(statusUrl, mine, tries + 4); }, FOLLOW_MS * 4); } });
  }

  function start() {
    var mine = ++asked, form = button.form;
    var data = new FormData(form), files = [];
    data.delete("preview");
    data.forEach(function (value, name) { if (name.indexOf("upload.") === 0) { files.push(name); } });
    files.forEach(function (name) { data.delete(name); });  /* library.js sends each file on its own */
    box.hidden = false;
    say("Drawing the preview…");
    fetch(button.formAction, { method: "POST", body: data, credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRF-Token": csrf } }).then(function (r) {
      if (mine !== asked) { return null; }
      if (r.status === 401) { location.reload(); return null; }
      return r.json().then(function (body) {
        if (mine !== asked) { return; }
        if (r.status === 202) { follow(body.status_url, mine); return; }
        say(body.problems ? "The preview waits for the values the messages name."
          : "The preview could not start: " + ((body.error && body.error.message) || r.status));
      });
    }).catch(function () { if (mine === asked) { say("The preview could not start; try again."); } });
  }

  button.addEventListener("click", function (event) {
    event.preventDefault();
    start();
  });

  /* a page answered without this script's help (the button posted the form): follow its draft */
  document.addEventListener("DOMContentLoaded", function () {
    var statusUrl = box.getAttribute("data-draft-status");
    if (statusUrl) { follow(statusUrl, ++asked); }
  });
})();
