/* reelfarm console: progressive enhancement only. Every action also works as a plain form post.
   Live progress is polled (see console/pages/video.py for why not server-sent events). */
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";
  var POLL_MS = 1000;

  // The header's menu is a <details> that CSS shows open on wide screens (::details-content);
  // a browser without that selector gets it opened here instead, and Escape closes it on phones.
  var menu = document.querySelector("details.menu");
  if (menu) {
    var supported = window.CSS && CSS.supports && CSS.supports("selector(::details-content)");
    var wide = window.matchMedia ? window.matchMedia("(min-width: 641px)") : null;
    if (!supported && wide) {
      var openWhenWide = function () { if (wide.matches) { menu.open = true; } };
      openWhenWide();
      if (wide.addEventListener) { wide.addEventListener("change", openWhenWide); }
    }
    menu.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && menu.open && !(wide && wide.matches)) {
        menu.open = false;
        menu.querySelector("summary").focus();
      }
    });
  }

  // One file sent alone to the media library (library.js: the story form's image fields and the
  // brand kit's logo; media.js: the Media page), with the page's CSRF token: on.progress(percent)
  // while it goes, then on.done(status, the answer's JSON or {}), or on.failed() when no answer came.
  // Where the browser has no XMLHttpRequest upload, it is not offered and the forms post the files.
  if (window.FormData && window.XMLHttpRequest) {
    window.reelfarmUpload = function (url, file, on) {
      var data = new FormData();
      data.append("file", file, file.name);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      xhr.setRequestHeader("X-CSRF-Token", csrf);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.onprogress = function (event) {
        if (event.lengthComputable && on.progress) { on.progress(Math.round(100 * event.loaded / event.total)); }
      };
      xhr.onload = function () {
        var body = {};
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = {}; }
        on.done(xhr.status, body);
      };
      xhr.onerror = function () { on.failed(); };
      xhr.send(data);
    };
    // What a refused upload's answer says, for the line beside the file.
    window.reelfarmUpload.refusal = function (status, body) {
      return (body.error && body.error.message) || ("refused (" + status + ")");
    };
  }

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function getJSON(url) {
    return fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" }).then(function (r) {
      if (r.status === 401) { location.reload(); throw new Error("signed out"); }
      if (!r.ok) { throw new Error("HTTP " + r.status); }
      return r.json();
    });
  }
  function postForm(form, submitter) {
    var data = submitter ? new FormData(form, submitter) : new FormData(form);
    return fetch(form.action, { method: "POST", body: data, credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRF-Token": csrf } });
  }

  /* copy buttons for secrets shown once */
  $$("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var input = document.getElementById(button.getAttribute("data-copy"));
      var note = document.getElementById(button.getAttribute("data-copy") + "-copied");
      function done(ok) { if (note) { note.textContent = ok ? "Copied to the clipboard." : "Select the text and copy it."; } }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(input.value).then(function () { done(true); }, function () { input.select(); done(false); });
      } else {
        input.select();
        try { done(document.execCommand("copy")); } catch (e) { done(false); }
      }
    });
  });

  /* confirmations, one submit per form, filters that apply on change */
  $$("[data-confirm]").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
    });
  });
  $$("form[method=post]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (event.defaultPrevented) { return; }
      if (form.dataset.busy === "1") { event.preventDefault(); return; }
      form.dataset.busy = "1";
      setTimeout(function () { form.dataset.busy = ""; }, 4000);
    });
  });
  /* a file over its limit is named beside its field at once, and the form is not sent (a body
     too large for the server would be answered with a page of its own, losing what was typed) */
  $$("input[type=file][data-max-bytes]").forEach(function (input) {
    var max = parseInt(input.getAttribute("data-max-bytes"), 10), note = document.createElement("p");
    note.className = "error"; note.id = input.id + "-size-err"; note.hidden = true; note.setAttribute("role", "alert");
    input.insertAdjacentElement("afterend", note);
    function tooLarge() { return !!(input.files && input.files[0] && input.files[0].size > max); }
    input.addEventListener("change", function () {
      var big = tooLarge();
      note.hidden = !big;
      note.textContent = big ? input.getAttribute("data-too-large") : "";
      if (big) { input.setAttribute("aria-invalid", "true"); } else { input.removeAttribute("aria-invalid"); }
    });
    if (input.form) {
      input.form.addEventListener("submit", function (event) {
        if (tooLarge()) { event.preventDefault(); note.hidden = false; input.focus(); }
      }, true);
    }
  });

  /* on a phone the story form's preview stays at the top of the screen; this folds it away and back */
  $$("[data-preview-fold]").forEach(function (button) {
    var pane = document.getElementById(button.getAttribute("aria-controls"));
    button.addEventListener("click", function () {
      var fold = !pane.classList.contains("folded");
      pane.classList.toggle("folded", fold);
      button.setAttribute("aria-expanded", fold ? "false" : "true");
      button.firstChild.textContent = fold ? "Show" : "Hide";
    });
  });

  /* leaving a form with unsaved edits asks first (in the browser's own words) */
  var unsaved = false;
  $$("form[data-guard]").forEach(function (form) {
    form.addEventListener("input", function () { unsaved = true; });
    form.addEventListener("change", function () { unsaved = true; });
    form.addEventListener("submit", function (event) { if (!event.defaultPrevented) { unsaved = false; } });
  });
  window.addEventListener("beforeunload", function (event) {
    if (unsaved) { event.preventDefault(); event.returnValue = ""; }
  });

  $$("form[data-autosubmit] select").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });

  /* colour pickers beside hex inputs */
  $$("input[type=color][data-color-for]").forEach(function (picker) {
    var text = document.getElementById(picker.getAttribute("data-color-for"));
    if (!text) { return; }
    picker.addEventListener("input", function () { text.value = picker.value.toUpperCase(); });
    text.addEventListener("input", function () { if (/^#[0-9A-Fa-f]{6}$/.test(text.value)) { picker.value = text.value; } });
  });

  /* load `target` again, even when it differs from this address only in its anchor */
  function reloadAt(target) {
    var url = new URL(target || location.href, location.href);
    if (url.pathname + url.search === location.pathname + location.search) {
      history.replaceState(null, "", url.href);
      location.reload();
    } else {
      location.assign(url.href);
    }
  }

  /* jobs (brand extraction, generation): follow the stage; once the job has ended (even before
     the first look), load the page again so the server shows its outcome */
  function isLive(status) { return status === "queued" || status === "running"; }
  $$("[data-job-url]").forEach(function (box) {
    var bar = $("[data-job-progress]", box), stage = $("[data-job-stage]", box), badge = $("[data-job-badge] .status", box);
    if (!isLive(box.getAttribute("data-job-status") || "queued")) { return; }
    (function tick() {
      getJSON(box.getAttribute("data-job-url")).then(function (job) {
        if (bar) { bar.value = job.progress; bar.textContent = Math.round(job.progress * 100) + "%"; }
        if (stage) { stage.textContent = job.stage || job.status; }
        if (badge) { badge.textContent = job.status; badge.className = "status status-" + job.status; }
        if (isLive(job.status)) { setTimeout(tick, POLL_MS); }
        else { reloadAt(box.getAttribute("data-job-done")); }
      }).catch(function () { setTimeout(tick, POLL_MS * 3); });
    })();
  });

  /* video pages: gallery, live preview */
  /* colour swatches follow their hex inputs; an empty input shows the "brand colour" stripe */
  function paintSwatch(svg) {
    var input = document.getElementById(svg.getAttribute("data-swatch-for"));
    var fill = $("[data-swatch-fill]", svg), empty = $("[data-swatch-empty]", svg);
    var hex = input && /^#[0-9A-Fa-f]{6}$/.test(input.value.trim()) ? input.value.trim() : "";
    if (hex) { fill.setAttribute("fill", hex); }
    fill.toggleAttribute("hidden", !hex);  /* SVG elements have no `hidden` property */
    empty.toggleAttribute("hidden", !!hex);
  }
  $$("svg[data-swatch-for]").forEach(function (svg) {
    var input = document.getElementById(svg.getAttribute("data-swatch-for"));
    if (input) { input.addEventListener("input", function () { paintSwatch(svg); }); }
  });
  $$("input[type=color][data-color-for]").forEach(function (picker) {
    picker.addEventListener("input", function () {
      $$('svg[data-swatch-for="' + picker.getAttribute("data-color-for") + '"]').forEach(paintSwatch);
    });
  });

  /* the video page's one preview area (#preview-box): the saved version's still or poster, the
     fields form's unsaved values, or their animated draft, one at a time; `caption` says which */
  function showIn(which, caption) {
    var box = document.getElementById("preview-box");
    if (!box) { return; }
    var parts = { still: "still-frame", values: "preview-frame", draft: "draft-box" };
    Object.keys(parts).forEach(function (name) {
      var part = document.getElementById(parts[name]);
      if (!part) { return; }
      part.hidden = name !== which;
      var playing = name === "draft" && name !== which ? $("video", part) : null;
      if (playing) { playing.pause(); }
    });
    box.setAttribute("data-showing", which);
    var line = document.getElementById("preview-caption");
    if (line && caption) { line.textContent = caption; }
  }
  /* on a phone the preview area is above the form: brought into view when it changes for the form */
  function previewInView() {
    var box = document.getElementById("preview-box");
    if (!box) { return; }
    var r = box.getBoundingClientRect();
    if (r.bottom < 0 || r.top > window.innerHeight) { box.scrollIntoView({ block: "start", behavior: "smooth" }); }
  }

  /* the story form's live preview: about 400 ms after the last change, post the form and show the
     still it answers, or put every problem beside its field; the Preview button does it at once.
     On the video page its still shows in the one preview area, at the time its slider is at. */
  var storyForm = $("form[data-preview-url]"), drawValues = null, valuesEdited = false, previewAsked = 0, draftAt = 0;
  if (storyForm) {
    var previewFrame = document.getElementById("preview-frame"), previewState = document.getElementById("preview-state");
    var previewTime = document.getElementById("preview-time"), previewOut = document.getElementById("preview-time-out");
    var summary = document.getElementById("problem-summary"), previewTimer = null;
    var RATIOS = /\bratio-\S+/;
    function showProblems(problems) {
      var names = Object.keys(problems);
      $$("[data-error-for]", storyForm).forEach(function (line) {
        var message = problems[line.getAttribute("data-error-for")] || "";
        line.textContent = message;
        line.hidden = !message;
        var field = line.closest("[data-field]"), input = field && $("input, select, textarea", field);
        if (input && input.type !== "color") {
          if (message) { input.setAttribute("aria-invalid", "true"); } else { input.removeAttribute("aria-invalid"); }
        }
      });
      if (!summary) { return; }
      summary.hidden = names.length === 0;
      var list = $("ul", summary), head = $("strong", summary);
      head.textContent = names.length + (names.length === 1 ? " value needs a change" : " values need a change");
      list.innerHTML = "";
      names.forEach(function (name) {
        var line = $('[data-error-for="' + name + '"]', storyForm), item = document.createElement("li");
        var link = document.createElement("a");
        link.textContent = problems[name];
        link.href = "#" + (line ? line.id.replace(/-err$/, "") : "");
        item.appendChild(link);
        list.appendChild(item);
      });
    }
    function showPreview(dataUrl, seconds, mine) {
      var img = document.getElementById("preview-image");
      if (!img) { previewFrame.innerHTML = ""; img = document.createElement("img"); img.id = "preview-image"; previewFrame.appendChild(img); }
      img.src = dataUrl;
      img.alt = "Preview of the video at " + seconds + " s";
      img.classList.remove("stale");
      previewFrame.removeAttribute("aria-busy");
      previewState.textContent = "";
      /* a still asked for before Play preview was pressed does not take the draft's place */
      if (mine > draftAt) { showIn("values", "Your unsaved values at " + seconds + " s; nothing is saved."); }
    }
    function requestPreview() {
      var mine = ++previewAsked, seconds = Number(previewTime.value);
      var img = document.getElementById("preview-image");
      if (img) { img.classList.add("stale"); }
      previewFrame.setAttribute("aria-busy", "true");
      previewState.textContent = "Drawing the preview…";
      var data = new FormData(storyForm), files = [];
      data.delete("preview");
      data.forEach(function (value, name) { if (name.indexOf("upload.") === 0) { files.push(name); } });
      files.forEach(function (name) { data.delete(name); });  /* library.js sends each file on its own */
      fetch(storyForm.getAttribute("data-preview-url"), { method: "POST", body: data, credentials: "same-origin",
        headers: { Accept: "image/png, application/json", "X-CSRF-Token": csrf } }).then(function (r) {
        if (mine !== previewAsked) { return null; }
        if (r.status === 401) { location.reload(); return null; }
        if (r.ok) {
          return r.blob().then(function (blob) {
            var reader = new FileReader();
            reader.onload = function () { if (mine === previewAsked) { showProblems({}); showPreview(reader.result, seconds, mine); } };
            reader.readAsDataURL(blob);
          });
        }
        return r.json().then(function (body) {
          if (mine !== previewAsked) { return; }
          showProblems(body.problems || {});
          previewFrame.removeAttribute("aria-busy");
          previewState.textContent = body.problems ? "The preview waits for the values the messages name."
            : "The preview could not be drawn: " + ((body.error && body.error.message) || r.status);
        });
      }).catch(function () { if (mine === previewAsked) { previewState.textContent = "The preview could not be drawn; it will try again on the next change."; } });
    }
    function schedulePreview() { clearTimeout(previewTimer); previewTimer = setTimeout(requestPreview, 400); }
    drawValues = requestPreview;
    storyForm.addEventListener("input", function (event) {
      if (event.target === previewTime) { previewOut.textContent = Number(previewTime.value).toFixed(1); }
      else { valuesEdited = true; }
      schedulePreview();
    });
    storyForm.addEventListener("change", function (event) {
      var target = event.target;
      if (target.id === "v-format") {
        previewFrame.className = previewFrame.className.replace(RATIOS, "ratio-" + target.value.replace(":", "x"));
      }
      if (target.id === "v-duration") {
        var seconds = Number(target.value);
        previewTime.max = seconds > 0 ? String(seconds) : previewTime.getAttribute("data-default-max") || previewTime.max;
      }
      if (target.tagName === "SELECT" || target.type === "checkbox") { valuesEdited = true; schedulePreview(); }
    });
    storyForm.addEventListener("submit", function (event) {
      if (event.submitter && event.submitter.name === "preview") {
        event.preventDefault();
        storyForm.dataset.busy = "";
        clearTimeout(previewTimer);
        requestPreview();
      }
    });
  }

  /* the farm page: its tables fetched again every few seconds and swapped in place (no reload, so
     focus and scrolling stay; without script, a <noscript> meta refresh reloads it) */
  var farm = document.getElementById("farm");
  if (farm) {
    var every = (parseInt(farm.getAttribute("data-refresh-sec"), 10) || 5) * 1000;
    var refreshFarm = function () {
      fetch(location.pathname, { credentials: "same-origin" }).then(function (r) {
        return r.ok ? r.text() : Promise.reject(r.status);
      }).then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("farm");
        if (fresh) { farm.innerHTML = fresh.innerHTML; }
      }).catch(function () {}).then(function () { setTimeout(refreshFarm, every); });
    };
    setTimeout(refreshFarm, every);
  }

  /* the video page */
  var page = document.getElementById("video");
  if (!page) { return; }
  var statusUrl = page.getAttribute("data-status-url");
  var polling = false, streamsSeen = {};

  function refreshSections() {
    return fetch(location.pathname + location.search, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
      var fresh = new DOMParser().parseFromString(html, "text/html");
      ["render-list", "older-renders", "video-status", "copy-list", "versions", "ws-credits"].forEach(function (id) {
        var mine = document.getElementById(id), theirs = fresh.getElementById(id);
        if (mine && theirs) { mine.innerHTML = theirs.innerHTML; }
      });
      /* the player changes only when another render, or the same render's MP4 in place of its stream,
         is to be played: one playing is left alone, and the MP4 of a render watched as it rendered
         takes over where the stream was */
      var player = document.getElementById("player"), next = fresh.getElementById("player");
      if (player && next && player.getAttribute("data-render") !== next.getAttribute("data-render")) {
        var was = $("video", player), sameRender = (player.getAttribute("data-render") || "").split(":")[0] ===
          (next.getAttribute("data-render") || "").split(":")[0];
        var at = was ? was.currentTime : 0, playing = was && !was.paused;
        if (was && was._hls) { was._hls.destroy(); }
        player.setAttribute("data-render", next.getAttribute("data-render"));
        player.innerHTML = next.innerHTML;
        var now = $("video", player);
        if (now) {
          attachStream(now);
          if (sameRender && at > 0) {
            now.addEventListener("loadedmetadata", function () {
              now.currentTime = at;
              if (playing) { now.muted = was.muted; now.play().catch(function () {}); }
            }, { once: true });
          } else if (!sameRender) {  /* another render appeared in the player: it starts, muted */
            now.muted = true;
            now.autoplay = true;
            var start = function () { now.play().catch(function () {}); };
            now.addEventListener("canplay", start, { once: true });
            start();
          }
        }
      }
    });
  }

  /* a render watched as it renders: its HLS stream through hls.js wherever Media Source Extensions
     are (it honours the playlist's start at 0), else played by the browser itself (Safari on iOS) */
  function attachStream(video) {
    var url = video.getAttribute("data-stream");
    if (!url || video.getAttribute("data-attached")) { return; }
    if (window.Hls && window.Hls.isSupported()) {
      var hls = new window.Hls();
      hls.loadSource(url);
      hls.attachMedia(video);
      video._hls = hls;
    } else if (video.canPlayType("application/vnd.apple.mpegurl")) {
      video.src = url;
    } else {
      return;
    }
    video.setAttribute("data-attached", "");
  }
  document.addEventListener("DOMContentLoaded", function () {  /* after hls.js, a deferred script of the page */
    $$("video[data-stream]").forEach(attachStream);
  });

  /* where a waiting render stands (the Render resource's queue), as the page first showed it */
  function queueText(r) {
    var q = r.queue, text = "Waiting for the farm: " + q.frames_ahead.toLocaleString("en-US") + " frames ahead";
    if (q.estimated_start_at) { text += ", starts about " + new Date(q.estimated_start_at).toISOString().slice(11, 19) + " UTC"; }
    return text + (r.priority === "low" ? " (low priority)" : "") + ".";
  }

  /* a chunk waiting for the farm to hand it on (its node stopped), and progress that may be behind */
  function heldText(r) {
    var text = "";
    if (r.held_up) { text = r.held_up.message.charAt(0).toUpperCase() + r.held_up.message.slice(1) + "; the farm hands it to another node shortly."; }
    if (r.progress_stale) { text += (text ? " " : "") + "The farm's progress figures are out of reach: progress may be behind."; }
    return text;
  }

  function poll() {
    if (polling) { return; }
    polling = true;
    (function tick() {
      getJSON(statusUrl).then(function (state) {
        var changed = false, live = false;
        state.renders.forEach(function (r) {
          var item = document.getElementById("render-" + r.id);
          if (!item || item.getAttribute("data-status") !== r.status) { changed = true; }
          if (r.status === "queued" || r.status === "running") { live = true; }
          /* a render's stream appeared: the player may show it */
          if (r.stream_url && !streamsSeen[r.id]) { streamsSeen[r.id] = true; changed = true; }
          if (item) {
            var bar = $("[data-render-progress]", item), pct = $("[data-render-percent]", item);
            var value = Math.round(r.progress * 100);
            if (bar) { bar.value = r.progress; bar.textContent = value + "%"; }
            if (pct) { pct.textContent = value + "%"; }
            var waiting = $("[data-render-queue]", item);
            if (waiting) { waiting.hidden = !r.queue; waiting.textContent = r.queue ? queueText(r) : ""; }
            var held = $("[data-render-held]", item);
            if (held) { held.hidden = !(r.held_up || r.progress_stale); held.textContent = heldText(r); }
          }
        });
        state.copies.forEach(function (c) {
          var shown = $('[data-copy-status="' + c.id + '"] .status', page);
          if (!shown || shown.textContent !== c.status) { changed = true; }
          if (c.status === "draft" || c.status === "generating") { live = true; }
        });
        if (state.status === "generating") { live = true; }
        if (page.getAttribute("data-last") && page.getAttribute("data-last") !== state.status) { changed = true; }
        page.setAttribute("data-last", state.status);
        var next = changed ? refreshSections() : Promise.resolve();
        next.then(function () {
          if (live) { setTimeout(tick, POLL_MS); } else { polling = false; }
        });
      }).catch(function () { setTimeout(tick, POLL_MS * 3); });
    })();
  }

  /* render buttons, also those that come with a refreshed list: start the render, then show it
     and the credits it took without loading the page again */
  page.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-render-form]") || event.defaultPrevented) { return; }
    event.preventDefault();
    postForm(form, event.submitter).then(function (r) {
      if (r.status === 202) { return refreshSections().then(poll); }
      return r.json().then(function (body) { window.alert(body.error ? body.error.message : "The render could not start."); });
    });
  });

  /* still preview: scrub the slider, a still is drawn for where it stops (or, once the fields
     form has unsaved values, those values); the Versions table's Show still draws any version at
     the slider's time; a version with no poster yet has one drawn as the page opens */
  var stillForm = $("[data-still-form]"), slider = document.getElementById("still-time"), out = document.getElementById("still-time-out");
  var frame = document.getElementById("still-frame"), timer = null, asked = 0;
  var current = frame ? frame.getAttribute("data-version") : "";
  function showWait(text) {
    showIn("still");
    var img = document.getElementById("still-image");
    if (img) { img.classList.add("stale"); frame.setAttribute("aria-busy", "true"); return; }
    var wait = document.getElementById("still-wait");
    if (wait) { wait.textContent = text; }
  }
  function showStill(job, how) {
    var still = job.result.stills[0], seconds = Number(still.time);
    var img = document.getElementById("still-image");
    if (!img) { frame.innerHTML = ""; img = document.createElement("img"); img.id = "still-image"; frame.appendChild(img); }
    var version = how.version || current;
    img.alt = how.poster ? "The poster of version " + version + "; pick a time to preview a still"
      : version !== current ? "Still of version " + version + " at " + seconds + " s" : "Still of the video at " + seconds + " s";
    img.src = still.url;
    img.classList.remove("stale");
    frame.removeAttribute("aria-busy");
    showIn("still", how.poster ? "Version " + version + "'s poster; pick a time to see another moment."
      : "Version " + version + " at " + seconds + " s.");
    var save = document.getElementById("still-download");
    if (save && still.download_url) { save.href = still.download_url; save.hidden = false; }
  }
  function requestStill(form, how) {
    var mine = ++asked, data = new FormData(form);
    data.set("time", String(how.time));
    showWait(how.poster ? "Drawing the poster of version " + current + "…" : "Drawing the still…");
    fetch(form.action, { method: "POST", body: data, credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRF-Token": csrf } }).then(function (r) {
      if (r.status === 401) { location.reload(); throw new Error("signed out"); }
      return r.json().then(function (body) { if (!r.ok) { throw new Error((body.error && body.error.message) || r.status); } return body; });
    }).then(function (job) {
      (function follow() {
        getJSON(form.getAttribute("data-job-base").replace("JOB", job.id)).then(function (state) {
          if (mine !== asked) { return; }
          if (state.status === "succeeded") { showStill(state, how); }
          else if (state.status === "queued" || state.status === "running") { setTimeout(follow, 400); }
          else { showWait("The still could not be drawn: " + (state.error || state.status)); }
        });
      })();
    }).catch(function (e) { if (mine === asked) { showWait("The still could not be drawn: " + e.message); } });
  }
  if (stillForm && slider) {
    var previewTime = document.getElementById("preview-time");
    var atSlider = function () {
      if (valuesEdited && drawValues) { drawValues(); } else { requestStill(stillForm, { time: slider.value }); }
    };
    slider.addEventListener("input", function () {
      out.textContent = Number(slider.value).toFixed(1);
      if (previewTime) { previewTime.value = slider.value; }
      $$("[data-still-time]").forEach(function (input) { input.value = slider.value; });
      clearTimeout(timer);
      timer = setTimeout(atSlider, 350);
    });
    stillForm.addEventListener("submit", function (event) { event.preventDefault(); clearTimeout(timer); atSlider(); });
    page.addEventListener("submit", function (event) {  /* also the forms of a refreshed table */
      var form = event.target;
      if (!form.matches || !form.matches("form[data-version-still]")) { return; }
      event.preventDefault();
      form.dataset.busy = "";
      requestStill(form, { time: slider.value, version: form.getAttribute("data-version-still") });
      previewInView();
    });
    var poster = frame && frame.getAttribute("data-ask-poster");
    if (poster) { requestStill(stillForm, { time: poster, poster: true }); }
  }
  var playDraft = $("[data-draft-play]");
  if (playDraft) {
    playDraft.addEventListener("click", function () {
      draftAt = previewAsked;
      /* nor does a version still asked before it (the poster drawn as the page opens, which on a
         busy farm came back after the draft had started and paused it) */
      asked += 1;
      showIn("draft", "An animated preview of your unsaved values at 360p; nothing is saved.");
      previewInView();
    });
  }

  /* a render's Watch (while it renders) and Play links: the player switches to it in place */
  page.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-watch-render], a[data-play-render]");
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey) { return; }
    event.preventDefault();
    var url = new URL(link.href, location.href);
    history.replaceState(null, "", url.pathname + url.search);
    refreshSections().then(function () {
      var player = document.getElementById("player");
      if (player) { player.scrollIntoView({ block: "nearest" }); }
    });
  });

  /* the fields form carries the version it was opened at; when the person comes back to it (the
     tab shown again, the form touched) and another save has made a newer version, say so before
     they save (the save then shows both sets of changes; nothing is saved over the other unseen) */
  var edited = $("form[data-opened-version]", page), movedOn = document.getElementById("fields-moved-on");
  if (edited && movedOn) {
    var lastCheck = 0;
    var checkVersion = function () {
      if (Date.now() - lastCheck < 10000) { return; }
      lastCheck = Date.now();
      getJSON(statusUrl).then(function (state) {
        if (state.version && String(state.version) !== edited.getAttribute("data-opened-version")) {
          movedOn.textContent = movedOn.getAttribute("data-moved-on").replace("VERSION", state.version);
          movedOn.hidden = false;
        }
      }).catch(function () {});
    };
    document.addEventListener("visibilitychange", function () { if (!document.hidden) { checkVersion(); } });
    edited.addEventListener("focusin", checkVersion);
  }

  if ($("[data-status=queued], [data-status=running], [data-status=draft], [data-status=generating]", page) ||
      document.getElementById("job")) { poll(); }
})();
